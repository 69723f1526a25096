"""CUDA toolkits on this machine, and compiling a rendered kernel with one of them.

Compiles run under a PATH whose first entry is the toolkit's own bin folder, because
nvcc finds ptxas, fatbinary and cudafe++ through PATH and would otherwise mix
toolkits (on these machines /usr/local/bin holds CUDA 13's helpers).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import ToolError, UserError
from ..resources import cache_dir
from ..settings import child_environment, current

CUDA11_HELP = (
    "GPGPU-Sim needs a CUDA 11.x toolkit. On Debian 12: add 'contrib non-free' to the Components: "
    "line of /etc/apt/sources.list.d/debian.sources, run 'apt-get update && apt-get install "
    "nvidia-cuda-toolkit' (CUDA 11.8), or point SIMFLOW_CUDA11 / CUDA_INSTALL_PATH at a CUDA 11.x install"
)


@dataclass(frozen=True)
class Toolkit:
    nvcc: Path
    version: tuple[int, int]

    @property
    def bin_dir(self) -> Path:
        return self.nvcc.parent

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def can_target(self, arch: str) -> bool:
        """CUDA 12+ dropped sm_50..sm_72 (13 keeps sm_75 and newer); 11.x reaches sm_35..sm_90, and the
        architecture-specific targets (sm_90a) came with 12."""
        number = arch.split("_")[1]
        cc = int(number.rstrip("a"))
        if number.endswith("a") and self.version[0] < 12:
            return False
        if self.version[0] >= 13:
            return cc >= 75
        if self.version[0] == 12:
            return cc >= 50
        return 35 <= cc <= 90

    def helper_dirs(self) -> list[Path]:
        """Folders of this toolkit's ptxas, fatbinary, nvlink, cudafe++. Debian's CUDA 11 keeps nvcc in
        /usr/lib/nvidia-cuda-toolkit/bin and the helpers in /usr/bin."""
        dirs = [self.bin_dir]
        if not (self.bin_dir / "ptxas").exists():
            for candidate in (self.nvcc.resolve().parent, Path("/usr/bin")):
                if (candidate / "ptxas").exists() and _version_of(candidate / "ptxas") == self.version:
                    dirs.append(candidate)
                    break
        return dirs

    def run_nvcc(self, args: list[str], source: Path, target: Path, what: str) -> str:
        """nvcc ARGS -o TARGET SOURCE under this toolkit's PATH; TARGET appears whole or not at all.
        Returns nvcc's output; a failure raises ToolError saying `what` failed, with the command."""
        tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        cmd = [str(self.nvcc), *args, "-o", str(tmp), str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env(), timeout=600)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise ToolError(f"nvcc (CUDA {self.version_text}) failed to {what}", cmd, proc.stdout + proc.stderr)
        os.replace(tmp, target)
        return proc.stdout + proc.stderr

    def env(self) -> dict[str, str]:
        """PATH with this toolkit's folders first, so nvcc cannot pick up another toolkit's helpers."""
        env = child_environment()
        env["PATH"] = os.pathsep.join([*map(str, self.helper_dirs()), env.get("PATH", "")])
        return env


def _version_of(nvcc: Path) -> tuple[int, int] | None:
    try:
        out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"release (\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def _candidates() -> list[Path]:
    paths = []
    for folder in current().toolkits:  # SIMFLOW_CUDA11, CUDA_INSTALL_PATH, CUDA_HOME, CUDA_PATH, in that order
        paths.append(Path(folder) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        paths.append(Path(found))
    paths += [
        Path("/usr/local/cuda/bin/nvcc"),
        Path("/usr/lib/nvidia-cuda-toolkit/bin/nvcc"),
        Path("/usr/bin/nvcc"),
    ]
    return paths


@cache
def find_toolkits() -> tuple[Toolkit, ...]:
    """One nvcc per CUDA version found, in the order of preference above."""
    seen, found = set(), []
    for path in _candidates():
        if not path.is_file() or path.resolve() in seen:
            continue
        seen.add(path.resolve())
        version = _version_of(path)
        if version and version not in {tk.version for tk in found}:
            found.append(Toolkit(nvcc=path, version=version))
    return tuple(found)


def toolkit_for(arch: str) -> Toolkit:
    """The first toolkit that can compile for `arch`."""
    toolkits = find_toolkits()
    for tk in toolkits:
        if tk.can_target(arch):
            return tk
    if not toolkits:
        raise UserError(
            "no nvcc found (looked at SIMFLOW_CUDA11, CUDA_INSTALL_PATH, CUDA_HOME, PATH, /usr/local/cuda, "
            "/usr/bin); install a CUDA toolkit or put its bin folder on PATH"
        )
    have = ", ".join(f"{tk.nvcc} (CUDA {tk.version_text})" for tk in toolkits)
    raise UserError(f"no nvcc here can target {arch}; found: {have}")


@dataclass(frozen=True)
class Compiled:
    """A kernel compiled to a cubin or PTX, with the resource usage ptxas reported."""

    path: Path
    toolkit: Toolkit
    arch: str
    log: str
    resources: dict[str, dict[str, int]]  # kernel -> registers, smem, cmem, stack, spill_stores ...


_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)'|Function properties for (\w+)")
_PTXAS_USED = re.compile(r"Used (\d+) registers(.*)")


def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """Per-kernel resources from `ptxas -v` output (registers, smem, cmem, stack, spills)."""
    usage: dict[str, dict[str, int]] = {}
    current = None
    for line in log.splitlines():
        match = _PTXAS_FUNC.search(line)
        if match:
            current = match[1] or match[2]
            usage.setdefault(current, {})
            continue
        if current is None:
            continue
        entry = usage[current]
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if frame:
            entry["stack_bytes"], entry["spill_store_bytes"], entry["spill_load_bytes"] = map(int, frame.groups())
        used = _PTXAS_USED.search(line)
        if used:
            entry["registers"] = int(used[1])
            smem = re.search(r"(\d+) bytes smem", used[2])
            entry["static_smem_bytes"] = int(smem[1]) if smem else 0
            cmem = re.findall(r"(\d+) bytes cmem", used[2])
            if cmem:  # CUDA 13's ptxas no longer prints it
                entry["cmem_bytes"] = sum(int(n) for n in cmem)
    return usage


def compile_kernel(source: str, arch: str, fingerprint: str, *, toolkit: Toolkit | None = None,
                   output: str = "cubin", options: tuple[str, ...] = ()) -> Compiled:
    """nvcc -cubin (or -ptx) with -Xptxas -v; cached by fingerprint, arch and toolkit version."""
    tk = toolkit or toolkit_for(arch)
    if not tk.can_target(arch):
        raise UserError(f"nvcc {tk.nvcc} (CUDA {tk.version_text}) cannot target {arch}")
    folder = cache_dir() / "nvcc" / f"cuda{tk.version_text}-{arch}" / fingerprint
    target = folder / f"kernel.{output}"
    log_path = folder / "ptxas.log"
    if target.is_file() and log_path.is_file():
        log = log_path.read_text()
        return Compiled(target, tk, arch, log, parse_ptxas_log(log))
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "kernel.cu"
    src.write_text(source)
    verbose = [] if output == "ptx" else ["-Xptxas", "-v"]
    log = tk.run_nvcc([f"-{output}", f"-arch={arch}", "-O3", *verbose, *options], src, target,
                      f"compile for {arch}")
    log_path.write_text(log)
    return Compiled(target, tk, arch, log, parse_ptxas_log(log))


SIMULATOR_TOOLS = ("nvcc", "ptxas", "cuobjdump", "fatbinary", "nvlink", "cudafe++", "nvdisasm")


def cuda_install_path(tk: Toolkit) -> Path:
    """A CUDA_INSTALL_PATH for GPGPU-Sim: a folder with bin/ (nvcc, ptxas, cuobjdump ...), include/, lib64/.

    The simulator runs $CUDA_INSTALL_PATH/bin/cuobjdump and ptxas while it simulates. A regular
    install already has that layout; Debian's package splits it over /usr, so simflow makes a
    folder of symlinks in its cache (the same layout the notes describe making by hand)."""
    root = tk.bin_dir.parent
    if all((root / "bin" / tool).exists() for tool in ("nvcc", "ptxas", "cuobjdump")) and (root / "include").is_dir():
        return root
    layout = cache_dir() / "cuda-layout" / f"cuda-{tk.version_text}"
    (layout / "bin").mkdir(parents=True, exist_ok=True)
    for tool in SIMULATOR_TOOLS:
        for folder in [*tk.helper_dirs(), Path("/usr/bin")]:
            if (folder / tool).exists():
                _symlink(layout / "bin" / tool, folder / tool)
                break
    if tk.nvcc.name == "nvcc":
        _symlink(layout / "bin" / "nvcc", tk.nvcc)
    for name, target in (("include", Path("/usr/include")), ("lib64", Path("/usr/lib/x86_64-linux-gnu"))):
        if (target / ("cuda_runtime.h" if name == "include" else "libcudart.so")).exists():
            _symlink(layout / name, target)
    return layout


def _symlink(link: Path, target: Path) -> None:
    if link.is_symlink() and link.resolve() == target.resolve():
        return
    tmp = link.with_name(f".{link.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)
