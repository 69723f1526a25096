"""Import hygiene, the wheel's contents, and lint."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_simflow_pulls_in_no_gpu_library():
    code = ("import sys, simflow, simflow.cli, simflow.backends, simflow.doctor; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('pycuda', 'torch', 'cupy')]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_templates_found_from_a_source_checkout():
    from simflow.resources import configs_dir, templates_dir

    assert (templates_dir() / "global.cu.j2").is_file()
    assert configs_dir().is_dir()


def test_wheel_carries_templates_and_configs(tmp_path):
    # no build isolation: the build backend (hatchling, in the test extra) is used as installed, no package index
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("simflow-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for template in (ROOT / "cuda_templates").glob("*.j2"):
        assert f"simflow/cuda_templates/{template.name}" in names
    for config in (ROOT / "gpgpusim_configs").iterdir():
        assert f"simflow/gpgpusim_configs/{config.name}" in names
    assert "simflow/docker/Dockerfile" in names  # what `simflow image build` stages
    assert any(n.endswith("entry_points.txt") for n in names)


@pytest.mark.skipif(shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
                    reason="ruff not installed (pip install -e '.[test]')")
def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    proc = subprocess.run([ruff, "check", str(ROOT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout
