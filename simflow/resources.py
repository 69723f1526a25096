"""Where the kernel templates and simulator configs are.

In a wheel they are inside the package (mapped there by the build backend); in a
source checkout (PYTHONPATH or an editable install) they are at the repository top.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (PACKAGE_DIR / name, PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"simflow's {name}/ folder is missing from {PACKAGE_DIR} and its parent; reinstall simflow")


def templates_dir() -> Path:
    return _find("cuda_templates")


def configs_dir() -> Path:
    return _find("gpgpusim_configs")


def docker_dir() -> Path:
    return _find("docker")


def cache_dir() -> Path:
    """Compile cache; SIMFLOW_CACHE moves it."""
    from .settings import current

    return current().cache_dir


def results_dir() -> Path:
    """Where runs are kept (run folders, the results database); SIMFLOW_RESULTS or --results moves it."""
    from .settings import current

    return current().results_dir
