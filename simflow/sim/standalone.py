"""A standalone CUDA program around one rendered kernel, built for GPGPU-Sim.

The program embeds the rendered kernel source verbatim (byte-identical device code to
the GPU path), reads the inputs simflow wrote (x.bin, w.bin), launches with the same
grid and block, writes y.bin and prints one "simflow: PASS|FAIL" line from its own
float64 reference. For the simulator it is built with a CUDA 11.x nvcc, PTX for
compute_70 embedded and the shared CUDA runtime, so the simulator's libcudart is used.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingTool
from ..kernels.toolkits import CUDA11_HELP, Toolkit, find_toolkits
from ..kernels.variant_types import Kernel, template_environment
from ..resources import cache_dir

SIM_BUILD_OPTIONS = ("-O3", "--cudart", "shared", "-gencode", "arch=compute_70,code=compute_70")


@dataclass(frozen=True)
class Program:
    kernel: Kernel
    batch: int
    source: str

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def render_program(kernel: Kernel, batch: int) -> Program:
    source = template_environment().get_template("standalone.cu.j2").render(
        variant=kernel.variant,
        batch=batch,
        fingerprint=kernel.fingerprint(),
        kernel_source=kernel.source.rstrip("\n"),
        launches=kernel.launches(batch),
        constant_symbols=list(kernel.constant_symbols),
        workspace=kernel.workspace(batch),
        pool=kernel.output == "conv_relu_pool",
        atol=kernel.check_tolerance.atol,
        rtol=kernel.check_tolerance.rtol,
    )
    return Program(kernel, batch, source)


def cuda11_toolkit() -> Toolkit:
    """The CUDA 11.x toolkit the simulator needs; refuses 12+ or none with how to get 11.x."""
    toolkits = find_toolkits()
    for tk in toolkits:
        if tk.version[0] == 11:
            return tk
    found = ", ".join(f"{tk.nvcc} (CUDA {tk.version_text})" for tk in toolkits) or "no nvcc at all"
    raise MissingTool(f"GPGPU-Sim runs only programs built with CUDA 11.x; found {found}. {CUDA11_HELP}")


def build_program(source: str, name: str = "program", toolkit: Toolkit | None = None,
                  options: tuple[str, ...] = SIM_BUILD_OPTIONS, folder: Path | None = None) -> Path:
    """Compile a program's source; cached by the source, the toolkit version and the options.
    `name` labels the cache folder (the variant); `folder` puts the build somewhere else."""
    tk = toolkit or cuda11_toolkit()
    key = hashlib.sha256((source + tk.version_text + " ".join(options)).encode()).hexdigest()[:16]
    folder = folder or cache_dir() / "programs" / f"{name}-{key}"
    binary = folder / "program"
    if binary.is_file():
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "program.cu").write_text(source)
    tk.run_nvcc(list(options), folder / "program.cu", binary, "build the standalone program")
    return binary
