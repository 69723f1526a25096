"""Sampled simulation's orchestration: a layer's probe, then its samples as soon as the probe has ended, all in
one sweep (parallel, cached, local or on a cluster), and the estimate made and stored. What a sample is (spec,
probe, plan, cut GPU) is simflow.sim.sampling's; the estimate's maths (fit, bounds, launches added up)
simflow.sim.estimate's.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..registry import backend_class, backend_names
from ..results.record import RunResult
from ..results.store import Store
from ..sim.estimate import METHOD, estimate_launches, estimate_result
from ..sim.sampling import SampleSpec, by_launch, completed, fixed, launch_parts, plan_samples, probe_job, sample_jobs
from .sweep import Progress, run_sweep
from .sweep_file import Sweep

SAMPLES_MOST = 0.5  # samples over this share of a layer's images: said, with the whole run suggested


@dataclass
class SampledOutcome:
    """One layer's sampled simulation: the stored estimate, or why there is none."""

    job: Job  # the real layer
    result: RunResult | None = None
    error: str = ""
    cached: bool = False  # the estimate was stored already (same kernel, problem, config and spec)
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped the sweep before this layer's estimate


def stored_run(store, job: Job):
    """The stored run that answers `job` (the newest, passed or not), or None."""
    run_id = store.cached(job.kernel().fingerprint(), job.problem, job.backend, job.config_key)
    return store.runs("WHERE id = ?", (run_id,))[0] if run_id else None


def _failed(run, job: Job, what: str) -> str:
    if run is None:
        return f"its {what} ({job.describe()}, batch {job.problem.B}) could not run; see the sweep's errors above"
    first = run.reason.splitlines()[0] if run.reason else ""
    return f"its {what} (batch {run.problem.B}, run {run.run_id}) {run.status}: {first}"


def run_sampled(jobs: list[Job], store, spec: SampleSpec, *, name: str = "sampled", workers: int | None = None,
                executor: str = "local", scheduler: str | None = None, dask: dict | None = None,
                retry_failed: bool = False, quiet: bool = False) -> list[SampledOutcome]:
    """Sampled simulations of the jobs' layers, run as one sweep (parallel, cached, on local workers, Dask or
    Slurm): the probes, and a layer's samples as soon as its probe has ended; every estimate is stored."""
    started = time.monotonic()
    outcomes = {job: SampledOutcome(job) for job in jobs}
    todo, spec_of = [], {}  # spec_of: each job's spec, the waves its variant samples by default filled in
    for job in jobs:
        if not backend_class(job.backend).sampling:
            able = [n for n in backend_names() if backend_class(n).sampling]
            raise UserError(f"sampling is for the simulator: {job.describe()} runs on {job.backend}; "
                            f"use backend {' or '.join(able)}, or drop the sample spec")
        try:
            fingerprint = job.kernel().fingerprint()
        except UserError as exc:
            outcomes[job].error = str(exc)
            continue
        spec_of[job] = spec.for_kernel(job.kernel())
        cached = store.cached(fingerprint, job.problem, job.backend, job.config_key, failed_too=False,
                              sample=str(spec_of[job]))
        stored = store.runs("WHERE id = ?", (cached,))[0] if cached else None
        if stored and stored.estimate.get("method") == METHOD:
            outcomes[job] = SampledOutcome(job, stored, cached=True)
        else:
            todo.append(job)

    # a layer's parts: the job itself, or (a variant of several launches that grow) each launch made alone
    parts_of = {job: launch_parts(job) if by_launch(job.kernel()) else [job] for job in todo}
    parts = list(dict.fromkeys(part for job in todo for part in parts_of[job]))
    spec_of |= {part: spec_of[job] for job in todo for part in parts_of[job]}  # a variant's launches: its waves
    first_of = {part: probe_job(part, store.root) for part in parts}  # a fixed launch's: its whole run
    probes = list(dict.fromkeys(first_of.values()))
    parts_after = {probe: [part for part in parts if first_of[part] == probe] for probe in probes}
    bar = Progress(total=len(probes), workers=workers or os.cpu_count() or 1, quiet=quiet)  # grows by the samples
    plans, errors, notes = {}, {}, {}

    def plan_after(probe_of: Job) -> list[Job]:
        """A probe has ended: its parts' samples (planned from it), the longest first."""
        samples, probe = [], stored_run(store, probe_of) if probe_of in parts_after else None
        for part in parts_after.get(probe_of, []):
            if not completed(probe):
                errors[part] = _failed(probe, probe_of, "probe")
            elif fixed(part):
                plans[part] = (probe, None, [])
            else:
                try:
                    plan = plan_samples(probe, spec_of[part], part.kernel(), part.problem.B)
                    plans[part] = (probe, plan, sample_jobs(part, plan, probe, store.root))
                except UserError as exc:
                    errors[part] = str(exc)
                    continue
                samples += plans[part][2]
                share = sum(plan.sizes(part.kernel(), part.problem.B)) / part.problem.B
                if share > SAMPLES_MOST:
                    notes[part] = (f"the samples are {share:.0%} of the layer's images: sampling saves little here; "
                                   f"simulating it whole (without --sample) costs about {1 / share:.2g}x the samples")
                    if not quiet:
                        print(f"simflow: note: {part.describe()}: {notes[part]}", file=sys.stderr, flush=True)
        return sorted(samples, key=lambda j: -j.problem.B)

    def settle(job: Job, stopped: bool | None = None) -> None:
        """The layer's estimate, made and stored as soon as every sample of it has ended (while the sweep runs:
        `stopped` None); once the sweep has ended (`stopped`: it was interrupted or not), why there is none."""
        done = []
        for part in parts_of[job]:
            if part in errors or part not in plans:
                if stopped is None:
                    return
                outcomes[job].error = errors.get(part) or (
                    "interrupted during the probes; the runs done are stored: run it again to resume" if stopped
                    else f"its probe ({first_of[part].describe()}) never ended")
                outcomes[job].interrupted = stopped and part not in errors
                return
            probe, plan, runs_of = plans[part]
            runs = [stored_run(store, sample) for sample in runs_of]
            bad = next(((run, sample) for run, sample in zip(runs, runs_of, strict=True) if not completed(run)), None)
            if bad:  # a layer whose samples all ended before an interruption still gets its estimate
                if stopped is not None:
                    outcomes[job].error = (_failed(bad[0], bad[1], "sample") if bad[0] or not stopped else
                                           f"its sample at batch {bad[1].problem.B} had not ended when the sweep was "
                                           "stopped; the runs done are stored: run it again to resume")
                    outcomes[job].interrupted = stopped
                return
            done.append((part, probe, runs, plan))
        wall = time.monotonic() - started
        if len(done) == 1:
            _, probe, runs, plan = done[0]
            result = estimate_result(job, probe, runs, spec_of[job], store.root, wall, plan)
        else:
            result = estimate_launches(job, done, spec_of[job], store.root, wall)
        if said := "; ".join(notes[part] for part in parts_of[job] if part in notes):
            result.estimate["note"] = said
        store.add(result)
        outcomes[job].result = result

    def after(ended: Job) -> list[Job]:
        """A run has ended: a probe's layers' samples to run (planned from it, the longest first), and the estimate
        of each layer whose samples have all ended now."""
        samples = plan_after(ended)
        for job in todo:
            if outcomes[job].result is None and any(
                    ended == first_of[part] or (part in plans and ended in plans[part][2]) for part in parts_of[job]):
                try:
                    settle(job)
                except (UserError, ValueError):  # said once the sweep has ended, where it said so before
                    continue
        return samples

    # One sweep: the probes, and each layer's samples as soon as its own probe has ended (a slow probe holds up
    # only its own layer), on local workers, Dask or Slurm alike.
    specs = ", ".join(sorted({str(spec_of[part]) for part in parts}))
    interrupted = bool(probes) and run_sweep(
        Sweep(f"{name}: probes (1 image or its first CTAs each), then each layer's samples ({specs})", probes,
              dask=dict(dask or {})), store, workers=workers, executor=executor, scheduler=scheduler,
        retry_failed=retry_failed, quiet=quiet, progress=bar, then=after).interrupted
    bar.finish()
    for job in todo:
        if outcomes[job].result is None:
            settle(job, interrupted)
    return [outcomes[job] for job in jobs]


def sampled_run(job: Job, spec: SampleSpec, results: Path, workers: int | None, progress) -> RunResult:
    """One layer's sampled simulation, as `simflow sim --sample` runs it: its estimate, stored in `results`;
    `progress(text)` hears that it starts (quiet without it)."""
    if progress:
        progress(f"sampling {job.describe()}: a probe, then three samples of {spec.for_kernel(job.kernel())} ...")
    with Store(results) as kept:
        (outcome,) = run_sampled([job], kept, spec, workers=workers, quiet=progress is None)
    if outcome.interrupted:
        raise KeyboardInterrupt  # the command's own path: exit 130, the runs done kept
    if outcome.result is None:
        raise UserError(f"no estimate for {job.describe()}: {outcome.error}")
    return outcome.result
