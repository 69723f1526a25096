"""A container engine that is not running (issue 57): every command that needs it says so and how to start it,
never that an image is missing."""

import pytest
from conftest import simflow
from fakes import fake_build

STOPPED = ('#!/bin/sh\necho "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. '
           'Is the docker daemon running?" >&2\nexit 1\n')


@pytest.fixture
def stopped_engine(tmp_path):
    """A docker client whose engine is not running (its real words), first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(STOPPED)
    (bin_dir / "docker").chmod(0o755)
    import os

    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SIMFLOW_ENGINE": "docker",
            "GPGPUSIM_ROOT": str(fake_build(tmp_path / "sim"))}


@pytest.mark.parametrize("args", [
    ["image", "build", "--tag", "simflow-test"],
    ["sim", "global", "--problem", "batch3x3", "--docker", "simflow-gpgpusim"],
])
def test_a_stopped_engine_is_said_with_how_to_start_it(tmp_path, stopped_engine, args):
    out = simflow(*args, "--results", str(tmp_path / "results"), env=stopped_engine) if args[0] == "sim" else \
        simflow(*args, env=stopped_engine)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "the docker engine is not running (Cannot connect to the Docker daemon" in out.stderr, out.stderr
    assert "dockerd" in out.stderr and "systemctl start docker" in out.stderr
    assert "base image" not in out.stderr and "no image" not in out.stderr and "debootstrap" not in out.stderr
