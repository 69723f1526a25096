"""`simflow tune`: the fastest passing configuration of a layer, found by a well-kept optimiser.

The space is every kernel-parameter combination of the chosen variants whose rendering computes in
the chosen precision or a finer one (host-side parameters keep their defaults; see tune_starts.ADMITS). The search
strategy is Optuna's (TPE by default, or random sampling), or the exhaustive grid. Every configuration
goes through the store's cache: one measured before (by a sweep, a run or an earlier tune) is read
back, never run again, so a tune resumes where it stopped. A run that does not pass the elementwise check, or that
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
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..kernels.problems import Problem
from ..kernels.variants import VARIANTS, get_variant
from ..registry import backend_class, backend_names
from ..results.folders import write_json
from ..results.metrics import speed_metric
from ..results.store import Store, shape_key
from .jobs import run_job
from .tune_starts import ADMITS, _key, starts

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

    @property
    def computes(self) -> str:
        """The precision this configuration computes in (a tune admits finer ones than it asks for: ADMITS)."""
        variant = get_variant(self.variant)
        return variant.precision_of(variant.resolve(self.params))


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
                "wall_s": round(self.wall_s, 3), "best": {**asdict(best), "computes": best.computes} if best else None,
                "trials": [{**asdict(t), "value": None if math.isinf(t.value) else t.value} for t in self.trials]}


def space(variants: list[str], problem: Problem, precision: str) -> list[tuple[str, dict]]:
    """Every (variant, kernel parameters) whose rendering computes in `precision` or a finer one (ADMITS);
    refusals included (they are tried and refused by name, cheaply)."""
    configs = []
    for name in variants:
        variant = get_variant(name)
        tunable = [p for p in variant.params if not p.host]
        for values in itertools.product(*(p.choices for p in tunable)):
            params = dict(zip((p.name for p in tunable), values, strict=True))
            if variant.precision_of(variant.resolve(params)) in ADMITS[precision]:
                configs.append((name, params))
    if not configs:
        finer = " or finer" if len(ADMITS[precision]) > 1 else ""
        raise UserError(f"no configuration of {', '.join(variants)} computes in {precision}{finer}; choose another "
                        "--precision (float32, tf32, float16) or other variants")
    return configs


@dataclass
class Progress:
    """Where a tune stands after a trial, for a progress line: trial k of `total`, the best so far, an ETA."""
    done: int
    total: int  # the --runs budget, else the space's size
    best: Trial | None
    unit: str  # of the values (the backend's speed unit)
    eta_s: float | None  # from the measured trials' own durations and the workers; None before the first


def tune(problem: Problem, variants: list[str], *, backend: str = "gpu", config: str = "", precision: str = "float32",
         strategy: str = "tpe", budget_runs: int | None = None, budget_s: float | None = None, seed: int = 0,
         results: Path, progress=None, workers: int = 1) -> TuneResult:
    """Search the space within the budget; `workers` configurations are run at once where the backend allows
    (a simulator; a timed GPU backend runs one at a time). `progress(trial, Progress)` hears each trial."""
    if strategy not in STRATEGIES:
        raise UserError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    for name in variants:
        get_variant(name)
    if workers > 1 and backend_class(backend).serial:
        raise UserError(f"backend {backend} times one configuration at a time (runs sharing the device would slow "
                        "each other); -j is for the simulator (--backend gpgpusim)")
    grid = space(variants, problem, precision)
    metric = speed_metric(backend)
    if not metric:
        timed = [n for n in backend_names() if backend_class(n).speed_metric]
        raise UserError(f"backend {backend} has no speed metric to tune on; use {' or '.join(timed)}")
    out = TuneResult(problem, backend, config, precision, strategy, metric, len(grid))
    proposer = _Grid(grid) if strategy == "exhaustive" else _Optuna(grid, strategy, seed,
                                                                    first=starts(variants, grid, precision))
    started = time.monotonic()
    seen: dict[tuple, Trial] = {}
    running: dict = {}  # future -> (key, variant, params, job, started)
    waiting: dict[tuple, list] = {}  # key in flight -> the proposals that asked for it
    durations: list[float] = []

    # A backend that times one configuration at a time (the GPU) has the known next ones built ahead, AHEAD at
    # once on every core: nvcc is most of a GPU trial's time, and the trials then only load what was built.
    ahead = backend_class(backend).instance() if backend_class(backend).serial else None
    built: set[tuple] = set()

    def build_ahead() -> None:
        todo = [(v, p) for v, p in proposer.upcoming(AHEAD) if _key(v, p) not in built]
        kernels = []
        for variant, params in todo:
            built.add(_key(variant, params))
            try:
                kernels.append(Job.make(variant, params, problem, backend, config=config or "", seed=seed).kernel())
            except UserError:
                pass  # refused: the trial says why, without a build
        if kernels:
            ahead.precompile(kernels)

    def over_budget() -> str:
        if budget_runs is not None and len(out.trials) + len(running) >= budget_runs:
            return f"tried {budget_runs} configurations (--runs)"
        if budget_s is not None and time.monotonic() - started >= budget_s:
            return f"{budget_s:g} s passed (--time)"
        if len(seen) + len(running) >= len(grid):
            return "every configuration of the space was tried"
        return ""

    def record(key: tuple, trial: Trial, tokens: list) -> None:
        seen[key] = trial
        out.trials.append(trial)
        for token in tokens:
            proposer.tell(token, trial.value)
        if progress:
            total = min(budget_runs or len(grid), len(grid))
            left = max(0, total - len(out.trials))
            eta = sum(durations) / len(durations) * math.ceil(left / workers) if durations else None
            if eta is not None and budget_s is not None:
                eta = min(eta, max(0.0, budget_s - (time.monotonic() - started)))
            progress(trial, Progress(len(out.trials), total, out.best, backend_class(backend).speed_unit, eta))

    stop = ""
    with Store(results) as store, (ThreadPoolExecutor(max_workers=workers) if workers > 1 else _Here()) as pool:
        while True:
            while len(running) < workers and not (stop := over_budget()):
                if ahead is not None:
                    build_ahead()
                proposal = proposer.ask()
                if proposal is None:
                    stop = proposer.why_done
                    break
                variant, params, token = proposal
                key = _key(variant, params)
                if key in seen:
                    proposer.tell(token, seen[key].value, known=True)
                    continue
                if key in waiting:
                    waiting[key].append(token)
                    continue
                job = Job.make(variant, params, problem, backend, config=config or "", seed=seed)
                trial = _from_store(store, job, variant, params, metric)
                if trial is not None:
                    record(key, trial, [token])
                    continue
                waiting[key] = [token]
                running[pool.submit(run_job, job, results)] = (key, variant, params, time.monotonic())
            if not running:
                out.stopped = stop or "every configuration of the space was tried"
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                key, variant, params, began = running.pop(future)
                run = future.result()
                durations.append(time.monotonic() - began)
                store.add(run)
                record(key, _trial(run, variant, params, metric, measured=True), waiting.pop(key))
    out.wall_s = time.monotonic() - started
    if out.best is not None:
        record_best(results, out)
    return out


AHEAD = 32  # configurations a serial backend builds at once, ahead of their trials


class _Here:
    """Runs each configuration at once, in this thread (-j 1): a GPU backend's CUDA context belongs to the thread
    that made it, and must be popped by it before the process exits."""

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 (Ctrl-C too: the caller's future.result() raises it)
            future.set_exception(exc)
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class _Grid:
    """The exhaustive strategy: the space in order."""

    why_done = "every configuration of the space was tried"

    def __init__(self, grid: list[tuple[str, dict]]):
        self.grid, self.next = grid, 0

    def ask(self):
        if self.next >= len(self.grid):
            return None
        variant, params = self.grid[self.next]
        self.next += 1
        return variant, params, None

    def upcoming(self, n: int) -> list[tuple[str, dict]]:
        """The next n configurations it will ask for."""
        return self.grid[self.next: self.next + n]

    def tell(self, token, value: float, known: bool = False) -> None:
        pass


class _Optuna:
    """Optuna's define-by-run search through ask and tell: the variant, then each of its parameters, among the
    values the space allows; `first` is asked for before the sampler chooses. Once those are measured, every
    other proposal is a step from the best so far: one parameter moved to another value (the nearest first), a
    coordinate descent beside the sampler's exploration. The sampler alone spreads a short budget over every
    variant and left the best of a good one unfound (VGG conv1_1 fp32 on the H200: 1.28x the whole grid's best
    after 40 s); a variant's parameters mostly act one at a time, so steps from its best climb to it. A
    configuration asked for again is answered from what was measured, without a run; when the sampler keeps
    asking for known ones an unseen one is queued, so the budget is spent."""

    why_done = "the optimiser ran out of trials"

    def __init__(self, grid: list[tuple[str, dict]], strategy: str, seed: int, first: list[tuple[str, dict]] = ()):
        try:
            import optuna
        except ImportError:
            raise UserError("simflow tune needs Optuna for --strategy tpe or random: pip install 'simflow[tune]' "
                            "(or --strategy exhaustive, which needs nothing)") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.grid, self.allowed = grid, {}  # per variant, the values each parameter takes in the space
        for variant, params in grid:
            for name, value in params.items():
                values = self.allowed.setdefault(variant, {}).setdefault(name, [])
                if value not in values:
                    values.append(value)
            self.allowed.setdefault(variant, {})
        self.keys = [_key(v, p) for v, p in grid]
        self.in_grid = set(self.keys)
        sampler = (optuna.samplers.TPESampler(seed=seed) if strategy == "tpe"
                   else optuna.samplers.RandomSampler(seed=seed))
        self.study = optuna.create_study(direction="minimize", sampler=sampler)
        self.asked: set[tuple] = set()
        self.repeats, self.left = 0, 10 * len(grid) + 50
        self.rng = random.Random(seed)
        for variant, params in first:  # asked for before the sampler's own choices (see starts)
            self.enqueue(variant, params)
        self.queued = [(v, p) for v, p in first if _key(v, p) in self.in_grid]
        self.best: tuple[float, str, dict] | None = None  # value, variant, params
        self.proposed: dict[int, tuple[str, dict]] = {}  # Optuna trial number -> its configuration
        self.step_next = True  # alternates steps from the best with the sampler's choices

    def enqueue(self, variant: str, params: dict) -> None:
        """Have the sampler's next trial be this configuration (Optuna's names: the variant, then variant.param)."""
        self.study.enqueue_trial({"variant": variant, **{f"{variant}.{k}": v for k, v in params.items()}})

    def steps(self) -> list[tuple[str, dict]]:
        """Configurations one parameter away from the best so far, not asked for yet: the nearest values first."""
        if self.best is None:
            return []
        _, variant, params = self.best
        found = []
        for name, values in self.allowed[variant].items():
            here = values.index(params[name]) if params.get(name) in values else 0
            for there, value in enumerate(values):
                moved = {**params, name: value}
                if there != here and _key(variant, moved) in self.in_grid and _key(variant, moved) not in self.asked:
                    found.append((abs(there - here), variant, moved))
        return [(v, p) for _, v, p in sorted(found, key=lambda f: f[0])]

    def ask(self):
        while self.left > 0:
            self.left -= 1
            if not self.queued:  # the starts are measured: every other proposal steps from the best
                step = self.steps()[:1] if self.step_next else []
                self.step_next = not self.step_next
                for variant, params in step:
                    self.enqueue(variant, params)
            trial = self.study.ask()
            variant = trial.suggest_categorical("variant", list(self.allowed))
            params = {name: trial.suggest_categorical(f"{variant}.{name}", values)
                      for name, values in self.allowed[variant].items()}
            key = _key(variant, params)
            if key not in self.in_grid:  # a combination of allowed values that computes in another precision
                self.study.tell(trial, math.inf)
                continue
            self.asked.add(key)
            self.queued = [(v, p) for v, p in self.queued if _key(v, p) != key]
            self.proposed[trial.number] = (variant, params)
            return variant, params, trial
        return None

    def upcoming(self, n: int) -> list[tuple[str, dict]]:
        """Of what it will ask for next, what is known: the queued starts, or once they are measured the steps
        from the best so far (the sampler's choices are not)."""
        return (self.queued or self.steps())[:n]

    def tell(self, trial, value: float, known: bool = False) -> None:
        variant, params = self.proposed.pop(trial.number, (None, None))
        if variant is not None and math.isfinite(value) and (self.best is None or value < self.best[0]):
            self.best = (value, variant, params)
        self.study.tell(trial, value if math.isfinite(value) else math.inf)
        self.repeats = self.repeats + 1 if known else 0
        if self.repeats >= REPEATS_BEFORE_NEW:  # the sampler keeps proposing what it knows: try one new
            fresh = [self.grid[i] for i, key in enumerate(self.keys) if key not in self.asked]
            if fresh:
                variant, params = self.rng.choice(fresh)
                self.enqueue(variant, params)
            self.repeats = 0


REPEATS_BEFORE_NEW = 5  # proposals of known configurations in a row before one unseen is queued


def _from_store(store: Store, job: Job, variant: str, params: dict, metric: str) -> Trial | None:
    """A refusal (cheap: it renders), or the stored run of this configuration; None: it must run."""
    try:
        fingerprint = job.kernel().fingerprint()
    except UserError as exc:
        return Trial(variant, dict(params), "refused", reason=str(exc))
    run_id = store.cached(fingerprint, job.problem, job.backend, job.config_key)
    if not run_id:
        return None
    (run,) = store.runs("WHERE id = ?", (run_id,))
    return _trial(run, variant, params, metric, measured=False)


def _trial(run, variant: str, params: dict, metric: str, measured: bool) -> Trial:
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
    configuration in `precision` or a finer one."""
    return [name for name, variant in VARIANTS.items() if variant.fixed.get("output", "conv") == "conv"
            and any(variant.precision_of(variant.resolve(dict(zip((p.name for p in variant.params if not p.host),
                                                                  values, strict=True)))) in ADMITS[precision]
                   for values in itertools.product(*(p.choices for p in variant.params if not p.host)))]
