"""What every backend shares: the result of a run and the interface that produces it."""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime

from ..problems import Problem
from ..variants import Kernel

# A run's status. Only "passed" means the kernel ran and matched the reference. Four come from
# the simulator: it crashed (no exit line), aborted (an assertion or error it printed), ran past
# simflow's timeout, or stopped at a max-cycle/instruction limit set in its config. "interrupted":
# the user stopped it (Ctrl-C, SIGTERM); its files are kept.
STATUSES = ("passed", "wrong_result", "compile_error", "launch_error", "refused",
            "crashed", "aborted", "timed_out", "stopped_at_limit", "interrupted")


def utc_timestamp() -> str:
    """UTC, ISO 8601 with microseconds: runs made within one second still sort in the order they were made."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class RunOptions:
    seed: int = 0
    warmup: int = 3
    repeats: int = 20
    check: bool = True
    sample_check: bool = False  # judge a seeded sample of outputs instead of every one (only when asked)


@dataclass
class RunResult:
    """One variant on one problem on one backend: a status and flat metrics.

    With several kernel launches, per-kernel metrics are named `<kernel>.<metric>`; `kernels`
    lists the kernel names in launch order."""

    status: str
    backend: str
    variant: str
    params: dict
    problem: Problem
    fingerprint: str
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    run_id: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # kept files: run folder, log, sources
    seed: int = 0
    created: str = ""  # UTC, ISO 8601

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if not self.created:
            self.created = utc_timestamp()

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def add(self, name: str, value: float, unit: str = "") -> None:
        self.metrics[name] = value
        if unit:
            self.units[name] = unit

    def split_metrics(self) -> dict[str, dict[str, float]]:
        """Metrics grouped by kernel: {"": run-level or single-kernel, "<kernel>": ...} (see the class doc)."""
        groups: dict[str, dict[str, float]] = {}
        for key, value in self.metrics.items():
            head, dot, rest = key.partition(".")
            kernel, name = (head, rest) if dot and head.split("#")[0] in self.kernels else ("", key)
            groups.setdefault(kernel, {})[name] = value
        return groups

    def to_dict(self) -> dict:
        out = asdict(self)
        out["problem"] = self.problem.as_dict()
        out["metrics"] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                          for k, v in self.metrics.items()}
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """The inverse of to_dict (a result.json read back)."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["problem"] = Problem(**data["problem"])
        kw["metrics"] = {k: (math.nan if v is None else v) for k, v in data.get("metrics", {}).items()}
        return cls(**kw)


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
