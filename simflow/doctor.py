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


def parser_finding() -> Finding:
    """Whether logs are read with the parser's compiled scanner (simflow.sim.log_scan) or its regex."""
    from .sim import log_scan

    if log_scan.compiled():
        return Finding("log parser", True, "reads logs with its scanner in C (built once with this machine's cc)")
    return Finding("log parser", False, "no C compiler to build its scanner: logs are read by a regex, about "
                   "half as fast (the same records)", "install a C compiler (Debian: apt-get install gcc)")


def diagnose(probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
    return [*toolkit_findings(), parser_finding(),
            *(f for name in backend_names() for f in backend_class(name).doctor(probe_builds, refresh))]
