"""Running a job (simflow.job.Job): in this process or a worker's, its files in a new run folder.

The caller stores the returned record, so a results database is written by one process only.
"""

from __future__ import annotations

import json
import shutil
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from ..job import Job
from ..registry import backend_class
from ..results.folders import keep_result, new_run_folder
from ..results.record import RunResult
from ..settings import Settings, current, use


def run_job(job: Job, results: Path, watch=None) -> RunResult:
    """Run one job; its files go to <results>/runs/<run id>/ (the rendered kernel, job.json, what the backend
    keeps, result.json). Returns the record to store, with `job_wall_s`: the whole job's wall time (render,
    build, run, check), simflow's overhead included. A job refused before anything ran (a missing simulator,
    an image that is not there) leaves no folder. `watch(log, kernel_names)`: a context manager around the run
    that may read the backend's live log as it grows (a progress line)."""
    start = time.monotonic()
    kernel = job.kernel()
    cls = backend_class(job.backend)
    refusal = cls.refusal_of(job, kernel)  # known now (limits, memory): no tool or device is needed to say it
    backend = None if refusal else cls.instance()
    run_id, folder = new_run_folder(job.variant, results)
    try:
        (folder / "kernel.cu").write_text(kernel.source)
        (folder / "job.json").write_text(json.dumps(job.as_dict(), indent=2) + "\n")
        if backend is None:
            result = RunResult.refusal(job, kernel, refusal)
        else:
            with watch(folder / backend.live_log, kernel.kernel_names) if watch and backend.live_log else \
                    nullcontext():
                result = backend.run(job, folder, kernel)
    except BaseException:
        if not (folder / "result.json").exists():  # nothing ran: nothing to keep
            shutil.rmtree(folder, ignore_errors=True)
        raise
    result.job = job
    result.run_id = run_id
    result.artifacts = {"run_dir": str(folder), "kernel_source": str(folder / "kernel.cu"), **result.artifacts}
    result.add("job_wall_s", round(time.monotonic() - start, 3), "s")
    keep_result(result, folder)
    return result


@dataclass
class JobOutcome:
    """What a worker sends back: the record, or why the job could not run at all."""

    job: Job
    result: RunResult | None = None
    error: str = ""
    extra: dict = field(default_factory=dict)


def take_settings(handed: Settings) -> None:
    """In a worker process: the settings its parent handed over, with what they load (the user's stats and
    variants; registered backends are read from them when asked for)."""
    use(handed)
    if handed.stats:
        from ..sim.catalogue import load_user_stats

        load_user_stats(list(handed.stats))
    if handed.variants:
        from ..kernels.variants import reload_variants

        reload_variants()


def run_job_safely(job: Job, results: str, handed: Settings | None = None) -> JobOutcome:
    """For executors: never raises, so one bad job cannot stop a sweep. `handed`: the sweep's settings, for a
    worker that did not start with them (a Dask worker)."""
    if handed is not None and handed != current():
        take_settings(handed)
    try:
        return JobOutcome(job, run_job(job, Path(results)))
    except Exception as exc:  # noqa: BLE001 (reported per job, with its type)
        return JobOutcome(job, error=f"{type(exc).__name__}: {exc}")
    except KeyboardInterrupt:  # stopped before its run had a simulator to stop: said, not lost
        from ..processes import interruption

        return JobOutcome(job, error=f"stopped {interruption()} before its run started")
