"""What simflow can use on this machine: GPU, PyCUDA, each nvcc, a CUDA 11.x toolkit, the simulator, Docker."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass

from .backends import backend_class
from .errors import ToolError, UserError
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


def simulator_findings(probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
    """Where simflow looked for GPGPU-Sim (which build it uses, why it passed over the others), and what each
    build present can do, from its probes (simflow.simulator_probe; cached per build)."""
    from .simulator import SIMULATOR_HELP, candidates, find_simulator
    from .simulator_probe import WMMA_FORMS, probe
    from .standalone import cuda11_toolkit

    avail = backend_class("gpgpusim").probe()
    found = [Finding("GPGPU-Sim", avail.available, avail.detail, avail.how_to_get)]
    try:
        chosen = find_simulator().root
    except UserError:
        chosen = None
    looked = candidates()
    lines = [("used: " if c.usable and c.path.resolve() == chosen else "") + c.describe() for c in looked]
    found.append(Finding("GPGPU-Sim search", chosen is not None, "; ".join(lines),
                         "" if chosen is not None else SIMULATOR_HELP))
    builds = {c.path.resolve(): c for c in looked if c.usable}
    if not probe_builds or not builds:
        return found
    try:
        toolkit = cuda11_toolkit()
    except UserError as exc:
        found.append(Finding("GPGPU-Sim capabilities", False, f"not probed: {exc}", CUDA11_HELP))
        return found
    for root, candidate in builds.items():
        sim = candidate.simulator()
        try:
            caps = probe(sim, toolkit, refresh=refresh)
        except (UserError, ToolError) as exc:
            found.append(Finding(f"GPGPU-Sim at {root}", False, f"probes failed: {str(exc).splitlines()[0]}",
                                 "rebuild it by its own README"))
            continue
        right = [form.describe() for form in WMMA_FORMS if caps.wmma.get(form.name) == "correct"]
        wrong = {said.split(":")[0] for said in caps.wmma.values() if said != "correct"}
        wmma = (f"WMMA: {len(right)} of {len(caps.wmma)} forms correct" + (f" ({', '.join(right)})" if right else "")
                + (f"; the others {', '.join(sorted(wrong))}" if wrong else ""))
        occupancy = ("gpu_occupancy printed" if caps.occupancy == "printed" else
                     "gpu_occupancy = -nan: sampled_occupancy (from the progress samples) stands for it")
        found.append(Finding(f"GPGPU-Sim at {root}", True,
                             f"{caps.flavour or 'unknown flavour'}, {caps.version} [build {caps.build}]; {occupancy}; "
                             f"bank conflicts in {caps.bank_conflict_counter or 'no counter'}; {wmma}"))
    return found


def engine_findings() -> list[Finding]:
    """Each container engine on PATH: whether its engine answers, and (podman) whether it can run --init."""
    from .container import ENGINES, init_problem

    found = []
    for name in ENGINES:
        if not shutil.which(name):
            continue
        code, out = _run([name, "version", "--format", "{{.Server.Version}}"], timeout=15)
        if code != 0:
            first = out.splitlines()[-1] if out else "no answer"
            found.append(Finding(name, False, f"client present, engine not reachable ({first})",
                                 "start its engine, or run the simulator natively"))
        elif why := init_problem(name):
            found.append(Finding(name, False, f"engine {out}, but {why}", "apt-get install catatonit"))
        else:
            found.append(Finding(name, True, f"engine {out}"))
    if not found:
        found.append(Finding("docker", False, "no docker or podman command on PATH",
                             "install Docker Engine or Podman to run the simulator in the simflow image "
                             "('simflow image build')"))
    return found


def diagnose(probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
    return [gpu_finding(), pycuda_finding(), *toolkit_findings(), *simulator_findings(probe_builds, refresh),
            *engine_findings()]
