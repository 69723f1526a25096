"""What every backend shares: the interface that runs a job and produces its record, and the facts a backend
declares about itself."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from ..job import Job
from ..kernels.variants import Kernel
from ..results.record import STATUSES, RunResult, utc_timestamp

__all__ = ["STATUSES", "Availability", "Backend", "Finding", "Job", "RunResult", "utc_timestamp"]


@dataclass(frozen=True)
class Availability:
    available: bool
    detail: str  # what was found, or what is missing
    how_to_get: str = ""


@dataclass(frozen=True)
class Finding:
    """One line of `simflow doctor`: a part simflow can use here or not, and how to get it."""

    component: str
    found: bool
    detail: str
    how_to_get: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


class Backend(ABC):
    """Builds and runs a rendered kernel as a whole: no memcpy-level calls leak out.

    A backend declares its facts here, and callers look them up through the registry
    (backends.backend_class) instead of naming backends: adding one is a module and a registry line."""

    name: ClassVar[str]
    takes_config: ClassVar[bool] = False  # a simulator config is part of each of its jobs
    default_config: ClassVar[str] = ""  # the config a job gets when it names none
    serial: ClassVar[bool] = False  # its jobs run one at a time (timings must not share one device)
    default_metrics: ClassVar[tuple[str, ...]] = ()  # what a comparison shows when the user names none
    speed_metric: ClassVar[str] = ""  # lower is faster; a comparison's speed-up comes from it ('' = none)
    speed_unit: ClassVar[str] = ""  # ... and its unit
    live_log: ClassVar[str] = ""  # a file of the run folder its tool prints progress into, as it runs
    check_max_flops: ClassVar[float | None] = None  # `simflow check` skips larger problems (None: no limit)
    in_check: ClassVar[bool] = True  # `simflow check` runs every variant on it when present
    title: ClassVar[str] = ""  # how a report names it beside another backend ('' = its name)
    short: ClassVar[str] = ""  # ... and in a file name ('' = its name)
    better: ClassVar[dict[str, str]] = {}  # its own metrics' better direction: "lower", "higher", "" (neither)
    shown: ClassVar[tuple[str, ...]] = ()  # what the terminal shows of a run, in order (() = every metric)
    simulator_stats: ClassVar[bool] = False  # its metrics carry GPGPU-Sim's stat names: `explain` reads them
    sampling: ClassVar[bool] = False  # a whole layer can be estimated from sampled batches (`--sample`)
    measures: ClassVar[str] = ""  # the backend whose metrics it measures under the same names (hardware vs model)
    aligned: ClassVar[dict] = {}  # for `measures`: metric -> how the two are brought to one basis (unit, scale)

    @classmethod
    @abstractmethod
    def probe(cls) -> Availability:
        """Is this backend usable here? Cheap, never raises."""

    @classmethod
    def doctor(cls, probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
        """What `simflow doctor` says of this backend: by default its probe; a backend with parts of its own to
        report (a driver, a simulator build, an engine) says more. `probe_builds`/`refresh`: whether costly
        probes run, and run again where cached."""
        avail = cls.probe()
        return [Finding(cls.name, avail.available, avail.detail, avail.how_to_get)]

    @classmethod
    def direction(cls, metric: str) -> str | None:
        """'lower', 'higher' or '' (neither) for one of its metrics; None for a metric it does not make."""
        return cls.better.get(metric)

    @classmethod
    def support(cls, variant) -> dict:
        """Whether it runs the variant with its defaults (and why not), and the parameter values it refuses, as
        known without running anything (`simflow variants`)."""
        return {"accepts_defaults": True, "reason": "", "refuses": []}

    @classmethod
    def config_identity(cls, config: str) -> tuple[str, str]:
        """A config as a job names it (a name or a file): its own name, and what makes two the same before they
        run. Refused (UserError) where there is no such config. Only backends that take a config have one."""
        return config, ""

    @classmethod
    def refusal_of(cls, job: Job, kernel: Kernel) -> str:
        """Why the job cannot run, where that is known before anything is written or said to start (what the
        kernel uses that this backend lacks, by the kernel's `features`; launch limits; memory:
        simflow.kernels.footprint); '' when nothing is known against it."""
        return ""

    @classmethod
    def check(cls, job: Job) -> None:
        """What the job needs here (a toolkit, an image), or a UserError that says what is missing and how to get
        it; cheap, before anything is written or said to start. By default nothing beyond Job.make's checks."""
        return None

    @classmethod
    def instance(cls) -> Backend:
        """The one instance that runs this process's jobs (a GPU context and its module cache are made once)."""
        if cls not in _INSTANCES:
            _INSTANCES[cls] = cls()
        return _INSTANCES[cls]

    def precompile(self, kernels: list[Kernel], processes: int | None = None) -> int:
        """Build these kernels ahead, several at once, where a backend can (its runs then only load them); returns
        how many it built. By default nothing: the run builds its own."""
        return 0

    @abstractmethod
    def run(self, job: Job, folder: Path, kernel: Kernel | None = None) -> RunResult:
        """Compile, run, check and measure the job, its files in `folder` (a new run folder); the record carries the
        job. `kernel`: the job's rendered kernel where the caller has it already (job.kernel() otherwise)."""


_INSTANCES: dict[type, Backend] = {}


def headline(cls: type[Backend], metrics: dict) -> str:
    """The one figure `simflow runs` shows for a run of this backend: its speed metric."""
    name = cls.speed_metric
    return f"{metrics[name]:.6g} {name}" if name and name in metrics else ""
