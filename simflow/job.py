"""A job: one run to make, variant x parameters x problem x backend (x simulator config), and the one typed
record that travels from the command line to the store. It is made once (`Job.make`: parameters resolved,
the backend's default config filled in and the config's identity fixed), handed to the backend
(`Backend.run(job, folder)`), kept in the run's record (`RunResult.job`, result.json's "job") and stored from
there: variant, parameters, problem, backend, runner, config and seed are the job's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING

from .errors import UserError
from .kernels.problems import Problem
from .kernels.values import Params, show_value
from .registry import backend_class

if TYPE_CHECKING:
    from .kernels.variants import Kernel

DEFAULT_WARMUP = 3  # untimed launches before the timed ones
DEFAULT_REPEATS = 20  # timed launches (the median is reported)
DEFAULT_TIMEOUT_S = 3600  # seconds before a simulator (or a profiler) is stopped


@dataclass(frozen=True)
class RunOption:
    """A run option of a job, spelled once for every front door: the Job field it sets, its keyword in
    simflow.api.run and .sim, its key in a sweep file (`flag`) and its option of `simflow run`, `sim` and
    `profile` (the same with '-' for '_'). A new run option is a Job field, an entry in RUN_OPTIONS and the backend
    that reads it."""

    field: str
    api: str  # keyword of simflow.api.run
    flag: str  # sweep-file key; the command-line option is the same with "-" for "_"
    kind: type  # int, float, bool or str
    least: float | None = None  # the smallest number accepted (None: any)
    more_than: bool = False  # least itself is not accepted
    unit: str = ""  # said after a bound
    choices: tuple = ()
    metavar: str | None = None
    help: str = ""

    def check(self, value, where: str = "") -> object:
        """The value, or a UserError that says what it must be (`where`: the file and line it came from)."""
        numeric = self.kind in (int, float)
        if (numeric and (isinstance(value, bool) or not isinstance(value, int | float if self.kind is float else int))
                or not numeric and not isinstance(value, self.kind)):
            what = {int: "a number", float: "a number", bool: "true or false", str: "a string"}[self.kind]
            raise UserError(f"{where}{self.flag} must be {what}, got {value!r}")
        if self.least is not None and (value <= self.least if self.more_than else value < self.least):
            bound = f"more than {self.least:g}" if self.more_than else f"{self.least:g} or more"
            raise UserError(f"{where}{self.flag} must be {bound}{' ' + self.unit if self.unit else ''}, got {value:g}")
        if self.choices and value not in self.choices:
            raise UserError(f"{where}{self.flag} must be one of {', '.join(self.choices)}, got {value!r}")
        return value


RUN_OPTIONS = (
    RunOption("seed", "seed", "seed", int, 0, help="the inputs' seed (default 0)"),
    RunOption("warmup", "warmup", "warmup", int, 0, help="timed backends: untimed launches"),
    RunOption("repeats", "repeats", "repeats", int, 1, help="timed backends: timed launches"),
    RunOption("sample_check", "sample_check", "sample_check", bool,
              help="check a seeded sample of 4096 outputs instead of every one (the default)"),
    RunOption("docker_image", "docker", "docker", str, metavar="IMAGE",
              help="simulate inside this image (built by simflow image build)"),
    RunOption("engine", "engine", "engine", str, choices=("docker", "podman"),
              help="container engine for --docker (default: $SIMFLOW_ENGINE, else docker, else podman)"),
    RunOption("timeout_s", "timeout_s", "timeout", float, 0, more_than=True, unit="seconds",
              help="seconds before the simulator (or ncu) is stopped"),
)


def job_options(given: dict) -> dict:
    """Job fields from run options by their api keyword (None: the default), each checked."""
    by_api = {o.api: o for o in RUN_OPTIONS}
    unknown = set(given) - set(by_api)
    if unknown:
        raise UserError(f"unknown run option {', '.join(sorted(unknown))}; valid: {', '.join(by_api)}")
    return {by_api[k].field: by_api[k].check(v) for k, v in given.items() if v is not None}


@dataclass(frozen=True)
class Job:
    variant: str
    params: Params  # resolved, in the variant's order
    problem: Problem
    backend: str
    config: str = ""  # simulator config as named (a name or an overlay's path); '' where the backend takes none
    config_name: str = ""  # the config's own name (an overlay's file stem): what runs are selected by
    config_key: str = ""  # what makes two configs the same before they run (base and options)
    docker_image: str = ""
    engine: str = ""  # docker or podman, for docker_image ('' = $SIMFLOW_ENGINE or the one on PATH)
    seed: int = 0
    repeats: int = DEFAULT_REPEATS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    sample_check: bool = False  # GPU: judge a seeded sample of outputs, not every one
    launch: str = ""  # the one kernel the program launches, a part of sampled simulation ('' = every launch)

    @staticmethod
    def make(variant: str, params: dict, problem: Problem, backend: str, **kw) -> Job:
        """The job, checked: an unknown variant, backend, parameter or config is refused here, once."""
        from .kernels.variants import get_variant  # the kernels (and numpy) load when a job is made

        resolved = get_variant(variant).resolve(params)
        cls = backend_class(backend)
        if (kw.get("config") or kw.get("docker_image") or kw.get("engine")) and not cls.takes_config:
            raise UserError(not_taken(backend, "a simulator config"))
        config = kw.pop("config", "") or cls.default_config
        name, key = cls.config_identity(config) if config else ("", "")
        return Job(variant, Params(resolved), problem, backend, config, name, key, **kw)

    @property
    def runner(self) -> str:
        """Where it runs: 'native', or 'docker:IMAGE' (whichever engine runs the image)."""
        return f"docker:{self.docker_image}" if self.docker_image else "native"

    def kernel(self) -> Kernel:
        """The job's kernel, rendered once: a job is a value, and its render is the same each time it is asked for
        (the sampler and the sweep ask up to four times a job)."""
        from .kernels.variants import rendered

        kernel = rendered(self.variant, self.params, self.problem)
        if self.launch:
            if self.launch not in kernel.kernel_names:
                raise UserError(f"{self.variant} launches no kernel {self.launch!r}; it launches "
                                f"{', '.join(kernel.kernel_names)}")
            kernel = replace(kernel, only=self.launch)
        return kernel

    @property
    def key(self) -> tuple:
        """What makes two jobs the same run (for de-duplication)."""
        return (self.variant, self.params, tuple(sorted(self.problem.as_dict().items())), self.backend, self.config,
                self.launch)

    def describe(self) -> str:
        params = " ".join(f"{k}={show_value(v)}" for k, v in self.params.items())
        where = f" {self.config}" if self.config else ""
        only = f" (launch {self.launch} only)" if self.launch else ""
        return f"{self.variant} [{params}] {self.problem.name} {self.backend}{where}{only}"

    def as_dict(self) -> dict:
        out = asdict(self)
        out["params"] = dict(self.params)
        out["problem"] = self.problem.as_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> Job:
        """The inverse of as_dict (result.json's "job", run.json's, job.json)."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["params"] = Params(data.get("params", {}))
        kw["problem"] = Problem(**data["problem"])
        return cls(**kw)


def not_taken(backend: str, what: str) -> str:
    """Why a backend refuses a simulator config (with a container image or engine) or sampled simulation."""
    attr = "takes_config" if "config" in what else "sampling"
    from .registry import backend_names

    able = ", ".join(n for n in backend_names() if getattr(backend_class(n), attr))
    return (f"--config, --docker, --engine and --sample are for backends with {what} ({able}); backend {backend} "
            "takes none")
