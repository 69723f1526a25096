"""Backends run a rendered kernel: `gpu` (PyCUDA on a real GPU), `gpgpusim` (the cycle simulator).

Backend modules are imported only when asked for, so `import simflow` pulls in no GPU library.
"""

from __future__ import annotations

import importlib

from ..errors import UserError
from .base import Availability, Backend, RunOptions, RunResult

_BACKENDS = {
    "gpu": "simflow.backends.gpu:GpuBackend",
    "gpgpusim": "simflow.backends.gpgpusim:GpgpusimBackend",
}


def backend_class(name: str) -> type[Backend]:
    if name not in _BACKENDS:
        raise UserError(f"unknown backend {name!r}; valid backends: {', '.join(_BACKENDS)}")
    module, cls = _BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def backend_names() -> list[str]:
    return list(_BACKENDS)


__all__ = ["Availability", "Backend", "RunOptions", "RunResult", "backend_class", "backend_names"]
