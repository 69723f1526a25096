"""simflow's settings, in one place: where results and the compile cache go, the user's variant folders and stat
files, registered backends, the container engine, where the simulator, ncu and CUDA toolkits are, which GPU,
and how the terminal is (width, colour, output to a file).

They are read once a process (`current()`): each from the environment, else the project's `simflow.toml` (the
current folder or the nearest above it), else the user's `$XDG_CONFIG_HOME/simflow/config.toml` (FILE_KEYS: what
a file may set). The command line's flags are put over them (`use`, `with_`), and they are handed to every worker
a sweep starts (simflow.run.jobs.take_settings), so a worker sees what its parent saw without anything written
into the environment. This module is the only one that reads `os.environ`; nothing in simflow writes it.
Programs that simflow starts (nvcc, the simulator, a container engine) get a copy of the environment with their
own changes (`child_environment`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import UserError

# The environment variables simflow reads, by field (docs/results.md, docs/containers.md, docs/stats.md ...)
ENVIRONMENT = {
    "results": "SIMFLOW_RESULTS", "cache": "SIMFLOW_CACHE", "variants": "SIMFLOW_VARIANTS", "stats": "SIMFLOW_STATS",
    "backends": "SIMFLOW_BACKENDS", "engine": "SIMFLOW_ENGINE", "engine_options": "SIMFLOW_ENGINE_OPTIONS",
    "ncu": "SIMFLOW_NCU", "simulator": "GPGPUSIM_ROOT", "cuda_device": "CUDA_DEVICE",
}
PROJECT_FILE = "simflow.toml"
# What a simflow config file may set: key -> what it takes. Paths are relative to the file's folder.
FILE_KEYS = {
    "simulator": "the path of a GPGPU-Sim folder, e.g. simulator = \"/opt/gpgpu-sim\"",
    "results": "a results folder, e.g. results = \"runs\"",
    "cache": "a compile-cache folder",
    "variants": "a list of folders of your variants, e.g. variants = [\"my-variants\"]",
    "stats": "a list of your stat files (TOML), e.g. stats = [\"stats.toml\"]",
    "engine": "a container engine command, docker or podman",
    "engine_options": "options for the engine's run command, e.g. engine_options = \"--ulimit nofile=4096\"",
    "ncu": "the path of Nsight Compute's ncu",
    "backends": "a table of backend = \"module:Class\", e.g. backends = { mine = \"my_backend:MyBackend\" }",
}
_PATHS, _LISTS = ("results", "cache", "ncu"), ("variants", "stats")  # the simulator: simflow.sim.simulator
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
    def from_environment(cls, environ: dict | None = None, cwd: Path | None = None) -> Settings:
        """The environment's settings, then the config files' (project_file from `cwd`, then the user's)."""
        env = dict(os.environ if environ is None else environ)
        config_home = env.get("XDG_CONFIG_HOME", "")
        files = [f for f in (project_file(cwd), _user_file(config_home)) if f is not None and f.is_file()]
        found = {}
        for path in reversed(files):  # the project's over the user's
            found.update(file_settings(path))
        columns = env.get("COLUMNS", "")

        def split(name: str, variable: str) -> tuple[str, ...]:
            listed = env.get(variable, "")
            return tuple(p for p in listed.split(os.pathsep) if p) if listed else tuple(found.get(name, ()))

        return cls(
            results=env.get("SIMFLOW_RESULTS") or found.get("results") or "simflow-results",
            cache=env.get("SIMFLOW_CACHE") or found.get("cache", ""),
            variants=split("variants", "SIMFLOW_VARIANTS"),
            stats=split("stats", "SIMFLOW_STATS"),
            backends=tuple(_backends(env["SIMFLOW_BACKENDS"])) if env.get("SIMFLOW_BACKENDS")
            else tuple(found.get("backends", ())),
            engine=env.get("SIMFLOW_ENGINE") or found.get("engine", ""),
            engine_options=env.get("SIMFLOW_ENGINE_OPTIONS") or found.get("engine_options", ""),
            ncu=env.get("SIMFLOW_NCU") or found.get("ncu", ""),
            simulator=env.get("GPGPUSIM_ROOT", ""),
            cuda_device=env.get("CUDA_DEVICE") or "0",
            toolkits=tuple(env[v] for v in TOOLKIT_VARIABLES if env.get(v)),
            config_home=config_home,
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
        return _user_file(self.config_home)


def _user_file(config_home: str) -> Path:
    return Path(config_home or os.path.expanduser("~/.config")) / "simflow" / "config.toml"


def project_file(start: Path | None = None) -> Path | None:
    """simflow.toml in `start` (the current folder) or the nearest folder above it."""
    here = (start or Path.cwd()).resolve()
    return next((folder / PROJECT_FILE for folder in (here, *here.parents) if (folder / PROJECT_FILE).is_file()),
                None)


def read_file(path: Path) -> dict:
    """A simflow config file as it is written; every mistake names the file, the key and what it takes."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot be read: {exc.strerror}") from None
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(FILE_KEYS)}")
    for key, value in data.items():
        if not _valid(key, value):
            raise UserError(f"{path}: {key} must be {FILE_KEYS[key]}")
    return data


def _valid(key: str, value) -> bool:
    if key in _LISTS:
        return isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    if key == "backends":
        return isinstance(value, dict) and all(isinstance(v, str) and ":" in v for v in value.values())
    return isinstance(value, str) and bool(value)


def file_settings(path: Path) -> dict:
    """A config file's settings as Settings holds them: its paths made absolute from the file's folder (the
    simulator aside: simflow.sim.simulator reads that key itself, to say which file named it)."""
    data, where = read_file(path), path.parent

    def place(text: str) -> str:
        return str(where / os.path.expanduser(text))

    out = {key: place(data[key]) for key in _PATHS if key in data}
    out |= {key: tuple(map(place, data[key])) for key in _LISTS if key in data}
    out |= {key: data[key] for key in ("engine", "engine_options") if key in data}
    if "backends" in data:
        out["backends"] = tuple(data["backends"].items())
    return out


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
