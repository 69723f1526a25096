"""The estimate of a sampled simulation (simflow.sim.sampling plans and runs its samples): every metric of the
three samples carried to the real batch along a slope, each with its bound (see sampling's step 3), and the
record that keeps it."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..job import Job
from ..results.folders import keep_result, new_run_folder, write_json
from ..results.metrics import CHECK_BETTER
from ..results.record import RunResult
from .catalogue import CYCLE_WEIGHTED, MISS_RATES, aggregate, stat_of
from .config import cta_limit
from .log import MODELLED
from .sampling import Plan, SampleSpec, _longest, by_ctas, launch_ctas, run_options, wave_images

METHOD = 16  # kept in each estimate: one made by another method is made again, not answered from the store


# Counts of the simulator's per-kernel kind that add up over blocks (its other per-kernel stats are rates).
_PER_KERNEL_COUNTS = {"gpu_sim_cycle", "gpu_sim_insn"}


# Bookkeeping of the sample runs themselves: the estimate's cost is their sum, their rates mean nothing here.
_COST = {"sim_wall_s", "job_wall_s", "gpgpu_simulation_time"}


_DROPPED = {"gpgpu_simulation_rate_insn", "gpgpu_simulation_rate_cycle", "gpgpu_silicon_slowdown"}


_MODELLED = {name for name, _, _ in MODELLED}  # facts of the simulated GPU: the same in every run of a layer


_IPC = {"gpu_ipc": ("gpu_sim_insn", "gpu_sim_cycle"), "gpu_tot_ipc": ("gpu_tot_sim_insn", "gpu_tot_sim_cycle")}


# Rates the simulator averages over cycles (occupancy, L2 bandwidth ...): their value times the cycles adds up
# over blocks, so it is extrapolated as a count and divided by the estimated cycles. A sample has relatively
# more fill and tail than the real batch, so its own value is biased (measured: occupancy 62 % in 3 waves,
# 56 % in 15).
_OVER_CYCLES = CYCLE_WEIGHTED - {"gpu_ipc", "theoretical_occupancy"}


# Of those, the ones summed over the GPU's memory partitions rather than averaged over its SMs: on a GPU cut to
# 1/k they are 1/k of the whole GPU's.
_GPU_WIDE = {"L2_BW", "partiton_level_parallism"}


# The cycle rate's uncertainty, per image past the largest sample, is at least this share of the rate: the
# real batch's rate drifts from the samples' (its data outgrows the caches, its blocks fall out of step).
# Calibrated on benchmarks/sampling.py.
RATE_FLOOR = 0.06


# The real batch's last wave: ending unevenly it costs up to this much of a wave more than the line, and part full
# up to its empty share (a block of a GEMM tile takes as long on an SM alone as beside others): implicit_gemm at
# 8.3 waves read 6.6 % more cycles than the line, shared_weights at 9.8 waves 2.5 %, constant at 10.9 0.3 %.
TAIL_WAVES = 0.25


def tail_waves(waves: float) -> float:
    """The share of a wave the real batch's last one may cost past the samples' line: its empty share, at least
    TAIL_WAVES."""
    waves = round(waves, 6)
    return max(TAIL_WAVES, math.ceil(waves) - waves)


# Cache misses and DRAM traffic per image change with the batch (a real batch's data outgrows the caches the
# samples' data fits in: measured up to 19 % more L1D misses an image and 42 % more L2 misses), so their rate's
# uncertainty is at least this share of it: L1 misses, then the L2's and DRAM's. Calibrated the same way.
MISS_FLOOR = 0.25


L2_FLOOR = 0.4


def _ctas_of(per_kernel: dict[str, int], kernel: str) -> int:
    """A kernel's CTAs, or every kernel's for a run-level metric."""
    return per_kernel.get(kernel, 0) if kernel in per_kernel else sum(per_kernel.values())


def _footprint_floor(base: str) -> float:
    """How far the per-image rate of a count may drift as the data outgrows the caches (0: it does not)."""
    if base.startswith("L2_") or "dram" in base.lower():
        return L2_FLOOR
    return MISS_FLOOR if "miss" in base.lower() else 0.0


@dataclass(frozen=True)
class Estimate:
    value: float
    bound: float  # absolute: |true - value| is expected under this

    @property
    def relative_bound(self) -> float:
        return self.bound / abs(self.value) if self.value else math.inf


def _is_count(name: str) -> bool:
    base = name.split(".", 1)[-1]
    stat = stat_of(base)
    return base in _PER_KERNEL_COUNTS or (stat is not None and stat.kind == "cumulative")


MIN_STEADY_WAVES = 2.5  # a sample needs its first wave and its last, and half a wave between them


def steady_cpi(intervals: list[dict], kernel: str, waves: float) -> float | None:
    """Cycles per thread instruction of `kernel` in a sample's steady state: over the instructions past
    its first wave and before its last, from the simulator's progress samples (intervals.csv rows). None
    when the sample holds under MIN_STEADY_WAVES waves of the kernel or has no progress samples."""
    rows = [r for r in intervals if r["kernel"] == kernel and not math.isnan(float(r["ipc"]))]
    if waves < MIN_STEADY_WAVES or not rows:
        return None
    done, points = 0.0, [(float(rows[0]["cycle_start"]), 0.0)]
    for r in rows:
        done += (float(r["cycle_end"]) - float(r["cycle_start"])) * float(r["ipc"])
        points.append((float(r["cycle_end"]), done))
    lo, hi = done / waves, done * (waves - 1) / waves
    start = next(p for p in points if p[1] >= lo)
    end = next(p for p in points if p[1] >= hi)
    if end[1] <= start[1]:
        return None
    return (end[0] - start[0]) / (end[1] - start[1])


def _steady_rate(points: list[tuple[int, dict[str, float]]], first: int, kernel: str,
                 steady: dict[str, float] | None) -> float | None:
    """A kernel's cycles per image in the largest sample's steady state: its cycles per instruction times
    the instructions an image adds over the samples from `first` on. None without a steady state."""
    cpi = (steady or {}).get(kernel)
    insn = f"{kernel}.gpu_sim_insn" if f"{kernel}.gpu_sim_insn" in points[-1][1] else "gpu_sim_insn"
    if not cpi or any(insn not in m for _, m in points):
        return None
    (bf, mf), (b3, m3) = points[first], points[-1]
    return cpi * (m3[insn] - mf[insn]) / (b3 - bf)


def _work_spans(points: list[tuple[int, dict[str, float]]], steady: dict[str, float]) -> dict[str, int]:
    """Per kernel with a steady state, the first sample of the span its work (cycles, instructions) grows
    along: the last two samples (1), or all three (0) where the steady state is nearer that slope. The
    last two are free of a first sample cut to part of a wave; all three weigh a wave that ran unevenly
    (out of step with the next, or with a cache state of its own) half as much. The steady state, read
    inside the largest sample, tells which of the two the samples show."""
    spans = {}
    for kernel in steady:
        cycles = f"{kernel}.gpu_sim_cycle" if f"{kernel}.gpu_sim_cycle" in points[-1][1] else "gpu_sim_cycle"
        if any(cycles not in m for _, m in points):
            continue
        (b3, m3) = points[-1]
        gaps = []
        for first in (1, 0):
            rate = _steady_rate(points, first, kernel, steady)
            bf, mf = points[first]
            gaps.append(math.inf if rate is None else abs((m3[cycles] - mf[cycles]) / (b3 - bf) - rate))
        spans[kernel] = 0 if gaps[1] < gaps[0] else 1
    return spans


def extrapolate(points: list[tuple[int, dict[str, float]]], batch: int,
                wave_images: float | dict[str, float], steady: dict[str, float] | None = None,
                ctas: Callable[[int], dict[str, int]] | None = None, scale: int = 1,
                cta_images: dict[str, float] | None = None, rate_floor: float = RATE_FLOOR) -> dict[str, Estimate]:
    """Estimates at `batch` of every metric of three sampled batches (batch, metrics), smallest first.
    `wave_images`: images a wave holds, one number or per kernel (the `<kernel>.` prefix of a metric).
    `steady`: per kernel, cycles per thread instruction in the largest sample's steady state
    (steady_cpi): a second measure of how fast cycles grow, and the cycle bound is the larger of the two
    disagreements (first slope vs last, steady rate vs last slope), carried to `batch`.
    `ctas`: per kernel, the CTAs a launch at a batch makes. Where a tile spans images they do not grow with
    the images, and a count grown along the CTAs instead says how far the images' line may be off.
    `cta_images`: per kernel, the images one CTA of the real launch stands for. A count the samples make exactly
    alike (instructions) is still bounded by one CTA's share of it: the real launch's last CTA can be a partial
    tile the samples never ran (implicit_gemm tile=64 on 57 images read +0.04 % instructions).
    `rate_floor`: the cycle rate's least uncertainty, a share of it (a family's SAMPLE_DRIFT where its waves drift).
    `scale`: the samples ran on 1/scale of the GPU (its SMs and memory channels). Counts grow per image alike on
    both, so they are carried to `batch`; the cut GPU runs `batch` / scale images in the waves, and so the
    cycles, the whole GPU runs `batch` in; rates over the whole GPU (L2 bandwidth) are scale times the cut one's."""
    at = batch / scale  # the images the cut GPU runs in the time the whole one runs `batch`
    if len(points) != 3 or not points[0][0] < points[1][0] < points[2][0] <= at:
        raise ValueError("three sampled batches, increasing, none above the real batch")
    (b1, m1), (b2, m2), (b3, m3) = points
    out: dict[str, Estimate] = {}

    def kernel_of(name: str) -> str:
        if "." in name:
            return name.split(".", 1)[0]
        return next(iter(wave_images)) if isinstance(wave_images, dict) and len(wave_images) == 1 else ""

    def wave_of(name: str) -> float:
        return wave_images.get(kernel_of(name), 0.0) if isinstance(wave_images, dict) else wave_images

    spans = _work_spans(points, steady or {})
    for name, v3 in m3.items():
        if name not in m1 or name not in m2 or any(isinstance(m[name], str) or math.isnan(m[name])
                                                   for m in (m1, m2, m3)):
            continue
        base = name.split(".", 1)[-1]
        if base in _DROPPED or base in CHECK_BETTER or base in MISS_RATES or base in _IPC or base in _OVER_CYCLES:
            continue
        if base in _COST:
            out[name] = Estimate(m1[name] + m2[name] + v3, 0.0)
        elif _is_count(name):
            s12 = (m2[name] - m1[name]) / (b2 - b1)
            s23 = (v3 - m2[name]) / (b3 - b2)
            first = spans.get(kernel_of(name), 1) if base in _PER_KERNEL_COUNTS else 1
            bf, mf = points[first]
            slope = (v3 - mf[name]) / (b3 - bf)
            target = at if base == "gpu_sim_cycle" else batch
            bound = abs(s23 - s12) * (target - b3)
            if base == "gpu_sim_cycle":
                # how far the rate may be off: from the largest sample's steady state where it has one (and no
                # less than half the halves' gap, which an uneven wave splits between them), else the halves' gap
                rate = _steady_rate(points, first, kernel_of(name), steady)
                gap = abs(s23 - s12) if rate is None else abs(slope - rate)
                if first == 0:
                    gap = max(gap, abs(s23 - s12) / 2)
                wave = wave_of(name)
                tail = tail_waves(at / wave) if wave > 0 else TAIL_WAVES
                bound = max(gap, rate_floor * abs(slope)) * (at - b3) + tail * abs(slope) * wave
            elif floor := _footprint_floor(base):
                bound = max(abs(s23 - s12), floor * abs(slope)) * (batch - b3)
            if ctas is not None:
                cf, c3 = (_ctas_of(ctas(b), kernel_of(name)) for b in (bf, b3))
                cb = _ctas_of(ctas(batch), kernel_of(name)) * target / batch
                if c3 > cf:  # the same count grown along the CTAs: where a tile spans images, it differs
                    bound += abs((v3 - mf[name]) / (c3 - cf) * (cb - c3) - slope * (target - b3))
            if base != "gpu_sim_cycle" and cta_images:  # cycles have their last wave's term
                kernel = kernel_of(name)
                bound += abs(slope) * (cta_images.get(kernel, 0.0) if kernel else max(cta_images.values()))
            out[name] = Estimate(max(v3 + slope * (target - b3), 0.0), bound)  # a count is never negative
        else:  # steady state: the largest sample's, bounded by its last move
            out[name] = Estimate(v3, abs(v3 - m2[name]))
    # A run of several kernels: its total cycles are its kernels', each estimated on its own.
    kernel_cycles = [e for n, e in out.items() if n.endswith(".gpu_sim_cycle")]
    if kernel_cycles and "gpu_sim_cycle" in out:
        out["gpu_sim_cycle"] = Estimate(sum(e.value for e in kernel_cycles), sum(e.bound for e in kernel_cycles))
    for name, v3 in m3.items():  # rates over cycles: the sum over cycles is a count, divided by the cycles
        base, cycles = name.split(".", 1)[-1], name[: -len(name.split(".", 1)[-1])] + "gpu_sim_cycle"
        known = all(isinstance(m.get(n), float | int) and not math.isnan(m[n]) for m in (m1, m2, m3)
                    for n in (name, cycles))
        if base not in _OVER_CYCLES or cycles not in out or not known:
            continue
        summed = [m[name] * m[cycles] for m in (m1, m2, m3)]
        value = (summed[2] + (summed[2] - summed[1]) / (b3 - b2) * (at - b3)) / out[cycles].value \
            if out[cycles].value > 0 else v3
        # bounded by how far the real batch moves it from the largest sample plus that sample's last move, and
        # by no less than the cycle rate's own floor
        wide = scale if base in _GPU_WIDE else 1
        out[name] = Estimate(value * wide, wide * max(abs(value - v3) + abs(v3 - m2[name]), RATE_FLOOR * abs(value)))
    for prefix in {n.split(".", 1)[0] + "." if "." in n else "" for n in out}:
        if prefix + "gpu_tot_sim_cycle" in out and prefix + "gpu_sim_cycle" in out:  # the same cycles, differenced
            out[prefix + "gpu_tot_sim_cycle"] = out[prefix + "gpu_sim_cycle"]
        for rate, (num, den) in {**_IPC, **MISS_RATES}.items():
            top, bottom = out.get(prefix + num), out.get(prefix + den)
            if top and bottom and bottom.value > 0:
                value = top.value / bottom.value
                out[prefix + rate] = Estimate(value, value * (top.relative_bound + bottom.relative_bound))
    return out


def _estimates(job: Job, probe: RunResult, samples: list[RunResult], plan: Plan) -> tuple[dict[str, Estimate], dict]:
    """A layer's metrics estimated at the job's batch from the plan's samples, and how (the estimate's own facts:
    batches, CTAs, waves, steady state, the share of the batch simulated)."""
    batch, kernel = job.problem.B, job.kernel()
    scale, sizes = plan.scale, plan.sizes(kernel, batch)
    waves = {k: w / scale for k, w in wave_images(probe, kernel, batch).items()}
    last = samples[-1]
    steady = {}
    if last.artifacts.get("intervals") and Path(last.artifacts["intervals"]).is_file():
        with open(last.artifacts["intervals"], newline="") as f:
            rows = list(csv.DictReader(f))
        for name, wave in waves.items():
            cpi = steady_cpi(rows, name, sizes[-1] / wave)
            if cpi:
                steady[name] = cpi
    # CTA samples are the CTAs themselves; where whole images are, a tile spanning images is bounded along the CTAs
    ctas = None if plan.ctas else (lambda images: launch_ctas(kernel, images))
    probe_share = float(probe.problem.B)  # the images the probe ran, or a CTA probe's share of them
    probed = cta_limit(run_options(probe))[1]
    if probed:
        probe_share = probed * batch / launch_ctas(kernel, batch)[by_ctas(kernel)]
    per_cta = {k: batch / n for k, n in launch_ctas(kernel, batch).items() if n}
    drift = getattr(kernel.family, "SAMPLE_DRIFT", None)
    estimates = extrapolate(list(zip(sizes, (s.metrics for s in samples), strict=True)), batch, waves, steady,
                            ctas, scale, per_cta, RATE_FLOOR if drift is None else drift)
    main = by_ctas(kernel) if plan.ctas else _longest(probe, waves)
    facts = {"batches": [s.problem.B for s in samples], "ctas": plan.ctas, "wave_images": round(waves[main] * scale, 4),
             "scale": scale, "sample_config": samples[-1].job.config_name if samples[-1].job else "",
             "steady_cycles_per_insn": steady,  # per kernel, the largest sample's steady state: checks the slope
             "fraction": (probe_share + sum(sizes)) / batch, "probe": probe.run_id, "runs": [s.run_id for s in samples]}
    return estimates, facts


def estimate_result(job: Job, probe: RunResult, samples: list[RunResult], spec: SampleSpec, results: Path,
                    wall_s: float = 0.0, plan: Plan | None = None) -> RunResult:
    """The record of a sampled simulation: metrics estimated at the job's batch, each with its bound. The samples
    are the plan's (default: whole images on the whole GPU)."""
    plan = plan or Plan(1, [s.problem.B for s in samples], None, 0.0)
    estimates, facts = _estimates(job, probe, samples, plan)
    reason = ""
    if plan.ctas:
        reason = (f"estimated from the first {', '.join(map(str, plan.ctas))} CTAs of the launch; the simulator "
                  "ends such a sample before the program checks y, so this estimate checked no output")
    return _record(job, estimates, facts, probe if plan.scale > 1 else samples[-1], samples, spec, results,
                   wall_s, reason)


def _record(job: Job, estimates: dict[str, Estimate], facts: dict, gpu: RunResult, samples: list[RunResult],
            spec: SampleSpec, results: Path, wall_s: float, reason: str) -> RunResult:
    """The estimate as a stored run. `gpu`: a run on the GPU estimated (the probe's, where the samples ran on a cut
    one): its environment (config hash) and SM count are the estimate's."""
    last = samples[-1]
    result = RunResult.of(job, "passed", job.kernel().fingerprint(),
                          environment=dict(gpu.environment), kernels=job.kernel().kernel_names,
                          units={k: v for s in samples for k, v in s.units.items()}, reason=reason)
    for name, e in estimates.items():
        result.metrics[name] = e.value
    if "simulated_sms" in gpu.metrics:
        result.metrics["simulated_sms"] = gpu.metrics["simulated_sms"]
    for name in last.metrics:  # the samples' own checks: the worst of them
        if name.split(".", 1)[-1] in CHECK_BETTER:
            values = [s.metrics[name] for s in samples if name in s.metrics and not math.isnan(s.metrics[name])]
            result.metrics[name] = (sum if name.endswith("checked_elements") else max)(values) if values else math.nan
    bounds = {name: e.bound for name, e in estimates.items() if name.split(".", 1)[-1] not in _COST}
    result.estimate = {"spec": str(spec), "method": METHOD, **facts, "wall_s": round(wall_s, 3), "bounds": bounds}
    result.run_id, folder = new_run_folder(job.variant, results)
    write_json(folder / "job.json", {**job.as_dict(), "sample": str(spec)})
    result.artifacts = {"run_dir": str(folder)}
    keep_result(result, folder)
    return result


def estimate_launches(job: Job, parts: list[tuple[Job, RunResult, list[RunResult], Plan | None]], spec: SampleSpec,
                      results: Path, wall_s: float = 0.0) -> RunResult:
    """The record of a layer sampled one launch at a time: each launch's metrics estimated from its own samples (a
    fixed one's: its whole run, exact), under the kernel's name, and the run's totals over its launches as a whole
    run of several kernels has them (catalogue.aggregate), each total's bound from its launches' bounds."""
    estimates: dict[str, Estimate] = {}
    per_launch, launches, runs, main = [], {}, [], None
    for part, probe, samples, plan in parts:
        if plan is None:  # fixed: its one run is exact
            own = {n: Estimate(v, 0.0) for n, v in probe.metrics.items() if isinstance(v, float | int)}
            facts = {"batches": [probe.problem.B], "ctas": None, "probe": probe.run_id, "runs": [probe.run_id],
                     "fraction": 0.0}
        else:
            own, facts = _estimates(part, probe, samples, plan)
            if main is None or own["gpu_sim_cycle"].value > main[0]:
                main = (own["gpu_sim_cycle"].value, probe, samples, facts)
        for name, e in own.items():
            if name in _COST:  # what the launch's runs cost: the layer's is their sum
                estimates[name] = Estimate(estimates.get(name, Estimate(0.0, 0.0)).value + e.value, 0.0)
            elif name in _MODELLED:  # the simulated GPU's facts, the same in every part
                estimates.setdefault(name, e)
            elif name not in CHECK_BETTER:
                estimates[f"{part.launch}.{name}"] = e
        per_launch.append({n: e for n, e in own.items() if stat_of(n) is not None or n in CYCLE_WEIGHTED})
        launches[part.launch] = facts
        runs += [r for r in (probe, *samples) if r.run_id not in {run.run_id for run in runs}]
    values = aggregate([{n: e.value for n, e in own.items()} for own in per_launch])
    for name, value in values.items():  # the run's totals, as a whole run of several kernels has them
        if any(name not in own for own in per_launch):
            continue
        bounds = [own[name].bound for own in per_launch]
        if name in CYCLE_WEIGHTED:
            cycles = [own["gpu_sim_cycle"].value if "gpu_sim_cycle" in own else 0.0 for own in per_launch]
            bound = sum(b * c for b, c in zip(bounds, cycles, strict=True)) / sum(cycles) if sum(cycles) else math.nan
        elif stat_of(name) is not None and stat_of(name).kind == "process":
            bound = bounds[-1]
        else:
            bound = sum(bounds)
        estimates[name] = Estimate(value, bound)
    for rate, (num, den) in {**_IPC, **MISS_RATES}.items():
        top, bottom = estimates.get(num), estimates.get(den)
        if top and bottom and bottom.value > 0:
            value = top.value / bottom.value
            estimates[rate] = Estimate(value, value * (top.relative_bound + bottom.relative_bound))
    _, main_probe, main_samples, main_facts = main
    facts = {**main_facts, "fraction": sum(f["fraction"] for f in launches.values()),
             "runs": [r.run_id for r in runs if r.run_id != main_probe.run_id], "launches": launches}
    reason = (f"estimated one launch at a time ({', '.join(launches)}), each from its first CTAs in a program that "
              "makes it alone; such a sample ends before the program checks y, so this estimate checked no output")
    gpu = main_probe if main_facts["scale"] > 1 else main_samples[-1]
    return _record(job, estimates, facts, gpu, runs, spec, results, wall_s, reason)

