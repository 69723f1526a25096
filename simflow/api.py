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

from pathlib import Path

from .errors import UserError
from .job import DEFAULT_REPEATS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from .kernels.problems import DEFAULT_PROBLEM, Problem, get_problem
from .kernels.variants import Kernel
from .results.record import RunResult
from .sim.config import DEFAULT_CONFIG

__all__ = ["render", "run", "sim", "parse", "import_logs", "runs", "diff", "compare", "explain", "report",
           "use_stats", "use_variants", "problem_of"]


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


def _job_run(variant: str, problem, params: dict | None, batch: int | None, backend: str, results, store: bool,
             **options) -> RunResult:
    from .job import Job
    from .run.jobs import run_job

    job = Job.make(variant, dict(params or {}), problem_of(problem, batch), backend, **options)
    result = run_job(job, _results(results))
    if store and result.run_id:
        from .results.store import Store

        with Store(_results(results)) as kept:
            kept.add(result)
    return result


def run(variant: str, problem: str | Problem = DEFAULT_PROBLEM, *, params: dict | None = None,
        batch: int | None = None, seed: int = 0, warmup: int = DEFAULT_WARMUP, repeats: int = DEFAULT_REPEATS,
        sample_check: bool = False, results: str | Path | None = None, store: bool = True) -> RunResult:
    """Build, check and time a variant on the GPU (PyCUDA), as `simflow run`; stored unless store=False."""
    return _job_run(variant, problem, params, batch, "gpu", results, store, seed=seed, warmup=warmup,
                    repeats=repeats, sample_check=sample_check)


def sim(variant: str, problem: str | Problem = DEFAULT_PROBLEM, *, params: dict | None = None,
        batch: int | None = None, config: str = DEFAULT_CONFIG, docker: str | None = None, engine: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S, seed: int = 0, results: str | Path | None = None,
        store: bool = True, sample: str | None = None, workers: int | None = None, quiet: bool = True) -> RunResult:
    """Simulate a variant under GPGPU-Sim (natively, or in `docker` image), check it, as `simflow sim`.

    `sample` ("W1,W2,W3" waves, e.g. "1,2,3"): estimate the whole layer from three simulated batches, as
    `simflow sim --sample` (simflow.sim.sampling), on `workers` local processes; the estimate's record has
    `.estimate` (spec, batches, fraction simulated, each metric's bound). Always stored."""
    if sample is not None:
        from .job import Job
        from .results.store import Store
        from .run.sweep import run_sampled
        from .sim.sampling import SampleSpec

        job = Job.make(variant, dict(params or {}), problem_of(problem, batch), "gpgpusim", config=config,
                       docker_image=docker or "", engine=engine or "", timeout_s=timeout_s, seed=seed)
        with Store(_results(results)) as kept:
            (outcome,) = run_sampled([job], kept, SampleSpec.parse(sample), workers=workers, quiet=quiet)
        if outcome.result is None:
            raise UserError(f"no estimate for {job.describe()}: {outcome.error}")
        return outcome.result
    return _job_run(variant, problem, params, batch, "gpgpusim", results, store, config=config,
                    docker_image=docker or "", engine=engine or "", timeout_s=timeout_s, seed=seed)


def parse(*logs: str | Path, aggregate: bool = False):
    """GPGPU-Sim logs as one DataFrame, a row per kernel launch per log (`aggregate`: per kernel name,
    launches' counts summed and rates weighted by cycles). df.attrs["logs"] holds each log's facts
    (status, reason, build, notes)."""
    import pandas as pd

    from .sim.log import parse_file

    if not logs:
        raise UserError("parse needs at least one log file")
    frames, facts = [], []
    for name in logs:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"no such log file: {path}")
        log = parse_file(path)
        frame = log.frame(by_name=aggregate)
        frames.append(frame.assign(log=str(path)) if len(frame) else frame)
        facts.append({**log.run_facts(), "log": str(path),
                      "aggregated": [f"{r.kernel} ({r.launches} launches)" for r in frame.itertuples()
                                     if aggregate and r.launches > 1]})
    table = pd.concat(frames, ignore_index=True)
    if "log" in table.columns:
        table = table[["log", *[c for c in table.columns if c != "log"]]]
    table.attrs["logs"] = facts
    return table


def import_logs(*logs: str | Path, labels: dict[str, str] | None = None, config: str | None = None,
                results: str | Path | None = None) -> list[RunResult]:
    """Store GPGPU-Sim logs of any application as gpgpusim runs, as `simflow import-log`."""
    from .results.store import Store
    from .sim.log_import import import_log

    done = []
    with Store(_results(results)) as store:
        for name in logs:
            result = import_log(Path(name), dict(labels or {}), config, _results(results))
            store.add(result)
            done.append(result)
    return done


def _stored(*filters: str, results=None) -> list:
    from .results.selectors import select
    from .results.store import Store

    with Store(_results(results), read_only=True) as store:
        return select(store.runs(), filters)


def _one(text: str, results=None):
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
    for r in _stored(*filters, results=results):
        row = {"id": r.id, "created": r.created, "variant": r.variant, "backend": r.backend, "config": r.config,
               "problem": r.problem.name, "batch": r.problem.B, "status": r.status, "reason": r.reason}
        row.update({(f"param_{k}" if k in FIELDS else k): v for k, v in r.params.items()})
        row.update(r.metrics)
        rows.append(row)
    return pd.DataFrame(rows)


def diff(a: str, b: str, *, metrics: list[str] | None = None, threshold: float = 0.01, force: bool = False,
         results: str | Path | None = None):
    """Two runs metric by metric (A, B, delta, ratio, % change, better direction, mark), as `simflow diff`."""
    from .analysis.compare import comparable
    from .analysis.compare import diff as diff_runs

    run_a, run_b = _one(a, results), _one(b, results)
    why = comparable(run_a, run_b)
    if why and not force:
        raise UserError(f"runs {run_a.id} and {run_b.id} are not comparable: {why}; force=True diffs them anyway")
    frame = diff_runs(run_a, run_b, metrics, threshold)
    frame.attrs.update(a=run_a.id, b=run_b.id, not_comparable=why)
    return frame


def compare(*filters: str, by: list[str] | tuple[str, ...] = ("variant",), metrics: list[str] | None = None,
            baseline: str | None = None, all_statuses: bool = False, force: bool = False,
            results: str | Path | None = None) -> list:
    """Runs side by side against a baseline, as `simflow compare`: one DataFrame per like-with-like
    table (df.attrs: title, baseline, left_out)."""
    from .analysis.compare import comparison

    result = comparison(_stored(*filters, results=results), list(by), metrics, baseline,
                        all_statuses=all_statuses, force=force)
    for table in result.tables:
        table.frame.attrs.update(title=table.title, baseline=table.baseline, left_out=result.left_out)
    return [table.frame for table in result.tables]


def explain(a: str, b: str, *, force: bool = False, results: str | Path | None = None) -> dict:
    """Where B's cycles differ from A's, as `simflow explain --format json`: the decompositions
    (`cycles_as_instructions_over_ipc`, `issue_slots`), the evidence and notes."""
    from .analysis.explain import as_dict
    from .analysis.explain import explain as explain_runs

    return as_dict(explain_runs(_one(a, results), _one(b, results), force))


def report(*filters: str, output: str | Path, by: list[str] | tuple[str, ...] = ("variant",),
           metrics: list[str] | None = None, baseline: str | None = None,
           results: str | Path | None = None) -> list[Path]:
    """index.html, report.md and the plots of the matching runs in `output`, as `simflow report`."""
    from .analysis.report import write_report

    return write_report(_stored(*filters, results=results), Path(output), list(by), metrics, baseline)


def use_stats(*files: str | Path) -> None:
    """Add user-defined stats (TOML files, see `simflow parse --catalogue`) for this process."""
    from .sim.catalogue import load_user_stats

    load_user_stats(list(files))


def use_variants(*folders: str | Path) -> None:
    """Add folders of your own variants (NAME.cu.j2 + NAME.toml) for this process and its workers."""
    from .kernels.variants import use_variant_dirs

    use_variant_dirs([str(f) for f in folders])
