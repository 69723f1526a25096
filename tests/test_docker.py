"""The Docker image's parts that run without Docker: its scripts, and the Dockerfile's references.
(The image itself is built and run only where a Docker engine exists; the real entry-script run is
in test_gpgpusim_backend, marked gpgpusim.)"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"


def test_scripts_parse():
    for script in ("entrypoint.sh", "install-gpgpusim.sh"):
        assert subprocess.run(["bash", "-n", str(DOCKER / script)]).returncode == 0


def test_dockerfile_refers_to_files_that_exist_and_pins_the_simulator():
    text = (DOCKER / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (.+)$", text, flags=re.M):
        *sources, _target = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source
    commit = re.search(r"^ARG GPGPUSIM_COMMIT=([0-9a-f]+)$", text, flags=re.M)[1]
    assert len(commit) == 40
    assert "ARG GPGPUSIM_REPO=https://github.com/accel-sim/gpgpu-sim_distribution.git" in text
    assert 'ENTRYPOINT ["simflow-entrypoint"]' in text and "ENV GPGPUSIM_ROOT=/opt/gpgpu-sim" in text
    assert "install-gpgpusim.sh \"$GPGPUSIM_REPO\" \"$GPGPUSIM_COMMIT\" /opt/gpgpu-sim" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".git" in ignored and ".venv" in ignored and "simflow-results" in ignored


def test_install_script_usage():
    proc = subprocess.run(["bash", str(DOCKER / "install-gpgpusim.sh")], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage:" in proc.stderr


def run_entry(tmp_path, setup_body, *command, root=True):
    sim = tmp_path / "sim"
    sim.mkdir(exist_ok=True)
    (sim / "setup_environment").write_text(setup_body)
    env = {"PATH": "/usr/bin:/bin", "CUDA_INSTALL_PATH": str(tmp_path)}
    if root:
        env["GPGPUSIM_ROOT"] = str(sim)
    return subprocess.run([str(DOCKER / "entrypoint.sh"), *command], capture_output=True, text=True, env=env)


def test_entry_point_runs_the_command_after_the_setup(tmp_path):
    proc = run_entry(tmp_path, "export GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN=1 MARK=$1\n", "sh", "-c", 'echo "$MARK"')
    assert proc.returncode == 0 and proc.stdout == "release\n"


def test_entry_point_failures_are_clear(tmp_path):
    proc = run_entry(tmp_path, "echo 'ERROR ** nvcc not found'; return 1\n", "true")
    assert proc.returncode == 1 and "setup_environment failed" in proc.stderr and "nvcc not found" in proc.stderr
    proc = run_entry(tmp_path, "", "true", root=False)
    assert proc.returncode != 0 and "set GPGPUSIM_ROOT to the GPGPU-Sim folder" in proc.stderr
