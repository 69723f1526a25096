"""What simflow can use on this machine: GPU, PyCUDA, each nvcc, a CUDA 11.x toolkit, the simulator, Docker."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass

from .backends import backend_class
from .toolkits import CUDA11_HELP, find_toolkits


@dataclass(frozen=True)
class Finding:
    component: str
    found: bool
    detail: str
    how_to_get: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _run(cmd: list[str], timeout: float = 20) -> tuple[int, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def gpu_finding() -> Finding:
    avail = backend_class("gpu").probe()
    if avail.available:
        return Finding("GPU (PyCUDA)", True, avail.detail)
    if shutil.which("nvidia-smi"):
        code, out = _run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if code == 0 and out:
            return Finding("GPU (PyCUDA)", False, f"nvidia-smi sees {out}, but: {avail.detail}", avail.how_to_get)
    return Finding("GPU (PyCUDA)", False, avail.detail, avail.how_to_get)


def pycuda_finding() -> Finding:
    try:
        import pycuda  # noqa: F401  (doctor's job is to try)
    except ImportError as exc:
        return Finding("pycuda", False, f"not importable ({exc})", "pip install 'simflow[gpu]'")
    return Finding("pycuda", True, f"PyCUDA {pycuda.VERSION_TEXT}")


def toolkit_findings() -> list[Finding]:
    toolkits = find_toolkits()
    found = [
        Finding(f"nvcc {tk.nvcc}", True, f"CUDA {tk.version_text}, targets "
                + ("sm_75 and newer" if tk.version[0] >= 13 else "sm_50 and newer" if tk.version[0] == 12
                   else "sm_35 to sm_90, and the simulator's compute_70"))
        for tk in toolkits
    ]
    if not toolkits:
        found.append(Finding("nvcc", False, "no nvcc found", "install a CUDA toolkit (nvcc) and put it on PATH"))
    cuda11 = [tk for tk in toolkits if tk.version[0] == 11]
    if cuda11:
        found.append(Finding("CUDA 11.x (for GPGPU-Sim)", True, f"{cuda11[0].nvcc} (CUDA {cuda11[0].version_text})"))
    else:
        found.append(Finding("CUDA 11.x (for GPGPU-Sim)", False, "none found", CUDA11_HELP))
    return found


def simulator_finding() -> Finding:
    avail = backend_class("gpgpusim").probe()
    return Finding("GPGPU-Sim", avail.available, avail.detail, avail.how_to_get)


def docker_finding() -> Finding:
    if not shutil.which("docker"):
        return Finding("docker", False, "no docker client on PATH",
                       "install Docker Engine to run the simulator image (docker/Dockerfile)")
    code, out = _run(["docker", "version", "--format", "{{.Server.Version}}"], timeout=15)
    if code != 0:
        first = out.splitlines()[-1] if out else "no answer"
        return Finding("docker", False, f"client present, engine not reachable ({first})",
                       "start the Docker daemon, or run the simulator natively")
    return Finding("docker", True, f"engine {out}")


def diagnose() -> list[Finding]:
    return [gpu_finding(), pycuda_finding(), *toolkit_findings(), simulator_finding(), docker_finding()]
