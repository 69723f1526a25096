"""What simflow can use on this machine: each nvcc and a CUDA 11.x toolkit, then what each backend says of its
own parts (Backend.doctor: the GPU and PyCUDA, the simulator and its container engines, Nsight Compute)."""

from __future__ import annotations

from .backends.base import Finding
from .kernels.toolkits import CUDA11_HELP, find_toolkits
from .registry import backend_class, backend_names


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


def diagnose(probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
    return [*toolkit_findings(),
            *(f for name in backend_names() for f in backend_class(name).doctor(probe_builds, refresh))]
