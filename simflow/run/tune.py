"""`simflow tune`: the fastest passing configuration of a layer, found by a well-kept optimiser.

The space is every kernel-parameter combination of the chosen variants whose rendering computes in
the chosen precision (host-side parameters keep their defaults). The search strategy is Optuna's
(TPE by default, or random sampling), or the exhaustive grid. Every configuration goes through the
store's cache: one measured before (by a sweep, a run or an earlier tune) is read back, never run
again, so a tune resumes where it stopped. A run that does not pass the elementwise check, or that
a variant refuses for the layer, never wins. Stop rules: a budget of configurations tried and/or
of seconds. The best configuration per layer (overall and per variant) goes into `tuned.json` in the
results folder, which `simflow run --best` and `simflow sim --best` read.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..backends import backend_class, backend_names
from ..errors import UserError
from ..job import Job
from ..kernels.problems import Problem
from ..kernels.variants import VARIANTS, get_variant
from ..results.folders import write_json
from ..results.metrics import speed_metric
from ..results.store import Store, shape_key
from .jobs import run_job

STRATEGIES = ("tpe", "random", "exhaustive")
TUNED_FILE = "tuned.json"


@dataclass
class Trial:
    variant: str
    params: dict
    status: str  # passed, a failure status, or "refused"
    value: float = math.inf  # the backend's speed metric (lower is faster); inf when it did not pass
    run_id: str = ""
    measured: bool = False  # False: read from the store's cache (or refused without running)
    reason: str = ""


@dataclass
class TuneResult:
    problem: Problem
    backend: str
    config: str
    precision: str
    strategy: str
    metric: str
    space: int  # configurations in the space
    trials: list[Trial] = field(default_factory=list)
    wall_s: float = 0.0
    stopped: str = ""  # why the search ended

    @property
    def best(self) -> Trial | None:
        passed = [t for t in self.trials if t.status == "passed"]
        return min(passed, key=lambda t: t.value) if passed else None

    def as_dict(self) -> dict:
        best = self.best
        return {"problem": self.problem.as_dict(), "backend": self.backend, "config": self.config,
                "precision": self.precision, "strategy": self.strategy, "metric": self.metric, "space": self.space,
                "tried": len(self.trials), "measured": sum(t.measured for t in self.trials),
                "from_cache": sum(not t.measured and t.status != "refused" for t in self.trials),
                "refused": sum(t.status == "refused" for t in self.trials), "stopped": self.stopped,
                "wall_s": round(self.wall_s, 3), "best": asdict(best) if best else None,
                "trials": [{**asdict(t), "value": None if math.isinf(t.value) else t.value} for t in self.trials]}


def space(variants: list[str], problem: Problem, precision: str) -> list[tuple[str, dict]]:
    """Every (variant, kernel parameters) whose rendering computes in `precision`; refusals included
    (they are tried and refused by name, cheaply)."""
    configs = []
    for name in variants:
        variant = get_variant(name)
        tunable = [p for p in variant.params if not p.host]
        for values in itertools.product(*(p.choices for p in tunable)):
            params = dict(zip((p.name for p in tunable), values, strict=True))
            if variant.precision_of(variant.resolve(params)) == precision:
                configs.append((name, params))
    if not configs:
        raise UserError(f"no configuration of {', '.join(variants)} computes in {precision}; choose another "
                        "--precision (float32, tf32, float16) or other variants")
    return configs


def tune(problem: Problem, variants: list[str], *, backend: str = "gpu", config: str = "", precision: str = "float32",
         strategy: str = "tpe", budget_runs: int | None = None, budget_s: float | None = None, seed: int = 0,
         results: Path, progress=None) -> TuneResult:
    if strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    for name in variants:
        get_variant(name)
    grid = space(variants, problem, precision)
    metric = speed_metric(backend)
    if not metric:
        timed = [n for n in backend_names() if backend_class(n).speed_metric]
        raise UserError(f"backend {backend} has no speed metric to tune on; use {' or '.join(timed)}")
    out = TuneResult(problem, backend, config, precision, strategy, metric, len(grid))
    started = time.monotonic()
    seen: dict[tuple, Trial] = {}

    def over_budget() -> str:
        if budget_runs is not None and len(out.trials) >= budget_runs:
            return f"tried {budget_runs} configurations (--runs)"
        if budget_s is not None and time.monotonic() - started >= budget_s:
            return f"{budget_s:g} s passed (--time)"
        if len(seen) >= len(grid):
            return "every configuration of the space was tried"
        return ""

    with Store(results) as store:
        def evaluate(variant: str, params: dict) -> Trial:
            key = (variant, json.dumps(params, sort_keys=True, default=str))
            if key in seen:
                return seen[key]
            trial = _measure(store, problem, variant, params, backend, config, seed, metric, results)
            seen[key] = trial
            out.trials.append(trial)
            if progress:
                progress(trial)
            return trial

        if strategy == "exhaustive":
            for variant, params in grid:
                if (stop := over_budget()):
                    out.stopped = stop
                    break
                evaluate(variant, params)
            else:
                out.stopped = "every configuration of the space was tried"
        else:
            out.stopped = _optuna(grid, evaluate, strategy, seed, over_budget)
    out.wall_s = time.monotonic() - started
    if out.best is not None:
        record_best(results, out)
    return out


def _optuna(grid: list[tuple[str, dict]], evaluate, strategy: str, seed: int, over_budget) -> str:
    """Optuna's define-by-run search: the variant, then each of its parameters, among the values the
    space allows; a configuration asked for again is answered from what was measured, without a run,
    and when the sampler keeps asking for known ones an unseen one is queued, so the budget is spent."""
    try:
        import optuna
    except ImportError:
        raise UserError("simflow tune needs Optuna for --strategy tpe or random: pip install 'simflow[tune]' "
                        "(or --strategy exhaustive, which needs nothing)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    allowed: dict[str, dict[str, list]] = {}  # per variant, the values each parameter takes in the space
    for variant, params in grid:
        for name, value in params.items():
            values = allowed.setdefault(variant, {}).setdefault(name, [])
            if value not in values:
                values.append(value)
        allowed.setdefault(variant, {})
    keys = [(v, json.dumps(p, sort_keys=True, default=str)) for v, p in grid]
    in_grid = set(keys)
    sampler = optuna.samplers.TPESampler(seed=seed) if strategy == "tpe" else optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    asked: set[tuple] = set()
    state = {"repeats": 0, "reason": ""}
    rng = random.Random(seed)

    def objective(trial) -> float:
        variant = trial.suggest_categorical("variant", list(allowed))
        params = {name: trial.suggest_categorical(f"{variant}.{name}", values)
                  for name, values in allowed[variant].items()}
        key = (variant, json.dumps(params, sort_keys=True, default=str))
        if key not in in_grid:
            return math.inf  # a combination of allowed values that computes in another precision
        state["repeats"] = state["repeats"] + 1 if key in asked else 0
        asked.add(key)
        value = evaluate(variant, params).value
        return value if math.isfinite(value) else math.inf

    def stop(study, _trial) -> None:
        if (why := over_budget()):
            state["reason"] = why
            study.stop()
        elif state["repeats"] >= REPEATS_BEFORE_NEW:  # the sampler keeps proposing what it knows: try one new
            fresh = [grid[i] for i, key in enumerate(keys) if key not in asked]
            if fresh:
                variant, params = rng.choice(fresh)
                study.enqueue_trial({"variant": variant, **{f"{variant}.{k}": v for k, v in params.items()}})
            state["repeats"] = 0

    study.optimize(objective, n_trials=10 * len(grid) + 50, callbacks=[stop])  # the budget stops it first
    return state["reason"] or "the optimiser ran out of trials"


REPEATS_BEFORE_NEW = 5  # proposals of known configurations in a row before one unseen is queued


def _measure(store: Store, problem: Problem, variant: str, params: dict, backend: str, config: str, seed: int,
             metric: str, results: Path) -> Trial:
    job = Job.make(variant, params, problem, backend, config=config or "", seed=seed)
    try:
        fingerprint = job.kernel().fingerprint()
    except UserError as exc:
        return Trial(variant, params, "refused", reason=str(exc))
    run_id = store.cached(fingerprint, problem, backend, job.config_key)
    if run_id:
        (run,) = store.runs("WHERE id = ?", (run_id,))
        measured = False
    else:
        run = run_job(job, results)
        store.add(run)
        measured = True
    value = run.metrics.get(metric, math.nan)
    ok = run.status == "passed" and math.isfinite(value)
    return Trial(variant, dict(params), run.status, value if ok else math.inf, run.run_id, measured,
                 "" if ok else run.reason)


def _layer_key(problem: Problem, backend: str, config: str, precision: str) -> str:
    return json.dumps({"shape": json.loads(shape_key(problem)), "backend": backend, "config": config,
                       "precision": precision}, sort_keys=True)


def read_tuned(results: Path) -> dict:
    path = results / TUNED_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is damaged ({exc}); delete it and tune again") from None


def record_best(results: Path, result: TuneResult) -> None:
    """tuned.json: per layer (shape, backend, config, precision), the best overall and per variant."""
    tuned = read_tuned(results)
    key = _layer_key(result.problem, result.backend, result.config, result.precision)
    entry = tuned.setdefault(key, {"problem": result.problem.name, "best": None, "by_variant": {}})
    for trial in (t for t in result.trials if t.status == "passed"):
        record = {"variant": trial.variant, "params": trial.params, result.metric: trial.value,
                  "run_id": trial.run_id}
        mine = entry["by_variant"].get(trial.variant)
        if mine is None or trial.value < mine[result.metric]:
            entry["by_variant"][trial.variant] = record
        if entry["best"] is None or trial.value < entry["best"][result.metric]:
            entry["best"] = record
    results.mkdir(parents=True, exist_ok=True)
    write_json(results / TUNED_FILE, tuned)


def best_config(results: Path, problem: Problem, backend: str, config: str = "", precision: str = "float32",
                variant: str | None = None) -> tuple[str, dict]:
    """The tuned (variant, parameters) for a layer, for `run --best` / `sim --best`."""
    entry = read_tuned(results).get(_layer_key(problem, backend, config, precision))
    record = None if entry is None else (entry["by_variant"].get(variant) if variant else entry["best"])
    if record is None:
        what = f"{variant} on " if variant else ""
        raise UserError(f"no tuned configuration for {what}{problem.describe()} on {backend} in {precision} "
                        f"({results / TUNED_FILE}); run 'simflow tune {variant or '--all'} --problem ... "
                        f"--backend {backend}' first")
    return record["variant"], dict(record["params"])


def tunable_variants(backend: str, precision: str) -> list[str]:
    """--all: every variant that computes the plain convolution (not conv+ReLU+pool) with a
    configuration in `precision`."""
    return [name for name, variant in VARIANTS.items() if variant.fixed.get("output", "conv") == "conv"
            and any(variant.precision_of(variant.resolve(dict(zip((p.name for p in variant.params if not p.host),
                                                                  values, strict=True)))) == precision
                   for values in itertools.product(*(p.choices for p in variant.params if not p.host)))]
