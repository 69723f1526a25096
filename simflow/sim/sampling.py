"""Sampled simulation: a whole layer's simulator stats estimated from a few small batches of it.

A convolution's thread blocks do the same work on different data, and every kernel of a variant launches
a number of blocks that grows linearly with the batch (plus, for some, a part that does not: the weight
transforms). So simulating the first images of the real launch, a few whole waves of blocks, tells how
the layer behaves once the SMs are full:

1. a probe simulates one image (of a variant with one launch, only its first CTA: probe_job), to learn from
   the simulator how many CTAs an SM holds; with the CTAs the real launch makes per image, that says how many
   images fill the SMs once (a wave), for the kernel with the most cycles;
2. three batches b1 < b2 < b3 of about w1, w2, w3 waves (the spec, default 1,2,3) are simulated, in
   parallel (local workers, Dask or Slurm, through the sweep engine and its cache), on the GPU cut to 1/k of
   its SMs and memory channels where a wave holds many images (choose_scale; extrapolate says how the cut
   GPU's figures carry over). Each is rounded down
   to whole images: an SM runs its resident blocks in step, so a last wave part full costs about its share
   of a wave, but a handful of blocks just past a whole wave run alone at low occupancy and cost most of a
   wave's time (measured: fmnist-conv1, 13 images = 2.03 waves took 4500 cycles more than the line through
   6 and 19 images). Where a wave holds too few images for that (a one-launch variant under MIN_SCALED_WAVE
   images a wave), a sample is instead the launch's first w waves of CTAs exactly, on the smallest cut GPU,
   the simulator stopped once they have ended (plan_samples, config.first_ctas): a CTA is a sample's unit.
   Launches before it that are the same at any batch (a weight copy) run whole in each sample (by_ctas); a
   variant of several launches that grow is sampled one launch at a time, each made alone (launch_parts);
3. a count that adds up over blocks is extrapolated to the real batch B along a slope s: v(B) = v(b3) + s (B - b3).
   s is the last two samples' slope, s23, free of a first sample cut to part of a wave; for the work (cycles,
   instructions) of a kernel whose largest sample's steady state (its progress samples between its first wave and
   its last, steady_cpi) is nearer the slope across all three, s13, it is s13: its samples ran a wave unevenly,
   which weighs half over two waves. Each is bounded by how far that rate may be off, carried over the B - b3 images
   past the samples: for cycles, the gap between s and the steady state (no less than half the gap between s12 and
   s23 for s13), or without one the gap between s12 and s23, at least RATE_FLOOR of the rate, plus TAIL_WAVES of a
   wave (B's last wave); for misses and DRAM traffic the slopes' gap, at least MISS_FLOOR or L2_FLOOR of the rate (a
   real batch's data outgrows the caches the samples' fits in); every count but cycles also one CTA's share of it
   (the real launch's last CTA may be a partial tile no sample ran). Rates are recomputed from the estimated counts
   (IPC, miss rates); rates the simulator averages over cycles (occupancy) are extrapolated as value x cycles, over
   the estimated cycles; other values (latencies, port use) are the largest sample's, bounded by how much they moved
   between the last two samples. benchmarks/sampling.py measures every bound against whole simulation.

What this borrows from the literature, and why it fits: TBPoint (Huang et al., 2014) and Photon (Liu et
al., 2023) sample within a kernel at thread-block granularity and extrapolate from a steady-state
interval; principal kernel analysis (Baddouh et al., 2021) stops a kernel once its IPC has converged and
projects the rest. A convolution is the easy case for all three: its blocks are homogeneous (no
data-dependent control flow), so simflow does not need their clustering of block signatures, and the
batch is the launch's outermost dimension, so the first b images are exactly the first blocks of the real
grid. The one thing the batch does change is the memory footprint: a real batch whose data outgrows the
L2 misses more per image than the samples, where it all fits (benchmarks/sampling.py measures this).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..kernels.variants import Kernel, Variant
from ..results.folders import keep_result, new_run_folder, write_json, write_text
from ..results.metrics import CHECK_BETTER
from ..results.record import RunResult
from .catalogue import CYCLE_WEIGHTED, MISS_RATES, aggregate, stat_of
from .config import (
    DEFAULT_CONFIG,
    SimConfig,
    config_key,
    cta_limit,
    first_ctas,
    l2_bytes,
    load_config,
    overlay_text,
    parse_options,
    scaled,
    scalings,
)
from .log import MODELLED

METHOD = 13  # kept in each estimate: one made by another method is made again, not answered from the store
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
TAIL_WAVES = 0.25  # and the real batch's last wave, part full or ending unevenly, costs up to this much of a wave
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
class SampleSpec:
    """How much to simulate: three sample batches of about `waves` waves each (None: the variant's own,
    Variant.SAMPLE_WAVES, see for_kernel), on 1/`scale` of the GPU (None: chosen for each layer, see
    choose_scale)."""

    waves: tuple[float, float, float] | None
    scale: int | None = None

    def for_kernel(self, kernel: Kernel) -> SampleSpec:
        """The spec with its waves: the ones given, else the kernel's family's (1,2,3 for most)."""
        if self.waves is not None:
            return self
        family = kernel.family or Variant
        return replace(self, waves=tuple(family.SAMPLE_WAVES))

    @classmethod
    def parse(cls, text: str | None) -> SampleSpec:
        waves_text, scale = "default", None
        for part in (text or "").replace(" ", "").split(";"):
            if part.startswith("scale="):
                value = part.removeprefix("scale=")
                if value != "auto":
                    if not value.isdigit() or int(value) < 1:
                        raise UserError(f"sample spec {text!r}: scale takes a whole number of 1 or more (the GPU cut "
                                        "to 1/scale of its SMs and memory channels) or auto, e.g. --sample "
                                        "'1,2,3;scale=1'")
                    scale = int(value)
            elif part:
                waves_text = part.removeprefix("waves=")
        if waves_text == "default":
            return cls(None, scale)
        try:
            waves = tuple(float(w) for w in waves_text.split(","))
        except ValueError:
            waves = ()
        if len(waves) != 3 or not 0 < waves[0] < waves[1] < waves[2]:
            raise UserError(f"sample spec {text!r}: give three increasing wave counts, e.g. --sample 1,2,3 "
                            "or --sample 2,3,4 (--sample alone: the variant's own, 1,2,3 for most), and "
                            "optionally ';scale=K'")
        return cls(waves, scale)  # type: ignore[arg-type]

    def __str__(self) -> str:
        text = "waves=" + (",".join(f"{w:g}" for w in self.waves) if self.waves else "default")
        return text if self.scale is None else f"{text};scale={self.scale}"


@dataclass(frozen=True)
class Estimate:
    value: float
    bound: float  # absolute: |true - value| is expected under this

    @property
    def relative_bound(self) -> float:
        return self.bound / abs(self.value) if self.value else math.inf


def _kernel_groups(result: RunResult) -> dict[str, dict[str, float]]:
    """Per-kernel metrics, a single kernel's under its own name."""
    groups = result.split_metrics()
    if len(result.kernels) == 1:
        return {result.kernels[0]: groups.get("", {})}
    return {k: v for k, v in groups.items() if k}


def launch_ctas(kernel: Kernel, batch: int) -> dict[str, int]:
    """Per kernel, the CTAs its launches make on `batch` images."""
    made: dict[str, int] = {}
    for launch in kernel.launches(batch):
        made[launch.kernel] = made.get(launch.kernel, 0) + math.prod(launch.grid)
    return made


def wave_images(probe: RunResult, kernel: Kernel, batch: int) -> dict[str, float]:
    """Per kernel, how many images fill the simulated SMs once at the real `batch`: the SMs and the CTAs
    an SM holds come from the probe (the simulator's own occupancy), the CTAs an image makes
    from the launches at `batch` (a GEMM tile may span images, so one image alone can round up)."""
    sms = probe.metrics.get("simulated_sms")
    if not sms:
        raise UserError(f"run {probe.run_id} does not say how many SMs it simulated; sample with a simulator "
                        "run made by this simflow")
    ctas = launch_ctas(kernel, batch)
    out = {}
    for name, metrics in _kernel_groups(probe).items():
        per_sm = metrics.get("cta_per_core")
        if per_sm and ctas.get(name):
            out[name] = min(sms * per_sm * batch / ctas[name], float(batch))
    if not out:
        raise UserError(f"run {probe.run_id} says no CTAs per SM for the kernels of {kernel.variant}")
    return out


def _longest(probe: RunResult, waves: dict[str, float]) -> str:
    """The kernel the samples are sized for: the one with the most cycles in the probe."""
    groups = _kernel_groups(probe)
    return max(waves, key=lambda k: groups[k].get("gpu_sim_cycle", 0))


def sample_batches(probe: RunResult, spec: SampleSpec, kernel: Kernel, batch: int,
                   scale: int = 1) -> tuple[list[int], float]:
    """The sample batches for the real `batch` on 1/`scale` of the GPU, and the images a wave of that GPU
    holds for the kernel with the most cycles (the one the samples are sized for)."""
    waves = wave_images(probe, kernel, batch)
    main = _longest(probe, waves)
    wave = waves[main] / scale
    batches: list[int] = []
    for w in spec.waves:  # whole images, rounded down: a wave part full is linear, a few blocks past one are not
        batches.append(max(math.floor(w * wave + 1e-9), batches[-1] + 1 if batches else 1))
    if batches[-1] * scale >= batch:
        cut = f" on 1/{scale} of the GPU" if scale > 1 else ""
        raise UserError(f"batch {batch} is no larger than the samples ({', '.join(map(str, batches))} images{cut} "
                        f"for {spec}; a wave of {main} holds {wave:.3g} images there): simulate it whole (drop "
                        "--sample) or sample fewer waves")
    return batches, wave


# Images a wave of the cut GPU must hold for choose_scale to cut it: the samples are whole images, so a wave of
# fewer would be sampled in coarse steps (a wave of 6.4 images is sampled at 0.94, 1.9 and 3 waves already).
MIN_SCALED_WAVE = 8


def by_ctas(kernel: Kernel) -> str | None:
    """The kernel whose launch a sample may stop inside (first_ctas), or None: the last launch, where every launch
    before it makes the same CTAs at any batch (implicit_gemm_async's weight copy), so that each sample runs those
    whole and they cost what they cost at the real batch. The simulator's CTA limit counts every launch of the
    process: where an earlier launch grows with the batch, stopping inside a later one would not be a sample of it,
    and stopping inside the earlier one would leave the later kernels unrun."""
    one, grown = _grids(kernel)
    if grown is None or any(a != b for a, b in zip(one[:-1], grown[:-1], strict=True)):
        return None
    names = kernel.kernel_names
    return None if names[-1] in names[:-1] else names[-1]


def _grids(kernel: Kernel) -> tuple[list, list | None]:
    """Each launch's grid on one image and on many (the layer's batch, at least 64: a grid may grow in steps, a
    block of 4 images); None for the second where the launches themselves change with the batch."""
    one, many = (kernel.launches(b) for b in (1, max(kernel.problem.B, 64)))
    if [launch.kernel for launch in one] != [launch.kernel for launch in many]:
        return [launch.grid for launch in one], None
    return [launch.grid for launch in one], [launch.grid for launch in many]


def fixed_ctas(kernel: Kernel) -> tuple[int, int]:
    """The CTAs the launches before by_ctas's make: all of them, and the most one launch makes (a sample of the last
    launch must stop after more CTAs than that, see first_ctas)."""
    before = [math.prod(launch.grid) for launch in kernel.launches(1)[:-1]]
    return sum(before), max(before, default=0)


def probe_job(job: Job, results: Path) -> Job:
    """The probe of a layer: one image, and of a variant sampled by CTAs (by_ctas) only its first CTAs, the ones
    that let every earlier launch run whole (what the probe is read for, the SMs and the CTAs an SM holds, the
    simulator prints as the launch starts; an image of fmnist-conv1 is 6.9e7 instructions for implicit_gemm). A
    fixed launch part's probe is its whole run, and all its estimate needs. So is an image whose launch makes no
    more CTAs than the limit would run: a limit the launch reaches exactly as it ends stops the fork (667834cf)
    without its break line, and the copy of y back is skipped, so the program read zeros and the probe failed its
    check (regtile on an 8x8 image: one CTA)."""
    one = at_batch(job, 1)
    if fixed(job):
        return one
    if not by_ctas(job.kernel()):
        return one
    before, most = fixed_ctas(job.kernel())
    if math.prod(one.kernel().launches(1)[-1].grid) <= most + 1:
        return one
    return first_ctas_job(one, most + 1, results, before)


def completed(run: RunResult | None) -> bool:
    """A run a sample may use: passed, or stopped at its CTA limit (first_ctas) with every one of those CTAs
    issued; the simulator ends such a run before the program checks y."""
    if run is None or run.passed:
        return run is not None
    issued, _ = cta_limit(run_options(run)) if run.status == "stopped_at_limit" else (0, 0)
    return issued > 0 and run.metrics.get("gpu_tot_issued_cta") == issued


@dataclass(frozen=True)
class Plan:
    """The samples of a layer: on 1/`scale` of the GPU, each launching `batches[i]` images and, where `ctas` is
    set, running only the first `ctas[i]` CTAs of that launch; `wave`: the images a wave of the cut GPU holds."""

    scale: int
    batches: list[int]
    ctas: list[int] | None
    wave: float

    def sizes(self, kernel: Kernel, batch: int) -> list[float]:
        """The images of the real launch each sample stands for (a CTA sample: its CTAs' share of them)."""
        if self.ctas is None:
            return [float(b) for b in self.batches]
        total = launch_ctas(kernel, batch)[by_ctas(kernel)]
        return [n * batch / total for n in self.ctas]


# L2 accesses per 1000 thread instructions from which a layer streams memory (benchmarks/sampling.py, SM7_QV100):
# global on 1x1 80x80 images makes 4.7 and read +9.8 % cycles on 10 SMs hashed by XOR, +2.8 % on 20 (IPOLY);
# implicit_gemm (1.15) read -0.3 % on both, implicit_gemm_async (0.47) +0.4 % and -0.4 %.
STREAMING = 2.0


def l2_intensity(probe: RunResult, kernel: str) -> float:
    """The L2 accesses a kernel's probe made per 1000 thread instructions (inf where it says none)."""
    groups = _kernel_groups(probe)
    metrics = groups.get(kernel, {})
    insn, l2 = metrics.get("gpu_sim_insn"), metrics.get("L2_total_cache_accesses")
    return 1000 * l2 / insn if insn and l2 is not None and not math.isnan(l2) else math.inf


def plan_samples(probe: RunResult, spec: SampleSpec, kernel: Kernel, batch: int) -> Plan:
    """Whole images (sample_batches, on choose_scale's cut), or, for a one-launch variant whose wave holds fewer than
    MIN_SCALED_WAVE images on the whole GPU, the launch's first CTAs: exactly w waves of CTAs each, on the smallest
    cut that keeps the config's own address hash, or, for a layer that does not stream memory (under STREAMING L2
    accesses per 1000 instructions in its probe), the smallest cut (spec's scale if given). Images would sample such
    a wave in coarse steps, and could not be cut: fmnist-conv1's implicit_gemm wave is 3.2 images of 2.2e8
    instructions, its samples 1.3e9 (about 40 minutes here). The hash: a streaming layer (global, 1x1, 80x80 images)
    read +9.8 % cycles on SM7_QV100 cut to 10 SMs and 4 channels hashed by XOR, +2.8 % on 20 SMs and 8 channels
    (IPOLY, as the whole GPU), +1.0 % on 40 (benchmarks/sampling.py, global-1x1-wide); implicit_gemm read -0.3 % on
    all three."""
    waves = wave_images(probe, kernel, batch)
    main = by_ctas(kernel)
    if not (main and (waves[main] < MIN_SCALED_WAVE or kernel.only)):  # a launch made alone: its check never runs
        scale = choose_scale(probe, spec, kernel, batch)
        batches, wave = sample_batches(probe, spec, kernel, batch, scale)
        return Plan(scale, batches, None, wave)
    options = run_options(probe)
    every = scalings(options) if options else [1]
    if spec.scale is not None and spec.scale not in every:
        raise UserError(f"sample spec {spec}: the probe's GPU (run {probe.run_id}) cannot be cut to 1/{spec.scale} "
                        f"of its SMs and memory channels exactly; it can by {', '.join(map(str, every))}")
    if spec.scale is not None:
        scale = spec.scale
    elif not options:
        scale = 1
    else:  # a layer that streams memory keeps the whole GPU's address hash; one that computes takes the smallest cut
        scale = (every if l2_intensity(probe, main) < STREAMING else scalings(options, same_hash=True))[-1]
    total = launch_ctas(kernel, batch)[main]
    wave_ctas = waves[main] / scale * total / batch  # the cut GPU's SMs x the CTAs an SM holds
    larger = outgrow_l2(probe, kernel, main, total, options, scale,
                        (min(spec.waves) * wave_ctas, max(spec.waves) * wave_ctas))
    ctas: list[int] = []
    for w in spec.waves:  # each past every earlier launch's CTAs (first_ctas)
        ctas.append(max(round(w * wave_ctas * larger), ctas[-1] + 1 if ctas else fixed_ctas(kernel)[1] + 1))
    if ctas[-1] * scale >= total:
        cut = f" on 1/{scale} of the GPU" if scale > 1 else ""
        raise UserError(f"batch {batch} is no larger than the samples ({', '.join(map(str, ctas))} CTAs{cut} for "
                        f"{spec}, of {total}): simulate it whole (drop --sample) or sample fewer waves")
    batches = []
    for n in ctas:  # the fewest images whose launch's first n CTAs are the real launch's (_same_first_ctas)
        lo, hi = min(batch, max(1, math.ceil((n + 1) * batch / total))), batch
        while lo < hi:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if _same_first_ctas(kernel, main, mid, batch, n) else (mid + 1, hi)
        batches.append(lo)
    return Plan(scale, batches, ctas, waves[main] / scale)


SECTOR = 32  # bytes of an L2 access: SM7_QV100's L2 is sectored (dl2 "S:..."), a request reads or writes one sector


def outgrow_l2(probe: RunResult, kernel: Kernel, main: str, total: int, options: dict[str, str], scale: int,
               samples: tuple[float, float]) -> float:
    """How many times larger a launch made alone (Kernel.only) samples its CTAs than the spec's waves (1 for every
    other): where the launch streams memory (STREAMING), and the real launch moves more bytes through the L2 than the
    GPU's L2 holds, until the smallest of the `samples` (its smallest and largest, in CTAs) moves as much as the cut
    GPU's L2 holds, and no further than the largest can grow inside the real launch's share of the cut GPU less one
    CTA (a sample stops inside the launch; a small batch's samples then run most of it). A sample whose
    data still fits runs at the rate of a warm L2 that the real launch soon leaves: im2col_gemm's permute at
    fmnist-conv1's geometry (2 KB a CTA, 1.5 MB of L2 on 20 SMs) cost 7.6 cycles a CTA between its first 160 and 480
    CTAs and 13.0 between 1,440 and 1,920 (benchmarks/results/sampling-warm-l2-2026-11-27.md), and its samples of
    160, 320, 480 read the launch -40.7 %. The probe's L2 accesses (SECTOR bytes each) over its CTAs give a CTA's
    bytes."""
    if not kernel.only or l2_intensity(probe, main) < STREAMING:
        return 1.0
    accesses = _kernel_groups(probe).get(main, {}).get("L2_total_cache_accesses", math.nan)
    probed, whole = probe.metrics.get("gpu_tot_issued_cta"), l2_bytes(options)
    if math.isnan(accesses) or not (accesses and probed and whole):
        return 1.0
    per_cta = accesses * SECTOR / probed
    smallest, largest = samples
    if per_cta * total <= whole or smallest * per_cta >= whole / scale:
        return 1.0
    return max(1.0, min(whole / scale / (smallest * per_cta), ((total - 1) // scale) / largest))


def _same_first_ctas(kernel: Kernel, name: str, images: int, batch: int, n: int) -> bool:
    """Whether the first n CTAs `name`'s launch makes on `images` are those it makes on `batch`, the same blocks at
    the same coordinates, and it makes more (so the sample stops inside it, on whole tiles). The simulator issues
    CTAs x fastest, then y, then z: where a dimension grows with the batch (im2col's x: 25 blocks an image), the
    first n stay the real launch's only while they fit below it (a sample of 480 CTAs launches 20 images there,
    not 10 whose CTAs would run rows y = 0 and 1)."""
    small, real = (next(launch.grid for launch in kernel.launches(b) if launch.kernel == name) for b in (images, batch))
    if math.prod(small) <= n:
        return images == batch
    span = 1
    for a, b in zip(small, real, strict=True):
        if a != b:
            return n <= span * a
        span *= a
    return True


def sample_jobs(job: Job, plan: Plan, probe: RunResult, results: Path) -> list[Job]:
    """The sample runs of a plan: the job at each batch, on the cut GPU, stopped after its CTAs where it has any."""
    on = scaled_job(job, probe, plan.scale, results)
    if plan.ctas is None:
        return [at_batch(on, b) for b in plan.batches]
    before = fixed_ctas(job.kernel())[0]
    return [first_ctas_job(at_batch(on, b), n, results, before) for b, n in zip(plan.batches, plan.ctas, strict=True)]


def run_options(run: RunResult) -> dict[str, str]:
    """The options a run's simulator read (the merged gpgpusim.config simflow wrote into its folder)."""
    path = Path(run.artifacts.get("run_dir", "")) / "gpgpusim.config"
    return dict(parse_options(path.read_text(errors="replace"))) if path.is_file() else {}


def choose_scale(probe: RunResult, spec: SampleSpec, kernel: Kernel, batch: int) -> int:
    """The GPU the samples run on, as 1/k of the real one (SMs and memory channels cut alike, so each SM keeps
    its share of the memory system and a wave takes about the time it takes on the whole GPU): the spec's k,
    or the smallest GPU whose wave still holds MIN_SCALED_WAVE images. The samples are as many waves on any
    cut; a wave of 80 images (regtile on fmnist-conv1, 80 SMs) is 10 on an eighth, an eighth of the simulation."""
    options = run_options(probe)
    able = scalings(options) if options else [1]
    if spec.scale is not None:
        if spec.scale not in able:
            raise UserError(f"sample spec {spec}: the probe's GPU (run {probe.run_id}) cannot be cut to 1/{spec.scale} "
                            f"of its SMs and memory channels exactly; it can by {', '.join(map(str, able))}")
        return spec.scale
    waves = wave_images(probe, kernel, batch)
    wave = waves[_longest(probe, waves)]
    for k in reversed(able):
        if wave / k >= MIN_SCALED_WAVE:
            return k
    return 1


def scaled_job(job: Job, probe: RunResult, scale: int, results: Path) -> Job:
    """The job on 1/`scale` of its GPU: an overlay written under the results folder (sample-configs/), named by
    path in the job, as a user's own overlay is."""
    if scale == 1:
        return job
    return _on_config(job, scaled(load_config(job.config or DEFAULT_CONFIG), run_options(probe), scale), results)


def first_ctas_job(job: Job, n: int, results: Path, before: int = 0) -> Job:
    """The job stopped once the first `n` CTAs of its last launch have run to their end, the `before` CTAs of its
    earlier launches run whole (config.first_ctas)."""
    return _on_config(job, first_ctas(load_config(job.config or DEFAULT_CONFIG), n, before), results)


def _on_config(job: Job, config: SimConfig, results: Path) -> Job:
    path = results / "sample-configs" / f"{config.name}.toml"
    text = overlay_text(config)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    return replace(job, config=str(path), config_name=config.name, config_key=config_key(config))


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
                cta_images: dict[str, float] | None = None) -> dict[str, Estimate]:
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
                bound = max(gap, RATE_FLOOR * abs(slope)) * (at - b3) + TAIL_WAVES * abs(slope) * wave_of(name)
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


def at_batch(job: Job, batch: int) -> Job:
    return replace(job, problem=job.problem.with_batch(batch))


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
    estimates = extrapolate(list(zip(sizes, (s.metrics for s in samples), strict=True)), batch, waves, steady,
                            ctas, scale, per_cta)
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
    result = RunResult(status="passed", backend=job.backend, variant=job.variant, params=dict(job.params),
                       problem=job.problem, fingerprint=job.kernel().fingerprint(), seed=job.seed, job=job,
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


# ---- variants of several launches that grow with the batch: each launch sampled on its own ----------------------

def by_launch(kernel: Kernel) -> bool:
    """Whether the variant is sampled one launch at a time (launch_parts): it makes several launches, more than its
    last grows with the batch (so no CTA limit over the process samples them, by_ctas), each kernel launched once."""
    names = kernel.kernel_names
    return len(names) > 1 and len(set(names)) == len(names) and by_ctas(kernel) is None


def launch_parts(job: Job) -> list[Job]:
    """The job once for each of its launches, the program making that launch only (Job.launch). Its kernel's timing
    does not depend on the values the launches before it left in memory (no data-dependent control flow); what it
    does lose is the cache state they left: their output warm in the L2, or, where it outgrows the L2, the dirty
    lines whose write-back the whole run pays during this launch (im2col_gemm's permute at fmnist-conv1's geometry:
    -41 %, benchmarks/results/sampling-launches-2026-11-27.md)."""
    return [replace(job, launch=name) for name in job.kernel().kernel_names]


def fixed(part: Job) -> bool:
    """A launch part (launch_parts) that makes the same CTAs at any batch (a weight transform): simulated whole,
    once, its y not checked (the other launches write it); a CTA limit does not stop a kernel that finishes its last
    CTA."""
    if not part.launch:
        return False
    one, many = _grids(part.kernel())
    return one == many


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
