"""What every backend shares: the options of a run and the interface that produces its result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from ..kernels.variants import Kernel
from ..results.record import STATUSES, RunResult, utc_timestamp

__all__ = ["STATUSES", "Availability", "Backend", "Finding", "RunOptions", "RunResult", "utc_timestamp"]

DEFAULT_WARMUP = 3  # untimed launches before the timed ones
DEFAULT_REPEATS = 20  # timed launches (the median is reported)


@dataclass
class RunOptions:
    seed: int = 0
    warmup: int = DEFAULT_WARMUP
    repeats: int = DEFAULT_REPEATS
    check: bool = True
    sample_check: bool = False  # judge a seeded sample of outputs instead of every one (only when asked)


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
    serial: ClassVar[bool] = False  # its jobs run one at a time (timings must not share one device)
    default_metrics: ClassVar[tuple[str, ...]] = ()  # what a comparison shows when the user names none
    speed_metric: ClassVar[str] = ""  # lower is faster; a comparison's speed-up comes from it ('' = none)
    check_max_flops: ClassVar[float | None] = None  # `simflow check` skips larger problems (None: no limit)
    in_check: ClassVar[bool] = True  # `simflow check` runs every variant on it when present

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
    def from_job(cls, job, results: Path) -> Backend:
        """The backend that runs `job` (jobs.Job), its run folders under `results`."""
        return cls()

    @abstractmethod
    def run(self, kernel: Kernel, batch: int, options: RunOptions) -> RunResult:
        """Compile, run, check and measure `kernel` on `batch` images."""



def headline(cls: type[Backend], metrics: dict) -> str:
    """The one figure `simflow runs` shows for a run of this backend: its speed metric."""
    name = cls.speed_metric
    return f"{metrics[name]:.6g} {name}" if name and name in metrics else ""
