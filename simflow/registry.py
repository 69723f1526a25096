"""The backend registry: backend names and the class each names ('module:Class'), imported only when asked for,
so `import simflow` pulls in no GPU library. It sits at the bottom of the package (it imports no backend), so that
jobs and records can read a backend's facts without importing up into simflow.backends. A new backend is one
module with a Backend subclass (simflow.backends.base: its facts as class attributes) and one line in _BUILT_IN.
"""

from __future__ import annotations

import importlib

from .errors import UserError
from .settings import current, with_

_BUILT_IN = {
    "gpu": "simflow.backends.gpu:GpuBackend",
    "gpgpusim": "simflow.backends.gpgpusim:GpgpusimBackend",
    "gpu-ncu": "simflow.backends.ncu:NcuBackend",
}


def _registry() -> dict[str, str]:
    """simflow's backends, then the ones registered (register, or SIMFLOW_BACKENDS 'name=module:Class;...')."""
    return {**_BUILT_IN, **dict(current().backends)}


def backend_class(name: str) -> type:
    registry = _registry()
    if name not in registry:
        raise UserError(f"unknown backend {name!r}; valid backends: {', '.join(registry)}")
    module, cls = registry[name].split(":")
    return getattr(importlib.import_module(module), cls)


def known_backend(name: str) -> type | None:
    """The class of a backend named in a stored record, or None where this simflow does not know it (a record
    made with a backend registered elsewhere): its facts are then unknown, never an error."""
    return backend_class(name) if name in _registry() else None


def backend_names() -> list[str]:
    return list(_registry())


def register(name: str, target: str) -> None:
    """Add a backend ('module:Class') to the registry, in this process and the workers it starts (they get
    this process's settings)."""
    kept = tuple((n, t) for n, t in current().backends if n != name)
    with_(backends=(*kept, (name, target)))


__all__ = ["backend_class", "backend_names", "known_backend", "register"]
