"""simflow from Python, for notebooks: the functions the command line calls, returning records and
pandas DataFrames instead of printing.

    import simflow.api as sf
    kernel = sf.render("shared", "batch3x3", params={"tile": 8})
    result = sf.sim("shared", "batch3x3")            # GPGPU-Sim; sf.run(...) on a GPU
    sf.runs("variant=shared")                        # the store, one row per run
    sf.compare("problem=batch3x3", by=["variant"])   # DataFrames, one per like-with-like table

Stored runs are named as on the command line: a run id (or unique prefix) or a selector such as
"variant=shared,tile=16". `results` is the results folder (default: SIMFLOW_RESULTS, else
./simflow-results). Mistakes raise simflow.errors.UserError with the message the CLI prints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UserError
from .kernels.problems import DEFAULT_PROBLEM, Problem, get_problem
from .results.record import RunResult

if TYPE_CHECKING:
    from .kernels.variants import Kernel

__all__ = ["render", "run", "sim", "best_of", "parse", "import_logs", "import_runs", "runs", "find_runs", "find_run",
           "sweep", "tune", "correlate", "doctor", "image", "check", "diff", "comparison", "compare", "explanation",
           "explain", "report", "variants", "problems", "use_stats", "use_variants", "problem_of", "calibrate"]


def problem_of(problem: str | Problem = DEFAULT_PROBLEM, batch: int | None = None) -> Problem:
    """A Problem from a preset name, a shape "B,C,M,H,W,K[,pad[,stride]]" or a Problem; `batch` overrides B."""
    if isinstance(problem, Problem):
        return problem.with_batch(batch) if batch is not None else problem
    if "," in problem:
        return get_problem(shape=problem, batch=batch)
    return get_problem(problem, batch=batch)


def _results(results: str | Path | None) -> Path:
    from .resources import results_dir

    return Path(results) if results is not None else results_dir()


def render(variant: str, problem: str | Problem = DEFAULT_PROBLEM, *, params: dict | None = None,
           batch: int | None = None) -> Kernel:
    """The rendered kernel: `.source` (the CUDA both backends compile), `.launches(batch)`, `.params`."""
    from .kernels.variants import render as render_variant

    return render_variant(variant, problem_of(problem, batch), params)


def run(variant: str | None = None, problem: str | Problem = DEFAULT_PROBLEM, *, backend: str = "gpu",
        params: dict | None = None, batch: int | None = None, best: bool = False, precision: str = "float32",
        config: str = "", sample: str | None = None, workers: int | None = None, results: str | Path | None = None,
        store: bool = True, progress=None, on_store_error=None, watch=None, **options) -> RunResult:
    """Run a variant on a backend, as `simflow run --backend`: build, run, check and measure it, its files in a new run
    folder, stored unless store=False. `options`: the run options of simflow.job.RUN_OPTIONS by keyword (seed=0,
    warmup=3, repeats=20, sample_check=False, docker=IMAGE, engine, timeout_s=3600). The job is made and checked
    first (parameters, config, options, image), then `progress(text)` hears that it starts. `best`: the variant and
    parameters `simflow tune` found fastest for this layer (of `variant` if named; `params` still override).
    `sample` ("W1,W2,W3" waves): the whole layer estimated from three simulated batches on `workers` processes, its
    record with `.estimate` (always stored). A store that cannot be written loses nothing: `on_store_error(text)`
    hears it (raised when None). `watch`: see run.jobs.run_job (simflow sim's live progress line)."""
    from .job import Job, job_options, not_taken
    from .registry import backend_class
    from .run.jobs import run_job

    problem = problem_of(problem, batch)
    cls = backend_class(backend)
    if sample is not None and not cls.sampling:
        raise UserError(not_taken(backend, "sampled simulation"))
    if best:
        variant, params = best_of(problem, backend, config or cls.default_config, precision, variant, params)
    elif not variant:
        from .kernels.variants import VARIANTS

        raise UserError(f"name a variant (one of: {', '.join(VARIANTS)}), or --best after 'simflow tune'")
    job = Job.make(variant, dict(params or {}), problem, backend, config=config, **job_options(options))
    spec = None
    if sample is not None:  # a mistyped spec is said first: it needs nothing of this machine
        from .sim.sampling import SampleSpec

        spec = SampleSpec.parse(sample)
    refused = spec is None and cls.refusal_of(job, job.kernel())  # known now: stored as refused, said as such
    if not refused:
        cls.check(job)
    if spec is not None:
        from .run.sampled import sampled_run

        return sampled_run(job, spec, _results(results), workers, progress)
    if progress and not refused:
        progress(f"running {job.describe()}{' in image ' + job.docker_image if job.docker_image else ''} ...")
    result = run_job(job, _results(results), watch=watch)
    if store:
        from .results.store import Store, StoreError

        try:
            with Store(_results(results)) as kept:
                kept.add(result)
        except StoreError as exc:
            if on_store_error is None:
                raise
            folder = result.artifacts.get("run_dir", "")
            on_store_error(f"the run was not stored: {exc}\n  its files and result.json are kept in {folder}; "
                           f"'simflow import {folder}' stores it later")
    return result


def best_of(problem: Problem, backend: str, config: str, precision: str = "float32", variant: str | None = None,
            params: dict | None = None, results: str | Path | None = None) -> tuple[str, dict]:
    """The variant and parameters `simflow tune` found fastest for this layer on this backend (of `variant` if
    named), with `params` over them."""
    from .run.tune import best_config

    found, tuned = best_config(_results(results), problem, backend, config, precision, variant)
    return found, {**tuned, **(params or {})}


def sim(variant: str, problem: str | Problem = DEFAULT_PROBLEM, *, params: dict | None = None,
        batch: int | None = None, config: str = "", results: str | Path | None = None, store: bool = True,
        sample: str | None = None, workers: int | None = None, quiet: bool = True, **options) -> RunResult:
    """Simulate a variant under GPGPU-Sim (natively, or in image `docker=`) and check it, as `simflow sim`: run with
    backend gpgpusim and the same run options. `sample` ("W1,W2,W3" waves, e.g. "1,2,3", or "default": the
    variant's own): the whole layer estimated from three simulated batches, as `simflow sim --sample`
    (simflow.sim.sampling); always stored."""
    return run(variant, problem, backend="gpgpusim", params=params, batch=batch, config=config, results=results,
               store=store, sample=sample, workers=workers, progress=None if quiet else print, **options)


@dataclass
class SweepDone:
    """What `sweep` did: its file, and the plan (dry run), the report (runs) or the estimates (a sampled sweep)."""

    sweep: object
    plan: object = None
    report: object = None
    sampled: list | None = None
    wall_s: float = 0.0


def sweep(file: str | Path, *, workers: int | None = None, executor: str = "local", scheduler: str | None = None,
          retry_failed: bool = False, dry_run: bool = False, quiet: bool = True,
          results: str | Path | None = None) -> SweepDone:
    """A sweep file's jobs, as `simflow sweep`: planned only (`dry_run`), or run (parallel, cached, resumable) and
    stored; a file with `sample` estimates each layer from sampled simulation."""
    import time

    from .results.store import Store
    from .run.sampled import run_sampled
    from .run.sweep import plan, run_sweep
    from .run.sweep_file import load_sweep
    from .sim.sampling import SampleSpec

    loaded = load_sweep(file)
    if loaded.sample and dry_run:
        raise UserError("--dry-run cannot plan a sampled sweep: its sample batches come from each layer's probe run")
    started = time.monotonic()
    with Store(_results(results)) as store:
        if dry_run:
            return SweepDone(loaded, plan=plan(loaded, store, retry_failed))
        if loaded.sample:
            outcomes = run_sampled(loaded.jobs, store, SampleSpec.parse(loaded.sample), name=loaded.name,
                                   workers=workers, executor=executor, scheduler=scheduler, dask=loaded.dask,
                                   retry_failed=retry_failed, quiet=quiet)
            return SweepDone(loaded, sampled=outcomes, wall_s=time.monotonic() - started)
        report = run_sweep(loaded, store, workers=workers, executor=executor, scheduler=scheduler,
                           retry_failed=retry_failed, quiet=quiet)
    return SweepDone(loaded, report=report, wall_s=report.wall_s)


def tune(layers: list[Problem], names: list[str], *, every: bool = False, batch: int | None = None,
         backend: str = "gpu", config: str = "", precision: str = "float32", strategy: str = "tpe",
         runs: int | None = None, time_s: float | None = None, seed: int = 0, results: str | Path | None = None,
         workers: int = 1, progress=None, layer_done=None) -> list:
    """The fastest passing configuration of each layer, as `simflow tune` (the variants named, or `every` one with
    a configuration in `precision`), within a budget of `runs` configurations and/or `time_s` seconds a layer,
    `workers` at once where the backend allows. `progress(text, trial, state)` hears each layer start (trial None)
    and each configuration tried (state: run.tune.Progress); `layer_done(result)` each layer's result."""
    from .registry import backend_class
    from .run.tune import tunable_variants
    from .run.tune import tune as tune_layer

    if bool(names) == every:
        raise UserError("name the variants to tune, or --all (not both)")
    if runs is None and time_s is None and strategy != "exhaustive":
        raise UserError("give a budget: --runs N (configurations) and/or --time S (seconds), or --strategy exhaustive")
    if time_s is not None and not time_s > 0:
        raise UserError(f"--time must be more than 0 seconds, got {time_s:g}")
    config = config or backend_class(backend).default_config
    variants = tunable_variants(backend, precision) if every else names
    done = []
    for problem in [p if batch is None else p.with_batch(batch) for p in layers]:
        if progress:
            progress(f"tuning {problem.describe()} on {backend} in {precision} ({strategy})")
        result = tune_layer(problem, variants, backend=backend, config=config, precision=precision,
                            strategy=strategy, budget_runs=runs, budget_s=time_s, seed=seed, results=_results(results),
                            workers=workers, progress=(lambda trial, state: progress("", trial, state)) if progress
                            else None)
        done.append(result)
        if layer_done:
            layer_done(result)
    return done


def parse(*logs: str | Path, aggregate: bool = False):
    """GPGPU-Sim logs ('-': standard input) as one DataFrame, a row per kernel launch per log (`aggregate`: per
    kernel name, launches' counts summed and rates weighted by cycles). df.attrs["logs"] holds each log's facts
    (status, reason, build, notes)."""
    import pandas as pd

    rows, facts = parse_rows(*logs, aggregate=aggregate)
    table = pd.DataFrame(rows)
    table.attrs["logs"] = facts
    return table


def parse_rows(*logs: str | Path, aggregate: bool = False) -> tuple[list[dict], list[dict]]:
    """parse() without pandas, for a command that prints at once: the rows (each with its "log" first) and
    each log's facts."""
    from .sim.log import parse_file
    from .sim.log_text import named_logs

    if not logs:
        raise UserError("parse needs at least one log file")
    rows, facts = [], []
    with named_logs(logs) as named:
        for name, path in named:
            if not path.is_file():
                raise UserError(f"no such log file: {path}")
            log = parse_file(path)
            found = log.rows(by_name=aggregate)
            rows += [{"log": name, **row} for row in found]
            facts.append({**log.run_facts(), "log": name,
                          "aggregated": [f"{r['kernel']} ({r['launches']} launches)" for r in found
                                         if aggregate and r["launches"] > 1]})
    return rows, facts


def import_runs(*paths: str | Path, results: str | Path | None = None) -> tuple[list[tuple[str, str]], Path]:
    """Store run folders (or their result.json) made elsewhere, or kept out with --no-store, or left unfinished:
    each run id (or path) with its outcome: 'stored', 'stored already', 'recovered' (a simulator run folder
    without result.json, a full disk say, whose record is made again from its log), or 'not importable: why, and
    what to do'; and the store's path. Every path is tried: one that cannot be imported stops none of the others."""
    from .results.store import Store

    done = []
    with Store(_results(results)) as store:
        for name in paths:
            try:
                result, how = _importable(Path(name))
            except UserError as exc:
                done.append((str(name), f"not importable: {exc}"))
                continue
            if result.run_id in store.ids():
                done.append((result.run_id, "stored already"))
                continue
            store.add(result)
            done.append((result.run_id, how))
    return done, store.path


def _importable(path: Path):
    """(the record a path holds, 'stored' or 'recovered'), or a UserError saying why there is none and what to do."""
    from .results.record import RunResult

    folder = path if path.is_dir() else None
    path = path / "result.json" if path.is_dir() else path
    if not path.is_file():
        if folder is not None and (folder / "run.json").is_file() and any(
                (folder / log).is_file() for log in ("sim.log.gz", "sim.log")):
            from .backends.gpgpusim import finish
            from .results.folders import keep_result

            try:
                result = finish(folder)  # what the simulator left: the record is made again, as at its end
            except (OSError, ValueError, KeyError) as exc:
                raise UserError(f"{folder} has no result.json and its run.json or log cannot be read "
                                f"({type(exc).__name__}: {exc}); run the job again") from None
            keep_result(result, folder)
            return result, "recovered"
        if folder is not None:
            raise UserError(f"{folder} has no result.json and no simulator log: the run stopped before it "
                            "recorded anything (a full disk, or killed at its start); nothing to recover: run the "
                            "job again (a sweep resumes it), then remove the folder")
        raise UserError(f"no result.json at {path}")
    try:
        result = RunResult.from_dict(json.loads(path.read_text()))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is not a simflow result.json (not JSON text: {exc}); if the disk filled as it "
                        "was written, move it aside and import the folder again") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path} is not a simflow result.json ({type(exc).__name__}: {exc})") from None
    return (result.moved_to(folder) if folder is not None else result), "stored"


def variants() -> list[dict]:
    """Every variant: its summary, precision, parameters (choices, default, help) and what each backend says of it."""
    from .kernels.variants import VARIANTS, show_value
    from .registry import backend_class, backend_names

    return [{"variant": v.name, "summary": v.summary, "precision": v.precision_of(v.resolve()),
             "params": [{"name": p.name, "choices": [show_value(c) for c in p.choices],
                         "default": show_value(p.default), "help": p.help, "host": p.host} for p in v.params],
             "backends": {name: backend_class(name).support(v) for name in backend_names()}}
            for v in VARIANTS.values()]


def problems(suite_name: str | None = None) -> tuple[list[dict], float]:
    """The presets (or a suite's layers) as rows, and their GFLOP in all."""
    from .kernels.problems import PRESET_NOTES, PRESETS, suite

    chosen = suite(suite_name) if suite_name else tuple(PRESETS.values())
    rows = [{"preset": p.name, "B": p.B, "C": p.C, "M": p.M, "HxW": f"{p.H}x{p.W}", "K": p.K, "pad": p.pad,
             "stride": p.stride, "out": f"{p.Hout}x{p.Wout}", "GFLOP": float(f"{p.flops / 1e9:.4g}"),
             "min MB": round(p.min_bytes() / 1e6, 2), "notes": PRESET_NOTES.get(p.name, "")} for p in chosen]
    return rows, sum(p.flops for p in chosen) / 1e9


def import_logs(*logs: str | Path, labels: dict[str, str] | None = None, config: str | None = None,
                again: bool = False, results: str | Path | None = None) -> list[RunResult]:
    """Store GPGPU-Sim logs of any application as gpgpusim runs, as `simflow import-log`. A log stored already
    (the same bytes) is not stored again unless `again`: its stored run (a StoredRun) stands in its place."""
    from .results.store import Store
    from .sim.log_import import import_log, stored_already
    from .sim.log_text import named_logs

    done = []
    with Store(_results(results)) as store, named_logs(logs) as named:
        for name, path in named:
            if not again and (found := stored_already(store, path)) is not None:
                done.append(found)
                continue
            result = import_log(path, dict(labels or {}), config, _results(results), "stdin" if name == "-" else "")
            store.add(result)
            done.append(result)
    return done


def find_runs(*filters: str, results=None, last: int | None = None, parts: bool = False) -> list:
    """The stored runs (and unfinished run folders) matching every KEY=VALUE filter, oldest first; `last`: only
    the newest so many. A sampled run's probe and samples are parts of it, not runs of their own: left out
    unless `parts` (or a filter names a run by id; simflow show names them)."""
    from .results.selectors import select
    from .results.store import Store

    with Store(_results(results), read_only=True) as store:
        every = store.runs()
    if not parts and not any(f.startswith("id=") for f in filters):
        kept = {pid for r in every if r.sampled for pid in (r.estimate.get("probe"), *r.estimate.get("runs", ()))}
        every = [r for r in every if r.id not in kept]
    found = select(every, filters)
    return found[-last:] if last else found


def find_run(text: str, results=None):
    """One stored run: a run id (or unique prefix) or a selector that matches one."""
    from .results.selectors import resolve_one
    from .results.store import Store

    with Store(_results(results), read_only=True) as store:
        return resolve_one(store, text)


FIELDS = ("id", "created", "variant", "backend", "config", "problem", "batch", "status", "reason")


def runs(*filters: str, results: str | Path | None = None):
    """The stored runs matching every KEY=VALUE filter, one row each: the run's fields, its parameters
    (a parameter named like a field is prefixed param_) and its metrics."""
    import pandas as pd

    rows = []
    for r in find_runs(*filters, results=results):
        row = {"id": r.id, "created": r.created, "variant": r.variant, "backend": r.backend, "config": r.config,
               "problem": r.problem.name, "batch": r.problem.B, "status": r.status, "reason": r.reason}
        row.update({(f"param_{k}" if k in FIELDS else k): v for k, v in r.params.items()})
        row.update(r.metrics)
        rows.append(row)
    return pd.DataFrame(rows)


def diff(a: str, b: str, *, metrics: list[str] | None = None, threshold: float | None = None, force: bool = False,
         results: str | Path | None = None):
    """Two runs metric by metric (A, B, delta, ratio, % change, better direction, mark), as `simflow diff`, with
    its defaults: a change within `threshold` (relative, default 2 %) or the unit's floor is 'same'.
    df.attrs: a and b (the run ids), runs (the two stored runs), not_comparable (why not, or '')."""
    from .analysis.compare import comparable
    from .analysis.compare import diff as diff_runs

    run_a, run_b = find_run(a, results), find_run(b, results)
    why = comparable(run_a, run_b)
    if why and not force:
        raise UserError(f"runs {run_a.id} and {run_b.id} are not comparable: {why}; --force (force=True) shows the "
                        "table anyway")
    from .analysis.compare import DEFAULT_THRESHOLD

    frame = diff_runs(run_a, run_b, metrics, DEFAULT_THRESHOLD if threshold is None else threshold)
    frame.attrs.update(a=run_a.id, b=run_b.id, runs=(run_a, run_b), not_comparable=why)
    return frame


def comparison(*filters: str, by: list[str] | tuple[str, ...] = ("variant",), metrics: list[str] | None = None,
               baseline: str | None = None, all_statuses: bool = False, force: bool = False,
               results: str | Path | None = None):
    """The matching runs side by side against a baseline (simflow.analysis.compare.Comparison: its tables, what
    was left out, the regressions)."""
    from .analysis.compare import comparison as compare_runs

    return compare_runs(find_runs(*filters, results=results), list(by), metrics, baseline,
                        all_statuses=all_statuses, force=force)


def compare(*filters: str, by: list[str] | tuple[str, ...] = ("variant",), metrics: list[str] | None = None,
            baseline: str | None = None, all_statuses: bool = False, force: bool = False,
            results: str | Path | None = None) -> list:
    """Runs side by side against a baseline, as `simflow compare`: one DataFrame per like-with-like
    table (df.attrs: title, baseline, left_out)."""
    result = comparison(*filters, by=by, metrics=metrics, baseline=baseline, all_statuses=all_statuses, force=force,
                        results=results)
    for table in result.tables:
        table.frame.attrs.update(title=table.title, baseline=table.baseline, left_out=result.left_out)
    return [table.frame for table in result.tables]


def explanation(a: str, b: str, *, force: bool = False, kernel: str | None = None,
                results: str | Path | None = None):
    """Where B's cycles differ from A's (simflow.analysis.explain.Explanation); `kernel`: "NAME" or "NAME_A,NAME_B",
    one kernel of each run instead of the runs' totals."""
    from .analysis.explain import explain as explain_runs

    kernels = None
    if kernel:
        names = kernel.split(",")
        if len(names) > 2 or not all(names):
            raise UserError(f"--kernel takes NAME or NAME_A,NAME_B, not {kernel!r}")
        kernels = (names[0], names[-1])
    from .analysis.fidelity import disagreements

    run_a, run_b = find_run(a, results), find_run(b, results)
    out = explain_runs(run_a, run_b, force, kernels)
    if kernels is None:  # the same two jobs on the other side (simulator or GPU), ordered the other way?
        jobs = {(r.variant, json.dumps(r.params, sort_keys=True)) for r in (run_a, run_b)}
        out.notes += disagreements([r for r in find_runs(results=results)
                                    if (r.variant, json.dumps(r.params, sort_keys=True)) in jobs])
    return out


def explain(a: str, b: str, *, force: bool = False, kernel: str | None = None,
            results: str | Path | None = None) -> dict:
    """Where B's cycles differ from A's, as `simflow explain --format json`: the decompositions
    (`cycles_as_instructions_over_ipc`, `issue_slots`), the evidence and notes."""
    from .analysis.explain import as_dict

    return as_dict(explanation(a, b, force=force, kernel=kernel, results=results))


def report(*filters: str, output: str | Path, by: list[str] | tuple[str, ...] = ("variant",),
           metrics: list[str] | None = None, baseline: str | None = None, all_statuses: bool = False,
           results: str | Path | None = None) -> list[Path]:
    """index.html, report.md and the plots of the matching runs in `output`, as `simflow report`."""
    from .analysis.report import write_report

    return write_report(find_runs(*filters, results=results), Path(output), list(by), metrics, baseline,
                        all_statuses=all_statuses)


def correlate(*filters: str, metrics: list[str] | None = None, results: str | Path | None = None):
    """Simulator vs hardware counters over the matching variants run both ways, as `simflow correlate`: a table
    (per aligned metric: Pearson, Spearman, same order, mean error) and the points behind it."""
    from .analysis.fidelity import correlate as correlate_runs

    return correlate_runs(find_runs(*filters, results=results), metrics)


@dataclass
class Calibration:
    """What `calibrate` did: the overlay and measurement files, the figures, whether they came from the cache, and
    the check folded in (NAME.check.json beside the overlay), if any."""

    config: Path
    measured: Path
    figures: dict
    reused: bool
    folded: Path | None = None


def calibrate(*, name: str | None = None, output: str | Path = ".", again: bool = False,
              measured: str | Path | None = None, progress=None) -> Calibration:
    """Measure the GPU in hand (or read `measured`, a NAME.measured.json) and write NAME.toml, a simulator config
    overlay for it, and NAME.measured.json into `output`, as `simflow calibrate`. Measurements are cached per GPU
    and driver; `again` measures anew."""
    from .calibrate.overlay import config_name, write
    from .resources import cache_dir

    reused = False
    if measured is not None:
        figures, reused = _measurements(measured), True
    else:
        from .calibrate.measure import VERSION, identity, measure
        from .results.folders import write_text

        cached = cache_dir() / "calibrate" / (config_name(identity()) + ".json")
        try:
            figures = json.loads(cached.read_text()) if cached.is_file() and not again else {}
        except ValueError:  # a cache cut short: measure anew
            figures = {}
        if figures.get("version") == VERSION:  # figures an older simflow measured lack what this one uses
            reused = True
        else:
            figures = measure(progress)
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_text(cached, json.dumps(figures, indent=2, sort_keys=True) + "\n")
    name = name or config_name(figures["gpu"])
    folded = Path(output) / f"{name}.check.json"  # a `calibrate --check --fold` of this overlay: folded in again
    check = _measurements(folded) if folded.is_file() else None
    toml, kept = write(Path(output), name, figures, check)
    return Calibration(toml, kept, figures, reused, folded if check else None)


def calibrate_check(config: str = "H200", measured: str | Path | None = None, fold: bool = False):
    """Calibrate's microbenchmarks run in GPGPU-Sim on `config` (a name or an overlay's path), beside the GPU's
    figures (`measured`, default NAME.measured.json beside the overlay): a simflow.calibrate.check.Check. `fold`
    keeps the check beside the overlay and writes the overlay again with it folded in."""
    from .calibrate.check import check
    from .sim.config import load_config
    from .sim.simulator import find_simulator
    from .sim.standalone import cuda11_toolkit

    figures = None if measured is None else _measurements(measured)
    return check(load_config(config), find_simulator(), cuda11_toolkit(), figures, fold=fold)


def _measurements(path: str | Path) -> dict:
    """A NAME.measured.json `simflow calibrate` wrote."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read measurements from {path}: {exc}") from None


def doctor(*, probe_builds: bool = True, refresh: bool = False, require: list[str] | tuple[str, ...] = ()):
    """What simflow can use here and how to get what is missing (simflow doctor's findings), and which of the
    `require`d backends are absent."""
    from .doctor import diagnose
    from .registry import backend_class

    findings = diagnose(probe_builds=probe_builds, refresh=refresh)
    return findings, [name for name in require if not backend_class(name).probe().available]


def image(simulator: str | None = None, *, tag: str | None = None, engine: str | None = None, base: str | None = None,
          network: str | None = None, engine_options: tuple[str, ...] = ()) -> str:
    """Build the simflow image around the user's GPGPU-Sim build, as `simflow image build`; its tag."""
    from .sim.image import build

    given = {"tag": tag, "base": base, "network": network}  # what is not given: the builder's defaults
    return build(simulator, engine_name=engine, engine_options=engine_options,
                 **{k: v for k, v in given.items() if v is not None})


def check(problem: str | Problem = DEFAULT_PROBLEM, *, seed: int = 0, repeats: int = 10,
          results: str | Path | None = None, progress=None):
    """Every variant rendered, compiled with each nvcc here and run on every backend present (not stored), as
    `simflow check`; absent backends are named with how to get them."""
    from .run.check import run_check

    return run_check(problem_of(problem), _results(results), seed=seed, repeats=repeats, progress=progress)


def use_stats(*files: str | Path) -> None:
    """Add user-defined stats (TOML files, see `simflow parse --catalogue`) for this process and the workers and
    containers it starts: SIMFLOW_STATS's files, then these, go into the catalogue and the settings workers get."""
    from . import settings
    from .sim.catalogue import load_user_stats

    known = list(settings.current().stats)
    every = known + [str(f) for f in files if str(f) not in known]
    if every:
        load_user_stats(every)
        settings.with_(stats=tuple(str(Path(f).resolve()) for f in every))


def use_variants(*folders: str | Path) -> None:
    """Add folders of your own variants (NAME.cu.j2 + NAME.toml) for this process and its workers."""
    from .kernels.variants import use_variant_dirs

    use_variant_dirs([str(f) for f in folders])
