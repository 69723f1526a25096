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
3. a count that adds up over blocks is extrapolated to the real batch B along a slope s: v(B) = v(b3) + s (B - b3). s is
   the last two samples' slope, s23, free of a first sample cut to part of a wave; for the work (cycles, instructions)
   of a kernel whose largest sample's steady state (its progress samples between its first wave and its last,
   steady_cpi) is nearer the slope across all three, s13, it is s13: its samples ran a wave unevenly, which weighs half
   over two waves. Each is bounded by how far that rate may be off, carried over the B - b3 images past the samples: for
   cycles, the gap between s and the steady state (no less than half the gap between s12 and s23 for s13), or without
   one the gap between s12 and s23, at least RATE_FLOOR of the rate (a family's SAMPLE_DRIFT where its waves drift),
   plus the empty share of B's last wave, at least TAIL_WAVES of a wave (tail_waves); for misses and DRAM traffic the
   slopes' gap, at least MISS_FLOOR or L2_FLOOR of the rate (a real batch's data outgrows the caches the samples' fits
   in); every count but cycles also one CTA's share of it (the real launch's last CTA may be a partial tile no sample
   ran). Rates are recomputed from the estimated counts (IPC, miss rates); rates the simulator averages over cycles
   (occupancy) are extrapolated as value x cycles, over the estimated cycles; other values (latencies, port use) are the
   largest sample's, bounded by how much they moved between the last two samples. benchmarks/sampling.py measures every
   bound against whole simulation.

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

import math
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..kernels.variants import Kernel, Variant
from ..results.folders import write_text
from ..results.record import RunResult
from .config import (
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


def at_batch(job: Job, batch: int) -> Job:
    return replace(job, problem=job.problem.with_batch(batch))


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
    return _on_config(job, scaled(load_config(job.config), run_options(probe), scale), results)  # Job.make named it


def first_ctas_job(job: Job, n: int, results: Path, before: int = 0) -> Job:
    """The job stopped once the first `n` CTAs of its last launch have run to their end, the `before` CTAs of its
    earlier launches run whole (config.first_ctas)."""
    return _on_config(job, first_ctas(load_config(job.config), n, before), results)


def _on_config(job: Job, config: SimConfig, results: Path) -> Job:
    path = results / "sample-configs" / f"{config.name}.toml"
    text = overlay_text(config)
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    return replace(job, config=str(path), config_name=config.name, config_key=config_key(config))


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


