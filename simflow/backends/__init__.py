"""Backends run a job: `gpu` (PyCUDA on a real GPU), `gpgpusim` (the cycle simulator), `gpu-ncu` (the GPU
path once under Nsight Compute, its counters under the simulator's names).

Backend modules are imported only when asked for (by name, through this registry), so `import simflow` pulls
in no GPU library. A new backend is one module with a Backend subclass (simflow.backends.base: its facts as
class attributes) and one line here.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from ..errors import UserError

if TYPE_CHECKING:  # the registry names its classes; it imports none of them until asked
    from .base import Backend

_BACKENDS = {
    "gpu": "simflow.backends.gpu:GpuBackend",
    "gpgpusim": "simflow.backends.gpgpusim:GpgpusimBackend",
    "gpu-ncu": "simflow.backends.ncu:NcuBackend",
}


def backend_class(name: str) -> type[Backend]:
    if name not in _BACKENDS:
        raise UserError(f"unknown backend {name!r}; valid backends: {', '.join(_BACKENDS)}")
    module, cls = _BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def known_backend(name: str) -> type[Backend] | None:
    """The class of a backend named in a stored record, or None where this simflow does not know it (a record
    made with a backend registered elsewhere): its facts are then unknown, never an error."""
    return backend_class(name) if name in _BACKENDS else None


def backend_names() -> list[str]:
    return list(_BACKENDS)


def register(name: str, target: str) -> None:
    """Add a backend ('module:Class') to the registry, in this process and the workers it starts
    (through SIMFLOW_BACKENDS, 'name=module:Class;...', read when this module is imported)."""
    _BACKENDS[name] = target
    entries = [e for e in os.environ.get(ENV, "").split(";") if e and not e.startswith(f"{name}=")]
    os.environ[ENV] = ";".join([*entries, f"{name}={target}"])


ENV = "SIMFLOW_BACKENDS"
for _entry in filter(None, os.environ.get(ENV, "").split(";")):
    _name, _, _target = _entry.partition("=")
    if _name and ":" in _target:
        _BACKENDS[_name.strip()] = _target.strip()


__all__ = ["backend_class", "backend_names", "known_backend", "register"]
