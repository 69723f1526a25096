"""What this machine has (one place for hardware detection).

Each marker in pyproject.toml names one need (NEEDS); conftest skips a test marked with a need that is
absent here, with the reason."""

from __future__ import annotations

import os
import shutil
import subprocess

from simflow.kernels.toolkits import find_toolkits
from simflow.registry import backend_class

_gpu = backend_class("gpu").probe()

MODERN_NVCC = next((tk for tk in find_toolkits() if tk.version[0] >= 12), None)  # sm_90 and sm_90a (wgmma)

CUDA11 = next((tk for tk in find_toolkits() if tk.version[0] == 11), None)

_sim = backend_class("gpgpusim").probe()
UPSTREAM_ROOT = os.environ.get("SIMFLOW_TEST_UPSTREAM_ROOT", "")  # a second build, upstream's, to compare with


def container_engine() -> tuple[str | None, str]:
    """The engine the docker tests use ($SIMFLOW_ENGINE, else docker, else podman), if its engine answers."""
    names = [os.environ["SIMFLOW_ENGINE"]] if os.environ.get("SIMFLOW_ENGINE") else ["docker", "podman"]
    said = []
    for name in names:
        if shutil.which(name) is None:
            said.append(f"no {name} command")
            continue
        try:
            proc = subprocess.run([name, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                                  text=True, timeout=20)
        except subprocess.TimeoutExpired:
            said.append(f"{name} did not answer in 20 s")
            continue
        if proc.returncode == 0:
            return name, ""
        said.append(f"{name}'s engine is not reachable ({(proc.stderr or proc.stdout).strip().splitlines()[-1:]})")
    return None, "; ".join(said)


ENGINE, _engine_why = container_engine()

# marker -> (present, why not)
def _slurm_missing() -> str:
    from slurm_cluster import missing

    why = missing()
    if not why:
        try:
            import dask_jobqueue  # noqa: F401
        except ImportError:
            why = "dask-jobqueue absent: pip install 'simflow[cluster]'"
    return why


_slurm_why = _slurm_missing()

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

NEEDS = {
    "gpu": (_gpu.available, f"no GPU backend: {_gpu.detail}"),
    "nvcc": (MODERN_NVCC is not None, "no nvcc that targets sm_90 (CUDA 12 or newer)"),
    "cuda11": (CUDA11 is not None, "no CUDA 11.x toolkit (see simflow doctor)"),
    "gpgpusim": (_sim.available, f"no GPGPU-Sim: {_sim.detail}"),
    "docker": (ENGINE is not None, f"no container engine: {_engine_why}"),
    "slurm": (not _slurm_why, _slurm_why),
    "chromium": (CHROMIUM is not None, "no Chromium for the page tests: apt-get install chromium (Debian)"),
    "upstream": (bool(UPSTREAM_ROOT), "SIMFLOW_TEST_UPSTREAM_ROOT names no upstream GPGPU-Sim build (built by its "
                                      "own README) to compare with"),
}
