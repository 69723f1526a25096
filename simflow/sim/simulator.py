"""The user's GPGPU-Sim build: where it is, the environment it runs in.

simflow never builds or changes the simulator. Users build it from its own repository by its own
README; simflow looks for that build, in this order, and says why it passed over each place:

1. `GPGPUSIM_ROOT` (what the simulator's `source setup_environment release` sets);
2. `simulator = "/path"` in a simflow config file: the project's `simflow.toml` (in the current
   folder or one above it) first, then the user's `$XDG_CONFIG_HOME/simflow/config.toml`
   (`~/.config/simflow/config.toml`);
3. the usual places: /opt/gpgpu-sim, ~/gpgpu-sim_distribution, and the tree Accel-Sim builds in
   ~/accel-sim-framework/gpu-simulator/gpgpu-sim.

A place is used when it holds what simflow needs of a build: `setup_environment`,
`configs/tested-cfgs/` and a built runtime library (`lib/gcc-*/cuda-*/release/libcudart.so`). A place
the user named (the variable or a config file) that does not hold a build is an error, never passed
over for another build.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingTool, UserError
from ..settings import PROJECT_FILE, child_environment, current, project_file, read_file

SIMULATOR_HELP = (
    "build GPGPU-Sim by its own README (github.com/accel-sim/gpgpu-sim_distribution, the fork Accel-Sim uses, or "
    "github.com/gpgpu-sim/gpgpu-sim_distribution; 'source setup_environment release && make' with a CUDA 11.x "
    "toolkit), then point simflow at the folder: GPGPUSIM_ROOT, simulator = \"DIR\" in simflow.toml or "
    "~/.config/simflow/config.toml, or /opt/gpgpu-sim (docs/simulator.md); or run in the simflow image "
    "with 'simflow sim ... --docker IMAGE'"
)
USUAL_PLACES = ("/opt/gpgpu-sim", "~/gpgpu-sim_distribution", "~/accel-sim-framework/gpu-simulator/gpgpu-sim")


@dataclass(frozen=True)
class Candidate:
    """One place simflow looked, and what it found there."""

    source: str  # where the place came from: "GPGPUSIM_ROOT", "simulator in /x/simflow.toml", "usual place"
    path: Path | None  # None: the source named no place (variable unset, no config file)
    problem: str = ""  # why it is not used; "" when it holds a build
    named: bool = False  # the user named it (variable or config file): a problem there is an error

    @property
    def usable(self) -> bool:
        return self.path is not None and not self.problem

    def describe(self) -> str:
        where = f"{self.source}={self.path}" if self.path is not None else self.source
        return f"{where}: {self.problem or 'a build'}"

    def simulator(self, passed_over: tuple[str, ...] = ()) -> Simulator:
        """The build here (only for a usable candidate)."""
        return Simulator(self.path.resolve(), _pick_library(built_libraries(self.path)), self.source, passed_over)


@dataclass(frozen=True)
class Simulator:
    """A built GPGPU-Sim: its tree and the folder of its runtime library."""

    root: Path
    library_dir: Path  # holds the simulator's libcudart.so
    found_by: str
    passed_over: tuple[str, ...] = ()  # why each place before it was not used

    @property
    def library(self) -> Path:
        return self.library_dir / "libcudart.so"


def user_config_path() -> Path:
    return current().user_config


def built_libraries(root: Path) -> list[Path]:
    """The folders of `root` that hold a built release libcudart.so (one per gcc and CUDA version built with)."""
    return sorted(p.parent for p in root.glob("lib/gcc-*/cuda-*/release/libcudart.so"))


def _problem(root: Path) -> str:
    if not root.is_dir():
        return "no such folder"
    if not (root / "setup_environment").is_file():
        return "no setup_environment: not a GPGPU-Sim tree"
    if not (root / "configs" / "tested-cfgs").is_dir():
        return "no configs/tested-cfgs: not a GPGPU-Sim tree"
    if not built_libraries(root):
        return ("not built: no lib/gcc-*/cuda-*/release/libcudart.so (run 'source setup_environment release && "
                "make' there, as its README says)")
    return ""


def _place(source: str, text: str, relative_to: Path | None = None, named: bool = True) -> Candidate:
    path = Path(os.path.expanduser(text))
    if relative_to is not None and not path.is_absolute():
        path = relative_to / path
    return Candidate(source, path, _problem(path), named)


def candidates() -> list[Candidate]:
    """Every place simflow looks, in order, with what it found there."""
    found = []
    env = current().simulator
    found.append(_place("GPGPUSIM_ROOT", env) if env else Candidate("GPGPUSIM_ROOT", None, "not set"))
    for path in (project_file(), user_config_path()):
        if path is None:
            found.append(Candidate(f"{PROJECT_FILE} (here or above)", None, "none"))
        elif not path.is_file():
            found.append(Candidate(str(path), None, "no such file"))
        elif "simulator" not in (data := read_file(path)):
            found.append(Candidate(str(path), None, "names no simulator"))
        else:
            found.append(_place(f"simulator in {path}", data["simulator"], path.parent))
    for place in USUAL_PLACES:
        found.append(_place("usual place", place, named=False))
    return found


def find_simulator() -> Simulator:
    """The first build in the search order, or a UserError that says where simflow looked and how to get one."""
    looked = candidates()
    for index, candidate in enumerate(looked):
        if candidate.usable:
            return candidate.simulator(tuple(c.describe() for c in looked[:index]))
        if candidate.named and candidate.path is not None:
            raise UserError(f"GPGPU-Sim at {candidate.path} (from {candidate.source}) cannot be used: "
                            f"{candidate.problem}. Fix it or point simflow elsewhere; {SIMULATOR_HELP}")
    where = "; ".join(c.describe() for c in looked)
    raise MissingTool(f"GPGPU-Sim not found (looked at: {where}). {SIMULATOR_HELP}")


def simulator_at(path: Path) -> Simulator:
    """The build in `path` (a folder the user named on the command line), or a UserError saying what is missing."""
    candidate = _place("--simulator", str(path))
    if candidate.problem:
        raise UserError(f"GPGPU-Sim at {path} cannot be used: {candidate.problem}")
    return candidate.simulator()


def missing_libraries(sim: Simulator) -> list[str]:
    """The system libraries the simulator's runtime library needs and this system lacks (ldd's 'not found'
    lines), e.g. a build made on a newer release than this one."""
    try:
        proc = subprocess.run(["ldd", str(sim.library)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if "not found" in line]


def _pick_library(libraries: list[Path]) -> Path:
    """The newest build when the tree was built with several gcc or CUDA versions."""
    return max(libraries, key=lambda p: (p / "libcudart.so").stat().st_mtime)


def environment(sim: Simulator, cuda_path: Path) -> dict[str, str]:
    """The environment the simulator's own setup_environment makes for this CUDA 11.x install, with the
    library folder simflow found first on LD_LIBRARY_PATH (setup_environment names the folder after the
    gcc on PATH now, which need not be the one the build used)."""
    env = child_environment(CUDA_INSTALL_PATH=str(cuda_path))
    env["PATH"] = os.pathsep.join([str(cuda_path / "bin"), env.get("PATH", "")])
    script = f'source "{sim.root}/setup_environment" release >&2 && env -0'
    try:
        proc = subprocess.run(["bash", "-c", script], capture_output=True, env=env, cwd=sim.root, timeout=120)
    except subprocess.TimeoutExpired:
        raise UserError(f"GPGPU-Sim's setup_environment in {sim.root} did not finish in 120 s") from None
    out = dict(item.split("=", 1) for item in proc.stdout.decode(errors="replace").split("\0") if "=" in item)
    if proc.returncode != 0 or out.get("GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN") != "1":
        raise UserError(f"GPGPU-Sim's setup_environment failed in {sim.root} with CUDA_INSTALL_PATH={cuda_path}: "
                        f"{proc.stderr.decode(errors='replace').strip()[-800:]}")
    library = sim.library_dir
    matching = [p for p in built_libraries(sim.root) if p.parent.name == f"cuda-{out.get('CUDA_VERSION_NUMBER')}"]
    if library not in matching and matching:
        library = _pick_library(matching)
    out["LD_LIBRARY_PATH"] = os.pathsep.join([str(library), out.get("LD_LIBRARY_PATH", "")])
    return out
