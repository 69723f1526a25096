"""simflow's settings, in one place: where results and the compile cache go, the user's variant folders and stat
files, registered backends, the container engine, where the simulator, ncu and CUDA toolkits are, which GPU,
and how the terminal is (width, colour, output to a file).

They are read from the environment once a process (`current()`), the command line's flags put over them
(`use`, `with_`), and handed to every worker a sweep starts (simflow.run.jobs.take_settings), so a worker
sees what its parent saw without anything written into the environment. This module is the only one that
reads `os.environ`; nothing in simflow writes it. Programs that simflow starts (nvcc, the simulator, a
container engine) get a copy of the environment with their own changes (`child_environment`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

# The environment variables simflow reads, by field (docs/results.md, docs/containers.md, docs/stats.md ...)
ENVIRONMENT = {
    "results": "SIMFLOW_RESULTS", "cache": "SIMFLOW_CACHE", "variants": "SIMFLOW_VARIANTS", "stats": "SIMFLOW_STATS",
    "backends": "SIMFLOW_BACKENDS", "engine": "SIMFLOW_ENGINE", "engine_options": "SIMFLOW_ENGINE_OPTIONS",
    "ncu": "SIMFLOW_NCU", "simulator": "GPGPUSIM_ROOT", "cuda_device": "CUDA_DEVICE",
}
TOOLKIT_VARIABLES = ("SIMFLOW_CUDA11", "CUDA_INSTALL_PATH", "CUDA_HOME", "CUDA_PATH")  # CUDA installs, in order


@dataclass(frozen=True)
class Settings:
    results: str = "simflow-results"  # results folder (runs, simflow.db)
    cache: str = ""  # compile cache; '' -> $XDG_CACHE_HOME/simflow or ~/.cache/simflow
    variants: tuple[str, ...] = ()  # folders of the user's variants, before simflow's own
    stats: tuple[str, ...] = ()  # the user's stat files (TOML)
    backends: tuple[tuple[str, str], ...] = ()  # registered backends: (name, 'module:Class')
    engine: str = ""  # container engine command ('' -> docker if on PATH, else podman)
    engine_options: str = ""  # extra options for the engine's run command, split as a shell would
    ncu: str = ""  # Nsight Compute's ncu ('' -> PATH, then /usr/local/cuda/bin/ncu)
    simulator: str = ""  # GPGPU-Sim's folder, GPGPUSIM_ROOT ('' -> simflow.toml, the user config, usual places)
    cuda_device: str = "0"  # the GPU the gpu backends open (a number; read as one where a GPU is opened)
    toolkits: tuple[str, ...] = ()  # CUDA installs named by SIMFLOW_CUDA11, CUDA_INSTALL_PATH, CUDA_HOME, CUDA_PATH
    config_home: str = ""  # $XDG_CONFIG_HOME ('' -> ~/.config): the user config simflow/config.toml
    cache_home: str = ""  # $XDG_CACHE_HOME ('' -> ~/.cache)
    columns: int = 0  # $COLUMNS: the width tables fit (0 -> the terminal's)
    no_color: bool = False  # $NO_COLOR set: no colour even on a terminal
    to_file: bool = False  # this command writes its table to a file (-o): every column, no colour

    @classmethod
    def from_environment(cls, environ: dict | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        columns = env.get("COLUMNS", "")
        return cls(
            results=env.get("SIMFLOW_RESULTS") or "simflow-results",
            cache=env.get("SIMFLOW_CACHE", ""),
            variants=tuple(p for p in env.get("SIMFLOW_VARIANTS", "").split(os.pathsep) if p),
            stats=tuple(p for p in env.get("SIMFLOW_STATS", "").split(os.pathsep) if p),
            backends=tuple(_backends(env.get("SIMFLOW_BACKENDS", ""))),
            engine=env.get("SIMFLOW_ENGINE", ""),
            engine_options=env.get("SIMFLOW_ENGINE_OPTIONS", ""),
            ncu=env.get("SIMFLOW_NCU", ""),
            simulator=env.get("GPGPUSIM_ROOT", ""),
            cuda_device=env.get("CUDA_DEVICE") or "0",
            toolkits=tuple(env[v] for v in TOOLKIT_VARIABLES if env.get(v)),
            config_home=env.get("XDG_CONFIG_HOME", ""),
            cache_home=env.get("XDG_CACHE_HOME", ""),
            columns=int(columns) if columns.isdigit() else 0,
            no_color=bool(env.get("NO_COLOR")),
        )

    @property
    def cache_dir(self) -> Path:
        return Path(self.cache or os.path.join(self.cache_home or os.path.expanduser("~/.cache"), "simflow"))

    @property
    def results_dir(self) -> Path:
        return Path(self.results)

    @property
    def user_config(self) -> Path:
        return Path(self.config_home or os.path.expanduser("~/.config")) / "simflow" / "config.toml"


def _backends(text: str):
    """'name=module:Class;...' (SIMFLOW_BACKENDS) as (name, target) pairs."""
    for entry in filter(None, text.split(";")):
        name, _, target = entry.partition("=")
        if name.strip() and ":" in target:
            yield name.strip(), target.strip()


_CURRENT: Settings | None = None


def current() -> Settings:
    """This process's settings: the environment's, read on first use, with whatever `use` put over them."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = Settings.from_environment()
    return _CURRENT


def use(settings: Settings) -> Settings:
    """Make `settings` this process's; returns the ones they replace."""
    global _CURRENT
    before, _CURRENT = current(), settings
    return before


def with_(**changes) -> Settings:
    """This process's settings with `changes` put over them, made current."""
    use(replace(current(), **changes))
    return current()


def reset() -> None:
    """Forget the settings: the next `current()` reads the environment again (a test that changed it)."""
    global _CURRENT
    _CURRENT = None


def child_environment(**changes: str) -> dict[str, str]:
    """The environment for a program simflow starts: this process's own, as it is now, with `changes`."""
    return {**os.environ, **changes}
