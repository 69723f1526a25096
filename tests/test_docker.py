"""The image's build context, made without an engine: simflow stages the user's simulator build (its
runtime files, copied) and itself beside docker/Dockerfile, which fetches, builds and patches nothing.
(The image is built and used for real in test_docker_image, marked docker.)"""

import re
import subprocess
import sys

from fakes import fake_build

from simflow import resources
from simflow.sim import image
from simflow.sim.simulator import simulator_at

DOCKERFILE = resources.docker_dir() / "Dockerfile"


def test_the_dockerfile_only_copies_the_staged_build_and_fetches_no_simulator():
    text = DOCKERFILE.read_text()
    assert not re.search(r"git (clone|fetch)|make -j|\bmake\b|install-gpgpusim|patch|gpgpu-sim_distribution", text)
    copies = re.findall(r"^COPY (\S+) (\S+)$", text, flags=re.M)
    assert copies == [("gpgpu-sim", "/opt/gpgpu-sim"), ("simflow", "/opt/simflow/simflow")]
    # the default command answers at once; probing (minutes) is asked for by name (issue 57)
    assert text.rstrip().endswith('CMD ["simflow", "doctor", "--no-probe"]')
    assert "RUN simflow doctor --no-probe --require gpgpusim" in text  # the last RUN: the build must run there


def test_the_context_holds_simflow_and_the_builds_runtime_files_only(tmp_path):
    root = fake_build(tmp_path / "sim")
    (root / "src").mkdir()
    (root / "src" / "gpu-sim.cc").write_text("// source: never staged\n")
    (root / "build").mkdir()
    (root / "build" / "x.o").write_bytes(b"\0")
    context = tmp_path / "context"
    context.mkdir()
    image.stage(simulator_at(root), context)
    staged = sorted(str(p.relative_to(context / "gpgpu-sim")) for p in (context / "gpgpu-sim").rglob("*")
                    if not p.is_dir())
    assert staged == ["configs/tested-cfgs/SM7_QV100/config_volta_islip.icnt",
                      "configs/tested-cfgs/SM7_QV100/gpgpusim.config",
                      "lib/gcc-12.2.0/cuda-11080/release/libcudart.so",
                      "lib/gcc-12.2.0/cuda-11080/release/libcudart.so.11.0",
                      "setup_environment", "version"]
    assert (context / "gpgpu-sim/lib/gcc-12.2.0/cuda-11080/release/libcudart.so.11.0").is_symlink()
    assert (context / "Dockerfile").read_text() == DOCKERFILE.read_text()
    package = context / "simflow"
    for name in ("__main__.py", "cli.py", "cuda_templates/standalone.cu.j2", "gpgpusim_configs/SM7_QV100.toml",
                 "docker/Dockerfile"):
        assert (package / name).is_file(), name
    assert not list(package.rglob("__pycache__"))
    # the staged package runs on its own, as the image runs it (PYTHONPATH, python -m simflow)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(context)}
    where = subprocess.run([sys.executable, "-c", "import simflow; print(simflow.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, env=env)
    assert where.stdout.strip() == str(package / "__init__.py"), where.stderr
    proc = subprocess.run([sys.executable, "-m", "simflow", "variants"], cwd=tmp_path, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0 and "wmma" in proc.stdout, proc.stderr


def test_podman_without_catatonit_is_refused_with_how_to_get_it(tmp_path, monkeypatch):
    from simflow.errors import UserError
    from simflow.sim import container

    fake = tmp_path / "bin" / "podman"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nif [ "$1" = version ]; then echo 4.3.1; exit 0; fi\necho sha256:1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(container, "CATATONIT", (str(tmp_path / "no-catatonit"),))
    assert "apt-get install catatonit" in container.init_problem("podman") and container.init_problem("docker") == ""
    try:
        container.check_image("simflow-gpgpusim", "podman")
    except UserError as exc:
        assert "needs catatonit" in str(exc)
    else:
        raise AssertionError("podman without catatonit was not refused")
    from simflow.backends.gpgpusim import engine_findings

    (podman,) = engine_findings()
    assert not podman.found and "catatonit" in podman.detail
    (tmp_path / "catatonit").write_text("")
    monkeypatch.setattr(container, "CATATONIT", (str(tmp_path / "catatonit"),))
    container.check_image("simflow-gpgpusim", "podman")  # the image is there: no error
    assert engine_findings()[0].found


def test_engine_options_reach_the_run_command(tmp_path, monkeypatch):
    from simflow.sim import container

    monkeypatch.setenv("SIMFLOW_ENGINE_OPTIONS", "--ulimit nofile=1024:1024 --memory '8g'")
    cmd = container.run_command("podman", "img", tmp_path, "n", tmp_path)
    assert cmd[cmd.index("img") - 4:cmd.index("img")] == ["--ulimit", "nofile=1024:1024", "--memory", "8g"]
