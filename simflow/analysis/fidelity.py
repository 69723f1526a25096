"""The simulator against the GPU it models: the jobs (variant, parameters, problem) run both ways, joined per
simulator config; per metric how well the two agree (`correlate`), per layer whether they rank the variants
alike, on a config that models the GPU in hand how far simulated time is from measured time (`fidelity`), and
the variant pairs the two order differently (`disagreements`)."""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..registry import backend_class, backend_names
from ..results.store import StoredRun, problem_key

# The counters whose agreement `fidelity` reports (the simulator's names; the hardware's are the gpu-ncu
# backend's aligned counters).
FIDELITY_COUNTERS = {
    "gpu_sim_insn": "thread instructions",
    "Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]": "L1 global load sectors",
    "L2_total_cache_accesses": "L2 sectors",
    "gpgpu_n_shmem_bkconflict": "shared-memory bank conflicts",
    "total dram reads": "DRAM reads",
}
TIME_BACKEND = "gpu"  # its time_ms (CUDA events, the GPU's own clocks) is the measured time


def normalised(run: StoredRun, name: str, pair) -> float:
    """A run's value of an aligned metric in the measuring backend's basis (the model's values scaled)."""
    value = run.metrics.get(name)
    value = math.nan if value is None else float(value)
    base = name.split(".", 1)[-1]
    if run.backend == pair.measures and base in pair.aligned:
        value *= pair.aligned[base].sim_scale
    return value


def _pair():
    return next((backend_class(n) for n in backend_names() if backend_class(n).measures), None)


def both_ways(runs: list[StoredRun]):
    """(the measuring backend class, {(config, variant, parameters, problem): {backend: its newest passed run}})
    for the jobs run both on the model, under a simulator config, and on what measures it; a job simulated under
    two configs is two entries, each with the same hardware run. A config name whose options changed between
    runs (a config calibrated again) is one config per set of options, named with its key: 'H200 (options
    1a2b3c4d)'; runs of one name and different options are never set side by side as one config."""
    pair = _pair()
    model, measured = (pair.measures, pair.name) if pair else ("", "")
    sims: dict[tuple, StoredRun] = {}
    hws: dict[tuple, StoredRun] = {}
    keys: dict[str, set[str]] = {}
    for run in runs:
        if run.backend == model:
            keys.setdefault(run.config, set()).add(run.config_key)
    for run in sorted(runs, key=lambda r: r.created):
        if run.backend in (model, measured) and run.status == "passed" and problem_key(run.problem) is not None:
            job = (run.variant, json.dumps(run.params, sort_keys=True), problem_key(run.problem))
            if run.backend == model:
                label = run.config if len(keys[run.config]) == 1 else f"{run.config} (options {run.config_key[:8]})"
                sims[(label, *job)] = run
            else:
                hws[job] = run
    return pair, {key: {model: sim, measured: hws[key[1:]]} for key, sim in sorted(sims.items())
                  if key[1:] in hws}


def _name(run: StoredRun) -> str:
    return run.label(["variant", *run.params])


def disagreements(runs: list[StoredRun], most: int = 3) -> list[str]:
    """Where a simulator config and the hardware order two variants of one problem differently (by cycles), each
    with the aligned counters whose ratio B/A differs most between the two (the likeliest model limits)."""
    pair, pairs = both_ways(runs)
    if pair is None:
        return []
    model, measured = pair.measures, pair.name
    configs = {key[0] for key in pairs}
    jobs = list(pairs.items())
    said = []
    for i, (key_a, a) in enumerate(jobs):
        for key_b, b in jobs[i + 1:]:
            if key_a[0] != key_b[0] or key_a[3] != key_b[3]:
                continue
            sim = [normalised(x[model], "gpu_sim_cycle", pair) for x in (a, b)]
            hw = [normalised(x[measured], "gpu_sim_cycle", pair) for x in (a, b)]
            if any(math.isnan(v) for v in sim + hw) or (sim[1] - sim[0]) * (hw[1] - hw[0]) >= 0:
                continue
            gaps = []
            for name in pair.aligned:
                rs = _ratio(normalised(a[model], name, pair), normalised(b[model], name, pair))
                rh = _ratio(normalised(a[measured], name, pair), normalised(b[measured], name, pair))
                if rs > 0 and rh > 0 and name != "gpu_sim_cycle":
                    gaps.append((abs(math.log(rs / rh)), name, rs, rh))
            names = [_name(x[model]) for x in (a, b)]
            faster = [names[0] if sim[0] < sim[1] else names[1], names[0] if hw[0] < hw[1] else names[1]]
            where = f" (config {key_a[0]})" if len(configs) > 1 else ""
            said.append(f"the simulator{where} and the GPU order {names[0]} and {names[1]} differently on "
                        f"{a[model].problem.name}: the simulator has {faster[0]} faster ({sim[0]:.0f} vs "
                        f"{sim[1]:.0f} cycles), the GPU {faster[1]} ({hw[0]:.0f} vs {hw[1]:.0f}); B/A differs most in "
                        + ", ".join(f"{name} (x{rs:.3g} simulated, x{rh:.3g} measured)"
                                    for _, name, rs, rh in sorted(gaps, reverse=True)[:most]))
    return said


def _ratio(a: float, b: float) -> float:
    return b / a if a and not (math.isnan(a) or math.isnan(b)) else math.nan


def _agreement(sim: list[float], hw: list[float]) -> dict:
    """Pearson r, Spearman rank correlation, the share of pairs ordered alike and the median ratio sim/hw."""
    import numpy as np
    import pandas as pd

    out = {"pearson": math.nan, "spearman": math.nan, "same_order_%": math.nan, "median_ratio": math.nan,
           "mean_rel_error_%": math.nan}
    n = len(sim)
    if n < 2:
        return out
    s, h = np.array(sim, dtype=float), np.array(hw, dtype=float)
    if s.std() > 0 and h.std() > 0:
        out["pearson"] = float(np.corrcoef(s, h)[0, 1])
        rs, rh = pd.Series(s).rank().to_numpy(), pd.Series(h).rank().to_numpy()
        if rs.std() > 0 and rh.std() > 0:
            out["spearman"] = float(np.corrcoef(rs, rh)[0, 1])
    alike, total = _ordered_alike(s, h)
    out["same_order_%"] = 100 * alike / total if total else math.nan
    nonzero = h != 0
    if nonzero.any():
        out["mean_rel_error_%"] = float(100 * np.mean(np.abs(s[nonzero] - h[nonzero]) / np.abs(h[nonzero])))
        out["median_ratio"] = float(np.median(s[nonzero] / h[nonzero]))
    return out


def _ordered_alike(s, h) -> tuple[int, int]:
    alike = total = 0
    for i in range(len(s)):
        for j in range(i + 1, len(s)):
            if s[i] != s[j] and h[i] != h[j]:
                total += 1
                alike += (s[i] < s[j]) == (h[i] < h[j])
    return alike, total


def correlate(runs: list[StoredRun], metrics: list[str] | None = None):
    """Simulator vs hardware over the jobs run both ways, per simulator config and aligned metric: Pearson r,
    Spearman rank correlation, the share of job pairs ordered alike, the median ratio simulated / measured and the
    mean relative error of the normalised simulator values. Returns (table, points)."""
    import pandas as pd

    pair, pairs = both_ways(runs)
    if len({key[1:] for key in pairs}) < 2:
        raise UserError(f"correlate needs at least 2 variants run both under the simulator (simflow sim) and with "
                        f"counters (simflow profile) on the same problem; found {len({k[1:] for k in pairs})}")
    model, measured = pair.measures, pair.name
    names = metrics or list(pair.aligned)
    rows, points = [], []
    for config in sorted({key[0] for key in pairs}):
        for name in names:
            info = pair.aligned.get(name)
            sim, hw, labels = [], [], []
            for key, both in pairs.items():
                s, h = normalised(both[model], name, pair), normalised(both[measured], name, pair)
                if key[0] == config and not (math.isnan(s) or math.isnan(h)):
                    sim.append(s)
                    hw.append(h)
                    labels.append(f"{_name(both[model])} {both[model].problem.name}")
            rows.append({"config": config, "metric": name, "n": len(sim), **_agreement(sim, hw),
                         "normalisation": info.normalisation if info else ""})
            points += [{"config": config, "metric": name, "group": g, "simulator": a, "hardware": b}
                       for g, a, b in zip(labels, sim, hw, strict=True)]
    columns = ["config", "metric", "n", "pearson", "spearman", "same_order_%", "median_ratio", "mean_rel_error_%",
               "normalisation"]
    return (pd.DataFrame(rows, columns=columns),
            pd.DataFrame(points, columns=["config", "metric", "group", "simulator", "hardware"]))


_CLOCKS = re.compile(r"^-gpgpu_clock_domains\s+([0-9.]+)", re.M)


def simulated_mhz(run: StoredRun, root: Path | None = None) -> float:
    """The core clock (MHz) of the config a simulator run read: from its run folder's gpgpusim.config, or the
    options its log echoes first; for a sampled estimate, its probe's; nan where none is kept."""
    import gzip

    folders = [Path(run.artifacts["run_dir"])] if run.artifacts.get("run_dir") else []
    probe = (run.estimate or {}).get("probe")
    if probe:
        base = Path(root) / "runs" if root else (folders[0].parent if folders else None)
        if base is not None:
            folders.append(base / probe)
    for folder in folders:
        for name, opener in (("gpgpusim.config", open), ("sim.log.gz", gzip.open), ("sim.log", open)):
            if (folder / name).is_file():
                with opener(folder / name, "rt", errors="replace") as text:
                    head = "".join(line for _, line in zip(range(2000), text, strict=False))
                if m := _CLOCKS.search(head):
                    return float(m.group(1))
    return math.nan


def models_gpu(config: str, gpu: str) -> bool:
    """Whether a simulator config models the GPU a run measured: its name is a word of the GPU's ('H200' of
    'NVIDIA H200', as `simflow calibrate` names it). Only then is simulated time set against measured time."""
    name = Path(config.split(" (options ")[0]).stem.lower()
    return bool(name) and name in re.split(r"[^a-z0-9_]+", gpu.lower())


@dataclass
class Fidelity:
    """`fidelity`'s tables (pandas DataFrames)."""

    summary: object  # per config: layers, jobs, median per-layer Spearman, median |time error|, counter ratios
    layers: object  # per config and layer: Spearman of time ranks, pairs ordered alike, time error, pairs named
    counters: object  # per config and counter: n, median ratio simulated / measured, Spearman, Pearson
    points: object  # per config, job: simulated and measured time (ms), cycles, thread instructions sim / GPU


def fidelity(runs: list[StoredRun], root: Path | None = None) -> Fidelity:
    """How far each simulator config is from the GPU on the jobs run both ways. Per layer (problem), the ranks of
    the variants' times: simulated cycles against the GPU's (`gpu` time_ms where every job of the layer has a passed
    run there, else ncu's cycles); the share of pairs ordered alike, and those ordered differently, named. Where the
    simulated clock is known (the run folder's config) and the config models the GPU measured (models_gpu), the
    time error: cycles over that clock against the GPU's time_ms. Per job also the ratio of thread instructions, so
    that a pair ordered differently shows whether the two ran the kernels' instructions alike. Per counter of
    FIDELITY_COUNTERS, the median ratio and the correlations."""
    import pandas as pd

    pair, pairs = both_ways(runs)
    if not pairs:
        raise UserError("fidelity needs jobs run both under the simulator (simflow sim, --sample for real sizes) "
                        "and with counters on the GPU (simflow profile); found none")
    model, measured = pair.measures, pair.name
    timed = {}
    for run in sorted(runs, key=lambda r: r.created):
        if run.backend == TIME_BACKEND and run.status == "passed" and problem_key(run.problem) is not None:
            timed[(run.variant, json.dumps(run.params, sort_keys=True), problem_key(run.problem))] = run
    points = []
    for key, both in pairs.items():
        sim, hw = both[model], both[measured]
        gpu = timed.get(key[1:])
        models = bool(gpu) and models_gpu(key[0], gpu.environment.get("gpu", ""))
        mhz = simulated_mhz(sim, root)
        cycles = normalised(sim, "gpu_sim_cycle", pair)
        gpu_ms = gpu.metrics.get("time_ms", math.nan) if gpu else math.nan
        sim_ms = cycles / (mhz * 1e3) if mhz == mhz else math.nan
        points.append({"config": key[0], "problem": sim.problem.name, "job": _name(sim), "sim_cycles": cycles,
                       "gpu_cycles": normalised(hw, "gpu_sim_cycle", pair), "sim_mhz": mhz, "sim_ms": sim_ms,
                       "gpu_ms": gpu_ms, "time_error_%": 100 * (sim_ms / gpu_ms - 1) if models and gpu_ms == gpu_ms
                       and gpu_ms > 0 else math.nan, "sampled": bool(sim.estimate),
                       "insn_ratio": _ratio(*(normalised(r, "gpu_sim_insn", pair) for r in (sim, hw)))})
    frame = pd.DataFrame(points)
    layers = []
    for (config, problem), sub in frame.groupby(["config", "problem"], sort=True):
        timed_all = all(g == g for g in sub["gpu_ms"])  # one measure for the whole layer: times, else ncu's cycles
        hw = list(sub["gpu_ms"] if timed_all else sub["gpu_cycles"])
        agree = _agreement(list(sub["sim_cycles"]), hw)
        jobs = list(sub["job"])
        differ = [f"{jobs[i]} / {jobs[j]}" for i in range(len(jobs)) for j in range(i + 1, len(jobs))
                  if (sub["sim_cycles"].iloc[i] - sub["sim_cycles"].iloc[j]) * (hw[i] - hw[j]) < 0]
        errors = [abs(e) for e in sub["time_error_%"] if e == e]
        layers.append({"config": config, "layer": problem, "variants": len(sub), "spearman": agree["spearman"],
                       "same_order_%": agree["same_order_%"],
                       "median_abs_time_error_%": statistics.median(errors) if errors else math.nan,
                       "ordered_differently": "; ".join(differ)})
    layers = pd.DataFrame(layers)
    table, _ = correlate(runs, list(FIDELITY_COUNTERS)) if len({k[1:] for k in pairs}) >= 2 else (None, None)
    counters = pd.DataFrame(columns=["config", "counter", "n", "median_ratio", "spearman", "pearson"])
    if table is not None:
        counters = table.assign(counter=table["metric"].map(FIDELITY_COUNTERS))[
            ["config", "counter", "n", "median_ratio", "spearman", "pearson"]]
    summary = []
    for config, sub in layers.groupby("config", sort=True):
        errors = [abs(e) for e in frame[frame["config"] == config]["time_error_%"] if e == e]
        insn = counters[(counters["config"] == config) & (counters["counter"] == "thread instructions")]
        summary.append({"config": config, "layers": len(sub), "jobs": int(sub["variants"].sum()),
                        "median_layer_spearman": _median(sub["spearman"]),
                        "median_same_order_%": _median(sub["same_order_%"]),
                        "median_abs_time_error_%": statistics.median(errors) if errors else math.nan,
                        "thread_insn_ratio": float(insn["median_ratio"].iloc[0]) if len(insn) else math.nan})
    return Fidelity(pd.DataFrame(summary), layers, counters, frame)


def _ratio(a: float, b: float) -> float:
    """a / b, NaN where either is missing or b is 0: the simulator's PTX instructions over the GPU's SASS ones, the
    measure of how differently the two run a kernel (an `ld.const` SASS folds into an FMA; address arithmetic PTX
    leaves to the assembler)."""
    return a / b if a == a and b == b and b else math.nan


def _median(values) -> float:
    kept = [v for v in values if v == v]
    return statistics.median(kept) if kept else math.nan
