"""The result of a run, on every backend and path: a status, flat metrics, what was kept.

The one place that names per-kernel metrics (`<kernel>.<metric>`, `<kernel>#<launch uid>.` for a
kernel launched more than once), turns a refusal into a result and records the correctness check.
"""

from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..job import Job
from ..kernels.problems import Problem
from ..processes import owner, owner_alive

# result.json's format. 2: the record carries its job ("job"); a file without "format" is 1 and is read through
# migrate(), its job made from the fields and the environment that held them then.
FORMAT = 2

# A run's status. Only "passed" means the kernel ran and matched the reference. Four come from
# the simulator: it crashed (no exit line), aborted (an assertion or error it printed), ran past
# simflow's timeout, or stopped at a max-cycle/instruction limit set in its config. "interrupted":
# the user stopped it (Ctrl-C, SIGTERM); its files are kept. "running": a run's result.json from its start
# until its end replaces it; one whose process is gone (killed outright) reads as interrupted (settled()).
STATUSES = ("passed", "wrong_result", "compile_error", "launch_error", "refused",
            "crashed", "aborted", "timed_out", "stopped_at_limit", "interrupted", "running")


def to_stored(value):
    """A metric as JSON and SQLite keep it: NaN (the simulator's -nan, a missing value) becomes None."""
    return None if isinstance(value, float) and math.isnan(value) else value


def from_stored(value):
    """The inverse of to_stored: None becomes NaN."""
    return math.nan if value is None else value


def utc_timestamp() -> str:
    """UTC, ISO 8601 with microseconds: runs made within one second still sort in the order they were made."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class RunResult:
    """One variant on one problem on one backend: a status and flat metrics.

    With several kernel launches, per-kernel metrics are named `<kernel>.<metric>`; `kernels`
    lists the kernel names in launch order."""

    status: str
    job: Job  # the job this run made (simflow.job): its variant, parameters, problem, backend and seed are the run's
    fingerprint: str
    reason: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    run_id: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)  # kept files: run folder, log, sources
    created: str = ""  # UTC, ISO 8601
    # A sampled simulation's estimate of the whole layer (simflow.sim.sampling): the sample spec, the batches
    # simulated and their runs, the fraction of the images simulated, and each metric's error bound.
    # Empty for a run that simulated or measured the whole problem.
    estimate: dict = field(default_factory=dict)

    @classmethod
    def of(cls, job: Job, status: str, fingerprint: str, **fields) -> RunResult:
        """The record of a run of `job` (its identity is the job's)."""
        return cls(status=status, job=job, fingerprint=fingerprint, **fields)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")
        if not self.created:
            self.created = utc_timestamp()

    # The run's identity is its job's, read from it: a record cannot say one thing and its job another.
    @property
    def variant(self) -> str:
        return self.job.variant

    @property
    def params(self) -> dict:
        """The job's parameters as a dict (a copy: the job's own are immutable)."""
        return dict(self.job.params)

    @property
    def problem(self) -> Problem:
        return self.job.problem

    @property
    def backend(self) -> str:
        return self.job.backend

    @property
    def seed(self) -> int:
        return self.job.seed

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def sampled(self) -> bool:
        """Its metrics are estimates from sampled simulation, each with a bound in estimate["bounds"]."""
        return bool(self.estimate)

    def bound(self, name: str) -> float:
        """The absolute error bound of an estimated metric; NaN for a measured one."""
        value = self.estimate.get("bounds", {}).get(name) if self.estimate else None
        return math.nan if value is None else float(value)

    @classmethod
    def refusal(cls, job: Job, kernel, reason: str, environment: dict | None = None) -> RunResult:
        """A run that was not made, and why: the same record on every path (a backend, a sweep)."""
        return cls.of(job, "refused", kernel.fingerprint(), reason=reason, kernels=list(kernel.kernel_names),
                      environment=dict(environment or {}))

    @classmethod
    def running(cls, job: Job, kernel, run_id: str, artifacts: dict, longest_s: float) -> RunResult:
        """The record of a run from its start: written to its folder first, so that a run whose process is
        killed outright is still listed and importable (as interrupted). `artifacts`: the files it will keep
        (run_dir first); `longest_s`: past this the run has surely ended (its timeout and the watchdog's grace),
        wherever it ran."""
        deadline = (datetime.now(UTC) + timedelta(seconds=longest_s)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return cls.of(job, "running", kernel.fingerprint(),
                      reason=f"running since {utc_timestamp()} (process {owner()})",
                      kernels=list(kernel.kernel_names), run_id=run_id, artifacts=dict(artifacts),
                      environment={"owner": owner(), "deadline": deadline})

    def moved_to(self, folder: Path) -> RunResult:
        """This run with its files in `folder`, where its record names them in the run folder it was made in (a run
        folder, or a whole results folder, copied from another machine or kept in a repository): `show`, `explain`,
        the simulated clock and the fidelity tables then find them here."""
        made = self.artifacts.get("run_dir")
        if not made or Path(made).resolve() == folder.resolve():
            return self
        self.artifacts = {kind: str(folder.resolve() / Path(where).relative_to(made))
                          if Path(where).is_relative_to(made) else where for kind, where in self.artifacts.items()}
        return self

    def settled(self) -> RunResult:
        """A running record whose process has ended without finishing it (`kill -9`, a lost machine) reads as
        interrupted, its files kept; any other record is itself."""
        if self.status != "running":
            return self
        past = self.environment.get("deadline", "9") < datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if not past and owner_alive(self.environment.get("owner", "")):
            return self
        kept = {}
        for kind, path in self.artifacts.items():  # what the run left: a log may be compressed by now
            found = next((p for p in (path, path + ".gz") if os.path.exists(p)), "")
            if found:
                kept[kind] = found
        self.artifacts = kept
        self.status = "interrupted"
        self.reason = (f"its process ({self.environment.get('owner', '?')}: host, pid, start) ended before the run "
                       f"did (killed outright); files kept in {self.artifacts.get('run_dir', 'its run folder')}")
        return self

    def add(self, name: str, value: float, unit: str = "") -> None:
        self.metrics[name] = value
        if unit:
            self.units[name] = unit

    @staticmethod
    def kernel_prefix(kernel: str, several: bool, launch_uid: int | None = None) -> str:
        """How a kernel's metrics are named when a run has several launches: '<kernel>.', or
        '<kernel>#<launch uid>.' for a kernel launched more than once; '' for a single kernel."""
        if not several:
            return ""
        return f"{kernel}#{launch_uid}." if launch_uid is not None else f"{kernel}."

    def judge(self, check, context: str = "") -> None:
        """Record the correctness check (reference.Check); a failed one makes the run wrong_result."""
        check.record(self)
        if not check.passed and self.status == "passed":
            self.status = "wrong_result"
            self.reason = f"{context}: {check.reason}" if context else check.reason

    def split_metrics(self) -> dict[str, dict[str, float]]:
        """Metrics grouped by kernel: {"": run-level or single-kernel, "<kernel>": ...} (see the class doc)."""
        groups: dict[str, dict[str, float]] = {}
        for key, value in self.metrics.items():
            head, dot, rest = key.partition(".")
            kernel, name = (head, rest) if dot and head.split("#")[0] in self.kernels else ("", key)
            groups.setdefault(kernel, {})[name] = value
        return groups

    def by_kernel(self, names: tuple[str, ...] = (), totals: bool = True) -> list[dict]:
        """Rows of a metric (`names`, in order, or every one) with a column per kernel and its unit; the run's
        totals as a column 'value' beside several kernels (unless `totals` is False), the kernel's name for one."""
        groups = self.split_metrics()
        if not totals or (len(groups) > 1 and not groups.get("")):
            groups.pop("", None)
        if "" in groups:  # the totals' column first, whichever metric was recorded first
            groups = {"": groups.pop(""), **groups}
        order = list(names) or list(dict.fromkeys(n for values in groups.values() for n in values))
        alone = self.kernels[0] if len(groups) == 1 and len(self.kernels) == 1 else "value"
        rows = []
        for name in order:
            present = {kernel or alone: values[name] for kernel, values in groups.items() if name in values}
            if present:
                unit = next((self.units.get(f"{k}.{name}" if k else name, "") for k in groups if name in groups[k]
                             and self.units.get(f"{k}.{name}" if k else name)), "")
                rows.append({"metric": name, **present, "unit": unit})
        return rows

    def to_dict(self) -> dict:
        """result.json: the run's identity written out beside its job (for readers of the file), every field in
        the order the file has always had."""
        out = {"format": FORMAT, "status": self.status, "backend": self.backend, "variant": self.variant,
               "params": self.params, "problem": self.problem.as_dict()}
        for f in fields(self):
            if f.name == "job":
                continue
            value = getattr(self, f.name)
            out[f.name] = {k: to_stored(v) for k, v in value.items()} if f.name == "metrics" else copy.deepcopy(value)
            if f.name == "artifacts":
                out["seed"] = self.seed
            elif f.name == "estimate":
                out["job"] = self.job.as_dict()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        """The inverse of to_dict (a result.json read back, an older format through migrate)."""
        data = migrate(data)
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["metrics"] = {k: from_stored(v) for k, v in data.get("metrics", {}).items()}
        kw["job"] = Job.from_dict(data["job"])
        return cls(**kw)


def migrate(data: dict) -> dict:
    """A result.json of an older format as the current one. Format 1 had no job: its variant, parameters,
    problem, backend and seed were fields, its simulator config and image in the environment."""
    version = data.get("format", 1)
    if version > FORMAT:
        raise ValueError(f"result.json format {version} is newer than this simflow reads ({FORMAT}): update simflow")
    if version == 1:
        env = data.get("environment", {})
        data = {**data, "format": FORMAT, "job": {
            "variant": data["variant"], "params": data.get("params", {}), "problem": data["problem"],
            "backend": data["backend"], "config": env.get("config", ""), "config_name": env.get("config", ""),
            "config_key": env.get("config_key", ""), "docker_image": env.get("docker_image", ""),
            "seed": data.get("seed", 0)}}
    return data
