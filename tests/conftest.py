"""Shared by every test module: hardware needs as skips, caches in temporary folders, and `simflow` in a fresh
interpreter as a user runs it. Test modules import helpers from here, tests/runs.py (records),
tests/cases.py (shared cases) and tests/fakes.py (stand-ins), never from each other."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
ROOT = Path(__file__).resolve().parents[1]


def sigint_default() -> None:
    """A Popen preexec_fn: SIGINT as a terminal gives it. A pytest started in the background inherits SIGINT
    ignored, and so would its children; tests that send SIGINT need the default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def simflow(*args, env=None, timeout=300):
    """Run `python -m simflow` in a fresh interpreter, as a user would, its output a pipe (tables keep every column
    unless `env` sets COLUMNS)."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PYTHONPATH": path, **(env or {})}
    return subprocess.run([sys.executable, "-m", "simflow", *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout)


def pytest_collection_modifyitems(config, items):
    """A test marked with a hardware need (gpu, nvcc, cuda11, gpgpusim, slurm) is skipped, with the reason, where
    that need is absent (tests/hardware.py finds out once). The container engine is asked at each test that
    needs it (pytest_runtest_setup): an engine can stop while the suite runs."""
    from hardware import NEEDS

    for item in items:
        for need, (present, why) in NEEDS.items():
            if need != "docker" and not present and item.get_closest_marker(need):
                item.add_marker(pytest.mark.skip(reason=why))


def pytest_runtest_setup(item):
    if item.get_closest_marker("docker"):
        from hardware import container_engine

        engine, why = container_engine()
        if engine is None:
            pytest.skip(f"no container engine: {why}")


@pytest.fixture(autouse=True, scope="session")
def _cache_in_tmp(tmp_path_factory):
    """Compile caches and results go to fresh folders unless SIMFLOW_CACHE / SIMFLOW_RESULTS say otherwise."""
    if "SIMFLOW_CACHE" not in os.environ:
        os.environ["SIMFLOW_CACHE"] = str(tmp_path_factory.mktemp("simflow-cache"))
    if "SIMFLOW_RESULTS" not in os.environ:
        os.environ["SIMFLOW_RESULTS"] = str(tmp_path_factory.mktemp("simflow-results"))
    yield


@pytest.fixture(autouse=True)
def _settings_from_this_tests_environment():
    """simflow reads its settings from the environment once a process: each test starts from its own
    environment (what it set with monkeypatch before its first call), and leaves nothing to the next."""
    from simflow import settings

    settings.reset()
    yield
    settings.reset()
