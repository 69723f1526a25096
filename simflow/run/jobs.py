"""A job is one run to make: variant x parameters x problem x backend x simulator config.

`run_job` makes it (in this process or a worker's) and keeps its files in a run folder; the
caller stores the returned record, so a results database is written by one process only.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..backends import RunOptions, RunResult, backend_class
from ..backends.base import DEFAULT_REPEATS, DEFAULT_WARMUP
from ..kernels.problems import Problem
from ..kernels.variants import Kernel, get_variant, show_value
from ..results.folders import keep_result, new_run_folder
from ..sim.config import DEFAULT_CONFIG, DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class Job:
    variant: str
    params: tuple[tuple[str, object], ...]  # resolved, in the variant's order
    problem: Problem
    backend: str
    config: str = ""  # simulator config (name or overlay path); '' on a GPU
    docker_image: str = ""
    engine: str = ""  # docker or podman, for docker_image ('' = $SIMFLOW_ENGINE or the one on PATH)
    seed: int = 0
    repeats: int = DEFAULT_REPEATS
    warmup: int = DEFAULT_WARMUP
    timeout_s: float = DEFAULT_TIMEOUT_S
    sample_check: bool = False  # GPU: judge a seeded sample of outputs, not every one

    @staticmethod
    def make(variant: str, params: dict, problem: Problem, backend: str, **kw) -> Job:
        resolved = get_variant(variant).resolve(params)
        if backend_class(backend).takes_config and not kw.get("config"):
            kw["config"] = DEFAULT_CONFIG
        return Job(variant, tuple(resolved.items()), problem, backend, **kw)

    def kernel(self) -> Kernel:
        return get_variant(self.variant).render(self.problem, dict(self.params))

    @property
    def key(self) -> tuple:
        """What makes two jobs the same run (for de-duplication)."""
        return self.variant, self.params, tuple(sorted(self.problem.as_dict().items())), self.backend, self.config

    def describe(self) -> str:
        params = " ".join(f"{k}={show_value(v)}" for k, v in self.params)
        where = f" {self.config}" if self.config else ""
        return f"{self.variant} [{params}] {self.problem.name} {self.backend}{where}"

    def config_key(self) -> str:
        if not backend_class(self.backend).takes_config:
            return ""
        from ..sim.config import config_key, load_config

        return config_key(load_config(self.config))

    def as_dict(self) -> dict:
        out = asdict(self)
        out["params"] = dict(self.params)
        out["problem"] = self.problem.as_dict()
        return out


def run_job(job: Job, results: Path) -> RunResult:
    """Run one job; its files go to <results>/runs/<run id>/. Returns the record to store, with
    `job_wall_s`: the whole job's wall time (render, build, run, check), simflow's overhead included."""
    start = time.monotonic()
    result = _run_job(job, results)
    result.add("job_wall_s", round(time.monotonic() - start, 3), "s")
    keep_result(result, Path(result.artifacts["run_dir"]))  # every job has a run folder by now
    return result


def _run_job(job: Job, results: Path) -> RunResult:
    kernel = job.kernel()
    backend = backend_class(job.backend).from_job(job, results)
    options = RunOptions(seed=job.seed, repeats=job.repeats, warmup=job.warmup, sample_check=job.sample_check)
    result = backend.run(kernel, job.problem.B, options)
    if not result.run_id:  # the backend kept no folder of its own (a GPU run, a refusal): one like every run's
        result.run_id, folder = new_run_folder(job.variant, results)
        (folder / "kernel.cu").write_text(kernel.source)
        (folder / "job.json").write_text(json.dumps(job.as_dict(), indent=2) + "\n")
        result.artifacts = {"run_dir": str(folder), "kernel_source": str(folder / "kernel.cu"), **result.artifacts}
    return result


@dataclass
class JobOutcome:
    """What a worker sends back: the record, or why the job could not run at all."""

    job: Job
    result: RunResult | None = None
    error: str = ""
    extra: dict = field(default_factory=dict)


def run_job_safely(job: Job, results: str) -> JobOutcome:
    """For executors: never raises, so one bad job cannot stop a sweep."""
    try:
        return JobOutcome(job, run_job(job, Path(results)))
    except Exception as exc:  # noqa: BLE001 (reported per job, with its type)
        return JobOutcome(job, error=f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:  # stopped before its run had a simulator to stop: said, not lost
        return JobOutcome(job, error="interrupted (Ctrl-C or SIGTERM) before its run started")
