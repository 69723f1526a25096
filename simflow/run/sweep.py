"""Sweeps: the jobs of a sweep file (sweep_file.py) run on local worker processes or on Dask.

A job whose run is already stored (same rendered source, problem, backend and config) is not run
again, so an interrupted sweep resumes. Runs go to local worker processes or to Dask (a scheduler
address, or Slurm/PBS through dask-jobqueue); every record is written by this process, as each run
comes back. A job may feed others as it ends (`then`): a sampled simulation's samples start as soon as their
probe has ended, while other probes still run (simflow.run.sampled).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..processes import die_with_parent, exit_when_orphaned, job_in_hand, sigterm_as_ctrl_c
from ..registry import backend_class
from ..results.folders import keep_result, new_run_folder, write_json
from ..results.record import RunResult
from ..results.store import Store, StoreError
from ..settings import Settings, current
from ..tables import duration
from .jobs import JobOutcome, run_job_safely, take_settings
from .sweep_file import Sweep

EXECUTORS = ("local", "dask", "slurm", "pbs")
INTERRUPT_GRACE_S = 30  # how long an interrupted sweep waits for its workers' interrupted runs


class Progress:
    """A sweep's one bar on stderr, on a terminal only (tqdm): jobs done of all, failed, running, and an ETA from
    the finished jobs' own durations shared over the workers. Each job is named with its status as it ends, a
    failure with its reason, above the bar."""

    def __init__(self, total: int, workers: int = 1, quiet: bool = False):
        from tqdm import tqdm

        self.total, self.workers = total, max(1, workers)
        self.done = self.failed = self.running = 0
        self.durations: list[float] = []
        self.started = time.monotonic()
        self.live = not quiet and sys.stderr.isatty()
        self.bar = tqdm(total=total, file=sys.stderr, disable=not self.live, ncols=shutil.get_terminal_size().columns,
                        bar_format="[{bar:24}] {n_fmt}/{total_fmt} {desc}")

    def grow(self, more: int) -> None:
        """More jobs than first counted (a sampled simulation's samples, known once its probes ran)."""
        self.total += more
        self.bar.total = self.total
        self.show()

    def ended(self, job: Job, result: RunResult | None, error: str = "") -> None:
        from ..backends.base import headline

        self.done += 1
        failed = result is None or not result.passed
        self.failed += failed
        if result is not None and "job_wall_s" in result.metrics:
            self.durations.append(float(result.metrics["job_wall_s"]))
        if self.live:  # the job, then a failure's reason below it, each cut to the terminal's width
            columns = shutil.get_terminal_size().columns
            took = f", {duration(result.metrics['job_wall_s'])}" if result and "job_wall_s" in result.metrics else ""
            figure = headline(backend_class(job.backend), result.metrics) if result and not failed else ""
            said = [f"  {'could not run' if result is None else result.status:<13} {job.describe()}"
                    + (f": {figure}" if figure else "") + took]
            why = error if result is None else (result.reason.splitlines()[0] if failed and result.reason else "")
            if why:
                said.append(f"      {why}")
            self.bar.write("\n".join(line[:columns] for line in said), file=sys.stderr)
        self.bar.update(1)
        self.show()

    def show(self) -> None:
        if not self.live:
            return
        elapsed = time.monotonic() - self.started
        left = self.total - self.done
        eta = ""
        if self.durations and left:  # each job's own time, shared over the workers that run the rest
            mean = sum(self.durations) / len(self.durations)
            eta = f", about {duration(mean * left / min(self.workers, left))} left"
        self.bar.set_description_str(f"{self.failed} failed, {self.running} running, {duration(elapsed)} elapsed{eta}")

    def finish(self) -> None:
        self.bar.close()


@dataclass
class SweepReport:
    name: str
    total: int
    duplicates: int
    cached: list[str] = field(default_factory=list)  # run ids reused
    stored: list[str] = field(default_factory=list)  # run ids made now
    failed: list[tuple[str, str]] = field(default_factory=list)  # (job or run id, reason)
    errors: list[tuple[str, str]] = field(default_factory=list)  # jobs that could not run at all
    refused: list[tuple[str, str]] = field(default_factory=list)  # (file:line job, why) skipped at render time
    interrupted: bool = False  # Ctrl-C or SIGTERM: the runs in flight were recorded as 'interrupted'
    wall_s: float = 0.0

    def grouped_errors(self) -> list[tuple[list[str], str]]:
        """Errors with the same text once, with every job they stopped (a missing backend, say)."""
        groups: dict[str, list[str]] = {}
        for job, error in self.errors:
            groups.setdefault(error, []).append(job)
        return [(jobs, error) for error, jobs in groups.items()]

    def as_dict(self) -> dict:
        return {"name": self.name, "jobs": self.total, "duplicates_removed": self.duplicates,
                "cached": self.cached, "run": self.stored, "failed": [{"run": r, "reason": why} for r, why in
                                                                     self.failed],
                "errors": [{"job": j, "error": e} for j, e in self.errors],
                "refused": [{"job": j, "reason": why} for j, why in self.refused], "interrupted": self.interrupted,
                "wall_s": round(self.wall_s, 3)}


@dataclass
class Plan:
    todo: list[Job]  # to run
    cached: list[str]  # stored runs that answer jobs already
    refused: list[tuple[Job, str]]  # jobs whose kernel cannot be rendered for their problem, and why
    answered: list[Job] = field(default_factory=list)  # the jobs `cached` answers, in its order


def plan_jobs(jobs: list[Job], store: Store, retry_failed: bool = False) -> Plan:
    """The jobs still to run, the stored runs that already answer others (the cache), and the jobs a
    variant refuses when it renders (e.g. WMMA on 4 output channels)."""
    result = Plan([], [], [])
    for job in jobs:
        try:
            fingerprint = job.kernel().fingerprint()
        except UserError as exc:  # the variant refuses this layer (a hardware limit, a user variant's [[refuse]])
            result.refused.append((job, str(exc)))
            continue
        run_id = store.cached(fingerprint, job.problem, job.backend, job.config_key, failed_too=not retry_failed)
        if run_id:
            result.cached.append(run_id)
            result.answered.append(job)
        else:
            result.todo.append(job)
    return result


def plan(sweep: Sweep, store: Store, retry_failed: bool = False) -> Plan:
    """A sweep file's plan (plan_jobs): refused jobs are skipped and named, unless the whole sweep can run
    nothing."""
    result = plan_jobs(sweep.jobs, store, retry_failed)
    if result.refused and len(result.refused) == len(sweep.jobs):
        raise UserError(f"every job of {sweep.path} is refused; the first, {sweep.where(result.refused[0][0])} "
                        f"({result.refused[0][0].describe()}): {result.refused[0][1]}")
    return result


class _Feed:
    """The jobs a sweep still has to start, in order, one queue a lane (serial: the GPU's, one at a time), each job
    once: a sweep's own, then those its `then` adds as others end (a sampled simulation's samples after their
    probe)."""

    def __init__(self):
        self.queues: dict[bool, deque[Job]] = {False: deque(), True: deque()}
        self.seen: set[Job] = set()

    def new(self, jobs) -> list[Job]:
        """The jobs not seen before, now seen."""
        new = [job for job in dict.fromkeys(jobs) if job not in self.seen]
        self.seen.update(new)
        return new

    def put(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.queues[bool(backend_class(job.backend).serial)].append(job)

    def __bool__(self) -> bool:
        return any(self.queues.values())


def run_sweep(sweep: Sweep, store: Store, *, workers: int | None = None, executor: str = "local",
              scheduler: str | None = None, retry_failed: bool = False, quiet: bool = False,
              progress: Progress | None = None, then: Callable[[Job], list[Job]] | None = None) -> SweepReport:
    """Run the sweep's jobs the store does not answer yet; `progress`: a bar shared with other sweeps (a sampled
    simulation's), else one of its own. `then(job)`: jobs that may start once `job` has ended (run, failed, refused
    or answered by the store), run in this same sweep as workers come free (a sampled simulation's samples once
    their probe ended); never after an interruption."""
    if executor not in EXECUTORS:
        raise UserError(f"unknown executor {executor!r}; valid executors: {', '.join(EXECUTORS)}")
    started = time.monotonic()
    report = SweepReport(sweep.name, len(sweep.jobs), sweep.duplicates)
    planned = plan(sweep, store, retry_failed)
    workers = workers or os.cpu_count() or 1
    own = progress is None
    if not quiet and own:
        print(f"sweep {sweep.name}: {len(sweep.jobs)} jobs ({sweep.duplicates} duplicates removed), "
              f"{len(planned.cached)} already stored, {len(planned.todo)} to run on {executor} "
              f"({workers if executor == 'local' else 'dask'} workers)", file=sys.stderr)
    if own:
        progress = Progress(total=len(planned.todo), workers=workers, quiet=quiet)
    else:  # a shared bar counted every job: those the store answers are not run
        progress.grow(len(planned.todo) - len(sweep.jobs))
    feed = _Feed()
    feed.new(sweep.jobs)
    where = {job: f"{sweep.where(job)} " for job in sweep.jobs}

    def take(planned: Plan) -> None:
        """A plan's refusals stored, its runs to make fed, and what follows the jobs that ended already."""
        report.cached += planned.cached
        report.refused += [(f"{where.get(job, '')}{job.describe()}", why) for job, why in planned.refused]
        for job, why in planned.refused:  # a refusal is a run's record like any other, stored once
            fingerprint = refusal_fingerprint(job)
            if not store.cached(fingerprint, job.problem, job.backend, job.config_key):
                result = refused_result(job, why, fingerprint, store.root)
                try:
                    report.stored.append(store.add(result))
                except StoreError as exc:
                    report.errors.append((job.describe(), f"{exc}; its files are in {result.artifacts['run_dir']}"))
        feed.put(planned.todo)
        for job in planned.answered + [job for job, _ in planned.refused]:
            follow(job)

    def follow(job: Job) -> None:
        if then is not None and not report.interrupted:
            more = plan_jobs(feed.new(then(job)), store, retry_failed)
            progress.grow(len(more.todo))
            take(more)

    take(planned)
    if feed:
        if executor == "local":
            outcomes = _local(feed, store.root, workers, progress)
        else:
            outcomes = _dask(feed, store.root, workers, scheduler, executor, sweep.dask, progress)
        try:
            for outcome in outcomes:
                _record(outcome, store, report, progress)
                follow(outcome.job)
        except KeyboardInterrupt:
            report.interrupted = True
    if own:
        progress.finish()
    report.wall_s = time.monotonic() - started
    return report


def refusal_fingerprint(job: Job) -> str:
    """Stands for the source a refused job never had: the same job refused again is the same run."""
    key = json.dumps(["refused", job.variant, list(job.params.items()), job.problem.as_dict(), job.backend, job.config],
                     sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def refused_result(job: Job, why: str, fingerprint: str, results: Path) -> RunResult:
    """The record of a job its variant refused to render, with a run folder holding the job."""
    result = RunResult.of(job, "refused", fingerprint, reason=why)
    result.run_id, folder = new_run_folder(job.variant, results)
    write_json(folder / "job.json", job.as_dict())
    result.artifacts = {"run_dir": str(folder)}
    keep_result(result, folder)
    return result


def _record(outcome: JobOutcome, store: Store, report: SweepReport, progress: Progress) -> None:
    result = outcome.result
    if result is None:
        report.errors.append((outcome.job.describe(), outcome.error))
        progress.ended(outcome.job, None, outcome.error)
        return
    try:
        store.add(result)
    except StoreError as exc:
        error = f"{exc}; its files are in {result.artifacts.get('run_dir')}"
        report.errors.append((outcome.job.describe(), error))
        progress.ended(outcome.job, None, error)
        return
    report.stored.append(result.run_id)
    if not result.passed:
        first_line = result.reason.splitlines()[0] if result.reason else ""
        report.failed.append((result.run_id, f"{result.status}: {first_line}"))
    progress.ended(outcome.job, result)


# What a job whose worker process died outright is reported with (the pool stops its other workers with it).
WORKER_DIED = ("its worker process died outright (killed by the system, e.g. for memory, or a crash in native code); "
               "a worker beside it in the same pool is stopped with it. What its run wrote is in its folder; the rest "
               "of the sweep ran on. Run the sweep again to retry it (what is stored is not run again)")


@dataclass
class _Lane:
    """A pool of sweep workers, how many jobs it runs at once and how many it runs now (its jobs wait in the feed)."""

    pool: object  # a ProcessPoolExecutor: a new one when a worker's death broke the last
    width: int
    running: int = 0


def _local(feed: _Feed, results: Path, workers: int, progress: Progress) -> Iterator[JobOutcome]:
    """Worker processes on this machine. GPU jobs go one at a time (timings must not share the GPU). A worker that
    dies outright breaks its pool: the jobs it held are reported (WORKER_DIED) and a new pool runs the rest. Jobs
    the feed gains while others run (after an outcome is yielded) start as workers come free."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")  # no CUDA state or locks inherited by a fork
    _quiet_resource_tracker()

    def new_pool(width: int) -> ProcessPoolExecutor:  # its workers start as jobs come (not fork: on demand)
        return ProcessPoolExecutor(max_workers=width, mp_context=context, initializer=_worker_setup,
                                   initargs=(current(),))

    lanes: dict[bool, _Lane] = {}  # serial (one device: one at a time) or not
    pending: dict = {}  # future -> (its lane, the pool it went to, its job)

    def fill() -> None:  # keep each pool exactly full, so 'running' is true
        for serial, queue in feed.queues.items():
            while queue:
                lane = lanes.get(serial)
                if lane is None:
                    width = 1 if serial else workers
                    lane = lanes[serial] = _Lane(new_pool(width), width)
                if lane.running >= lane.width:
                    break
                job = queue.popleft()
                pending[lane.pool.submit(_run_in_worker, job, str(results))] = (lane, lane.pool, job)
                lane.running += 1
        progress.running = len(pending)

    try:
        fill()
        progress.show()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                lane, pool, job = pending.pop(future)
                lane.running -= 1
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    outcome = JobOutcome(job, error=WORKER_DIED)
                    if lane.pool is pool:  # the first of its jobs to say so: the rest go to a new pool
                        pool.shutdown(wait=False, cancel_futures=True)
                        lane.pool = new_pool(lane.width)
                fill()
                yield outcome
                fill()  # what the outcome's recording fed
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: every worker stops its simulator and returns its run as 'interrupted'
        # (a terminal's Ctrl-C reaches the workers too; SIGTERM is passed on here), which is recorded.
        for lane in lanes.values():
            for process in list(getattr(lane.pool, "_processes", {}).values()):
                if process.is_alive():
                    process.terminate()
        done, _ = wait(pending, timeout=INTERRUPT_GRACE_S)
        for future in done:
            try:
                yield future.result()
            except Exception:  # noqa: BLE001 (a worker that died before it could answer)
                continue
        raise
    finally:
        for lane in lanes.values():
            lane.pool.shutdown(wait=True, cancel_futures=True)


def _quiet_resource_tracker() -> None:
    """The pool's queues hold semaphores that multiprocessing's resource tracker (a process of its own) removes
    if the sweep is killed outright; it does so, and also warns "N leaked semaphore objects" on the terminal,
    after simflow is gone. The tracker takes this process's -W options when it starts: it still cleans up,
    without the warning."""
    option = "ignore::UserWarning:multiprocessing.resource_tracker"
    if option not in sys.warnoptions:
        sys.warnoptions.append(option)


def _worker_setup(handed: Settings) -> None:
    """A sweep worker has the sweep's settings, dies with the sweep, and takes SIGTERM as Ctrl-C (its run is kept
    as interrupted)."""
    take_settings(handed)
    die_with_parent()
    sigterm_as_ctrl_c()
    exit_when_orphaned()


def _run_in_worker(job: Job, results: str) -> JobOutcome:
    with job_in_hand():
        return run_job_safely(job, results)


def dask_cluster(executor: str, settings: dict, workers: int):
    """A dask-jobqueue cluster for Slurm or PBS, from the sweep file's [dask] table."""
    try:
        import dask_jobqueue
    except ImportError:
        raise UserError(f"--executor {executor} needs dask-jobqueue: pip install 'simflow[cluster]'") from None
    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster}[executor]
    kw = {k: v for k, v in settings.items() if k not in ("cluster", "jobs")}
    kw.setdefault("cores", 1)
    kw.setdefault("memory", "4GB")
    cluster = cls(**kw)
    cluster.scale(jobs=int(settings.get("jobs", workers)))
    return cluster


def _dask(feed: _Feed, results: Path, workers: int, scheduler: str | None, executor: str, settings: dict,
          progress: Progress) -> Iterator[JobOutcome]:
    """Dask distributed: a running scheduler (--scheduler), a Slurm/PBS cluster, or a local one.
    Workers must see the results folder (a shared file system): run folders are written there."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UserError("--executor dask needs dask distributed: pip install 'simflow[cluster]'") from None
    cluster = None
    if executor in ("slurm", "pbs"):
        cluster = dask_cluster(executor, settings, workers)
        client = Client(cluster)
    elif scheduler:
        client = Client(scheduler)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        handed = current()  # each worker takes the sweep's settings before its job
        futures = as_completed()
        running = 0

        def fill() -> None:  # Dask queues what its workers cannot start yet
            nonlocal running
            for queue in feed.queues.values():
                while queue:
                    futures.add(client.submit(run_job_safely, queue.popleft(), str(results), handed, pure=False))
                    running += 1
            progress.running = min(running, workers)

        fill()
        progress.show()
        for future in futures:
            outcome = future.result()
            running -= 1
            progress.running = min(running, workers)
            yield outcome
            fill()  # what the outcome's recording fed
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
