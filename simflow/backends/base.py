"""What every backend shares: the options of a run and the interface that produces its result."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..results import STATUSES, RunResult, utc_timestamp
from ..variants import Kernel

__all__ = ["STATUSES", "Availability", "Backend", "RunOptions", "RunResult", "utc_timestamp"]

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


class Backend(ABC):
    """Builds and runs a rendered kernel as a whole: no memcpy-level calls leak out."""

    name: str

    @classmethod
    @abstractmethod
    def probe(cls) -> Availability:
        """Is this backend usable here? Cheap, never raises."""

    @abstractmethod
    def run(self, kernel: Kernel, batch: int, options: RunOptions) -> RunResult:
        """Compile, run, check and measure `kernel` on `batch` images."""
