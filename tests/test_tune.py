"""simflow tune: the space, Optuna's search within a budget, the cache, tuned.json and --best."""

import json
import math

import pytest
from conftest import simflow

from simflow.errors import UserError
from simflow.kernels.problems import get_problem
from simflow.kernels.variants import get_variant
from simflow.run.tune import Trial, TuneResult, _Optuna, best_config, record_best, space, tunable_variants

PROBLEM = get_problem("batch3x3")


def stand_in_run(job, metric: str, unit: str):
    """A passed record for a job without running it: its value grows with the source's length (test data, not a
    measurement), so the search loop around runs can be tested."""
    from simflow.results.record import RunResult

    kernel = job.kernel()
    run = RunResult.of(job, "passed", kernel.fingerprint(), kernels=list(kernel.kernel_names),
                       run_id=f"r-{job.variant}-{kernel.fingerprint()}")
    run.add(metric, 1000.0 + len(kernel.source), unit)
    return run


def test_the_space_is_every_kernel_parameter_combination_in_a_precision():
    grid = space(["implicit_gemm"], PROBLEM, "float32")
    assert len(grid) == 12 and all(p["precision"] == "fp32" for _, p in grid)  # tile x tile_m x bk
    assert len(space(["implicit_gemm"], PROBLEM, "float16")) == 24  # its fp16 configurations and the finer fp32 ones
    assert len(space(["global"], PROBLEM, "float32")) == 3 * 3 * 2  # tile x unroll x restrict; streams is host-side
    assert all("streams" not in p for _, p in space(["global"], PROBLEM, "float32"))
    with pytest.raises(UserError, match="no configuration of wmma computes in float32;"):
        space(["wmma"], PROBLEM, "float32")
    assert "wmma" in tunable_variants("gpu", "tf32") and "wmma" not in tunable_variants("gpu", "float32")


def test_a_precision_admits_the_finer_ones():
    """A float32 kernel meets TF32's and fp16's tolerance, so it competes there; a coarser one never does."""
    assert space(["global"], PROBLEM, "float16") == space(["global"], PROBLEM, "float32")
    computes = {get_variant(v).precision_of(get_variant(v).resolve(p)) for v, p in space(["mma_nchw"], PROBLEM, "tf32")}
    assert computes == {"tf32"}  # mma_nchw's fp16 configurations are coarser than TF32
    computes = {get_variant(v).precision_of(get_variant(v).resolve(p)) for v, p in space(["mma_nchw"], PROBLEM,
                                                                                          "float16")}
    assert computes == {"tf32", "float16"}
    assert "global" in tunable_variants("gpu", "tf32") and "regtile" in tunable_variants("gpu", "float16")
    assert Trial("regtile", {}, "passed").computes == "float32"
    assert Trial("mma_nchw", {"precision": "fp16"}, "passed").computes == "float16"
    from simflow.terminal import tune_text

    result = TuneResult(PROBLEM, "gpu", "", "tf32", "tpe", "time_ms", 2,
                        [Trial("regtile", {}, "passed", 0.012, "r-1", True),
                         Trial("mma_nchw", {"precision": "tf32"}, "passed", 0.107, "r-2", True)])
    assert "best: regtile" in tune_text(result) and "computes in float32, finer than tf32" in tune_text(result)
    assert result.as_dict()["best"]["computes"] == "float32"


@pytest.mark.parametrize("strategy", ["tpe", "random"])
def test_optuna_asks_within_the_space_and_can_cover_all_of_it(strategy):
    """A known cost per configuration (test data, not a measurement) to test the search itself; a configuration
    asked again is told its known value, as tune() does."""
    grid = space(["global", "shared"], PROBLEM, "float32")
    cost = {(v, json.dumps(p, sort_keys=True)): 1.0 + i for i, (v, p) in enumerate(reversed(grid))}
    proposer, seen = _Optuna(grid, strategy, 3), set()
    while len(seen) < len(grid):  # never runs out before every configuration was asked
        variant, params, token = proposer.ask()
        key = (variant, json.dumps(params, sort_keys=True))
        proposer.tell(token, cost[key], known=key in seen)
        seen.add(key)
    assert seen == set(cost)


def test_tune_runs_j_configurations_at_once_within_the_budget(tmp_path, monkeypatch):
    """The search loop with a stand-in for the simulator run (the loop is what is tested: how many run at once,
    the budget, the cache, the progress): -j 2 keeps two in flight, never three, and never passes --runs."""
    import threading
    import time

    from simflow.backends.gpgpusim import GpgpusimBackend
    from simflow.run import tune as tune_module

    flight, most, lock = [0], [0], threading.Lock()

    def fake_run(job, results):
        with lock:
            flight[0] += 1
            most[0] = max(most[0], flight[0])
        time.sleep(0.2)
        with lock:
            flight[0] -= 1
        return stand_in_run(job, "gpu_sim_cycle", "cycles")

    monkeypatch.setattr(tune_module, "run_job", fake_run)
    heard = []
    result = tune_module.tune(PROBLEM, ["global"], backend="gpgpusim", config=GpgpusimBackend.default_config,
                              strategy="exhaustive", budget_runs=6, results=tmp_path, workers=2,
                              progress=lambda trial, state: heard.append(state))
    assert len(result.trials) == 6 and most[0] == 2 and result.best.status == "passed"
    assert [s.done for s in heard] == [1, 2, 3, 4, 5, 6] and heard[-1].total == 6 and heard[-1].unit == "cycles"
    assert heard[-1].best.value == min(t.value for t in result.trials) and heard[0].eta_s is not None
    again = tune_module.tune(PROBLEM, ["global"], backend="gpgpusim", config=GpgpusimBackend.default_config,
                             strategy="exhaustive", budget_runs=6, results=tmp_path, workers=2)
    assert not any(t.measured for t in again.trials)  # all six from the store
    with pytest.raises(UserError, match="-j is for the simulator"):
        tune_module.tune(PROBLEM, ["global"], backend="gpu", budget_runs=2, results=tmp_path, workers=2)


def test_tuned_json_keeps_the_best_per_layer_and_per_variant(tmp_path):
    result = TuneResult(PROBLEM, "gpu", "", "float32", "tpe", "time_ms", 10, trials=[
        Trial("global", {"tile": 8}, "passed", 0.5, "r1"), Trial("shared", {"tile": 16}, "passed", 0.3, "r2"),
        Trial("shared", {"tile": 8}, "wrong_result", math.inf, "r3"),
        Trial("global", {"tile": 32}, "passed", 0.4, "r4")])
    record_best(tmp_path, result)
    assert best_config(tmp_path, PROBLEM, "gpu") == ("shared", {"tile": 16})
    assert best_config(tmp_path, PROBLEM, "gpu", variant="global") == ("global", {"tile": 32})
    better = TuneResult(PROBLEM, "gpu", "", "float32", "random", "time_ms", 10,
                        trials=[Trial("global", {"tile": 16}, "passed", 0.2, "r5")])
    record_best(tmp_path, better)
    assert best_config(tmp_path, PROBLEM, "gpu") == ("global", {"tile": 16})
    with pytest.raises(UserError, match="no tuned configuration for .*batch3x3.* on gpu in tf32"):
        best_config(tmp_path, PROBLEM, "gpu", precision="tf32")
    with pytest.raises(UserError, match="no tuned configuration for implicit_gemm on"):
        best_config(tmp_path, PROBLEM, "gpu", variant="implicit_gemm")
    assert best_config(tmp_path, PROBLEM.with_batch(4), "gpu")[0] == "global"
    with pytest.raises(UserError, match="no tuned configuration"):
        best_config(tmp_path, PROBLEM.with_batch(8), "gpu")  # another shape


@pytest.mark.parametrize("args,message", [
    (["tune", "global"], "give a budget: --runs N"),
    (["tune", "--runs", "3"], "name the variants to tune, or --all"),
    (["tune", "global", "--all", "--runs", "3"], "name the variants to tune, or --all"),
    (["tune", "global", "--runs", "0"], "--runs"),
    (["tune", "global", "--time", "-1"], "--time must be more than 0"),
    (["run", "--best", "--problem", "batch3x3"], "no tuned configuration"),
    (["run"], "name a variant"),
])
def test_mistakes_say_what_to_change(tmp_path, args, message):
    proc = simflow(*args, "--results", str(tmp_path))
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr


@pytest.mark.gpgpusim
def test_tune_in_the_simulator_resumes_from_the_store_and_run_best_uses_it(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    first = simflow("tune", "shared", "--backend", "gpgpusim", "--strategy", "exhaustive", "--runs", "3", "--json",
                    env=env)
    assert first.returncode == 0, first.stderr
    done = json.loads(first.stdout)
    assert done["tried"] == 3 and done["measured"] == 3 and done["best"]["status"] == "passed"
    again = json.loads(simflow("tune", "shared", "--backend", "gpgpusim", "--strategy", "exhaustive", "--runs", "5",
                               "-j", "2", "--json", env=env).stdout)
    assert again["tried"] == 5 and again["measured"] == 2 and again["from_cache"] == 3  # never measured twice
    best = again["best"]
    sim = simflow("sim", "--best", "--json", env=env)
    assert sim.returncode == 0, sim.stderr
    out = json.loads(sim.stdout)
    assert out["variant"] == best["variant"] and out["params"]["tile"] == best["params"]["tile"]
    assert out["metrics"]["gpu_sim_cycle"] == best["value"]


def test_tune_without_its_backend_says_so_without_a_traceback(tmp_path):
    from hardware import NEEDS

    if NEEDS["gpu"][0]:
        pytest.skip("this machine has the GPU backend: tune would run")
    proc = simflow("tune", "global", "--runs", "2", "--results", str(tmp_path))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr and "optuna" not in proc.stderr.lower()
    assert proc.stderr.startswith("simflow: missing: simflow cannot run on a GPU here")  # a tool missing: exit 3


@pytest.mark.gpu
def test_tune_on_the_gpu_ends_cleanly(tmp_path):
    """One configuration at a time, in the main thread: the CUDA context is popped by the thread that made it
    (a worker thread's context aborted the process at exit)."""
    proc = simflow("tune", "global", "--problem", "batch3x3", "--strategy", "exhaustive", "--runs", "3",
                   "--results", str(tmp_path))
    assert proc.returncode == 0 and "PyCUDA ERROR" not in proc.stderr, proc.stderr
    assert "3 of 18 configurations tried" in proc.stdout and "best: global" in proc.stdout


def test_a_tune_starts_from_what_won_known_layers_and_tries_every_variant_once_first():
    """starts(): STARTS's configurations for the precision and every variant's defaults, each once, within the
    space; every variant comes before any second configuration of one, so FFT is tried on a short budget."""
    from simflow.run.tune_starts import STARTS, starts

    for precision in ("float32", "tf32", "float16"):
        variants = tunable_variants("gpu", precision)
        grid = space(variants, PROBLEM, precision)
        first = starts(variants, grid, precision)
        keys = [(v, json.dumps(p, sort_keys=True)) for v, p in first]
        assert len(set(keys)) == len(keys) and set(keys) <= {(v, json.dumps(p, sort_keys=True)) for v, p in grid}
        assert [v for v, _ in first[: len(variants)]] == list(dict.fromkeys(v for v, _ in first))
        assert sorted(v for v, _ in first[: len(variants)]) == sorted(variants)
        assert first[0][0] == STARTS[precision][0][0]
    assert "fft" in [v for v, _ in starts(["implicit_gemm_async", "fft"], space(["implicit_gemm_async", "fft"],
                                                                                  PROBLEM, "float32"), "float32")[:2]]


def test_optuna_asks_for_the_starts_before_its_own_choices(tmp_path, monkeypatch):
    """With a stand-in for the simulator run (the search order is what is tested), the first trials of a TPE tune
    are starts() in order, then the optimiser's."""
    from simflow.backends.gpgpusim import GpgpusimBackend
    from simflow.run import tune as tune_module

    def fake_run(job, results):
        return stand_in_run(job, "gpu_sim_cycle", "cycles")

    monkeypatch.setattr(tune_module, "run_job", fake_run)
    variants = ["global", "shared", "implicit_gemm", "implicit_gemm_async"]
    first = tune_module.starts(variants, space(variants, PROBLEM, "float32"), "float32")
    result = tune_module.tune(PROBLEM, variants, backend="gpgpusim", config=GpgpusimBackend.default_config,
                              strategy="tpe", budget_runs=len(first) + 3, results=tmp_path)
    tried = [(t.variant, t.params) for t in result.trials]
    assert tried[: len(first)] == first and len(tried) == len(first) + 3


def test_a_serial_backend_has_the_known_next_configurations_built_ahead(tmp_path, monkeypatch):
    """On the GPU (one trial at a time) the starts are built together before their trials, so the trials only
    load them; a stand-in for the backend records what it was asked to build and when (no GPU here)."""
    from simflow.backends.gpu import GpuBackend
    from simflow.run import tune as tune_module

    events = []

    class Builder:
        def precompile(self, kernels, processes=None):
            events.append(("built", sorted((k.variant, json.dumps(k.params, sort_keys=True)) for k in kernels)))
            return len(kernels)

    def fake_run(job, results):
        events.append(("ran", (job.variant, json.dumps(job.kernel().params, sort_keys=True))))
        return stand_in_run(job, "time_ms", "ms")

    monkeypatch.setattr(GpuBackend, "instance", classmethod(lambda cls: Builder()))
    monkeypatch.setattr(tune_module, "run_job", fake_run)
    variants = ["global", "shared", "implicit_gemm"]
    first = tune_module.starts(variants, space(variants, PROBLEM, "float32"), "float32")
    tune_module.tune(PROBLEM, variants, backend="gpu", strategy="tpe", budget_runs=len(first) + 2, results=tmp_path)
    assert events[0][0] == "built" and len(events[0][1]) == len(first)  # every start, in one build, first
    assert [e[0] for e in events[1: len(first) + 1]] == ["ran"] * len(first)
    assert {e[1] for e in events[1: len(first) + 1]} <= set(events[0][1])
    ran = []
    for kind, what in events[1:]:  # later builds: steps from the best so far, one parameter from what ran
        if kind == "ran":
            ran.append((what[0], json.loads(what[1])))
            continue
        for variant, params in what:
            params = json.loads(params)
            assert any(v == variant and sum(params[k] != p.get(k) for k in params) == 1 for v, p in ran), params


def test_after_the_starts_every_other_proposal_steps_from_the_best():
    """A cost that falls along each parameter on its own (test data, not a measurement), lowest at the far end
    of every one from the start: one proposal in two is a step of one parameter from the best so far, and the
    steps climb to the lowest while the sampler explores with the others."""
    grid = space(["global"], PROBLEM, "float32")  # tile x unroll x restrict: 18
    allowed = _Optuna(grid, "tpe", 0).allowed["global"]
    moving = {name: values for name, values in allowed.items() if len(values) > 1}
    start = {**grid[0][1], **{name: values[0] for name, values in moving.items()}}
    lowest = {**start, **{name: values[-1] for name, values in moving.items()}}

    def cost(params):
        return 1.0 + sum(len(values) - 1 - values.index(params[name]) for name, values in moving.items())

    proposer = _Optuna(grid, "tpe", 0, first=[("global", start)])
    asked, best = [], None
    while lowest not in asked:
        variant, params, token = proposer.ask()
        if len(asked) % 2 == 1:  # a step: one parameter away from the best so far
            assert sum(params[k] != best[k] for k in params) == 1, (best, params)
        proposer.tell(token, cost(params), known=params in asked)
        asked.append(params)
        best = min(asked, key=cost)
    moves = sum(len(values) - 1 for values in moving.values())
    print(f"the lowest of {len(grid)} after {len(asked)} proposals; {moves} moves from the start")
    assert len(asked) <= 1 + 2 * (2 * moves)  # at most one step back for each forward
