"""simflow: render CUDA convolution kernels from templates, run them on a GPU and under
GPGPU-Sim, and compare the variants. Importing simflow imports no GPU library, and its names are
imported when first used, so a part (the log parser) loads without the kernels' numpy and Jinja2."""

import importlib

__version__ = "0.1.0"
_HOMES = {"PRESETS": ".kernels.problems", "Problem": ".kernels.problems", "get_problem": ".kernels.problems",
          "VARIANTS": ".kernels.variants", "Kernel": ".kernels.variants", "render": ".kernels.variants"}
__all__ = [*_HOMES, "__version__"]


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module 'simflow' has no attribute {name!r}")
