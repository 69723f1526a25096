"""simflow: render CUDA convolution kernels from templates, run them on a GPU and under
GPGPU-Sim, and compare the variants. Importing simflow imports no GPU library."""

from .kernels.problems import PRESETS, Problem, get_problem
from .kernels.variants import VARIANTS, Kernel, render

__version__ = "0.1.0"
__all__ = ["PRESETS", "Problem", "get_problem", "VARIANTS", "Kernel", "render", "__version__"]
