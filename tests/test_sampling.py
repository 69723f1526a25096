"""simflow.sim.sampling: the linear estimate from three sampled batches and its bound, sampled records in the
store and in diff/compare/explain; with the simulator, an estimate against the whole simulation (the wider
validation is benchmarks/sampling.py)."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
from conftest import simflow
from runs import PROBLEM

from simflow.analysis.compare import comparison
from simflow.analysis.compare import diff as diff_runs
from simflow.analysis.explain import as_dict, explain
from simflow.errors import UserError
from simflow.job import Job
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.values import Params
from simflow.kernels.variants import render
from simflow.results.record import RunResult
from simflow.results.store import Store, StoredRun
from simflow.run.sweep_file import load_sweep
from simflow.sim.config import config_key, cta_limit, first_ctas, load_config, scaled, scalings
from simflow.sim.estimate import (
    MISS_FLOOR,
    RATE_FLOOR,
    TAIL_WAVES,
    Estimate,
    estimate_launches,
    estimate_result,
    extrapolate,
    steady_cpi,
    tail_waves,
)
from simflow.sim.sampling import (
    MIN_SCALED_WAVE,
    Plan,
    SampleSpec,
    at_batch,
    by_ctas,
    by_launch,
    choose_scale,
    completed,
    first_ctas_job,
    fixed,
    fixed_ctas,
    launch_parts,
    plan_samples,
    probe_job,
    sample_batches,
    sample_jobs,
    scaled_job,
    wave_images,
)


def _metrics(batch: int, wave_cycles: float = 1000.0, fill: float = 0.0) -> dict:
    # cycles: launch latency + whole waves (4 images a wave) + a fill cost paid by the first wave only
    return {"gpu_sim_cycle": 5000 + wave_cycles * batch / 4 + fill, "gpu_sim_insn": 3000.0 * batch + 100,
            "L1D_total_cache_misses": 7.0 * batch}


def test_counts_that_add_up_over_blocks_are_exact():
    points = [(b, _metrics(b)) for b in (4, 8, 12)]
    est = extrapolate(points, 400, wave_images=4)
    assert est["gpu_sim_insn"].value == 3000 * 400 + 100 and est["gpu_sim_insn"].bound == 0
    assert est["L1D_total_cache_misses"].value == 2800
    assert est["gpu_sim_cycle"].value == 5000 + 1000 * 100
    # the rate's floor over the images past the largest sample, and half a wave: the last one may be part full
    assert est["gpu_sim_cycle"].bound == pytest.approx(RATE_FLOOR * 250 * (400 - 12) + TAIL_WAVES * 1000)
    assert est["gpu_ipc"].value == pytest.approx((3000 * 400 + 100) / 105000)
    assert "gpgpu_n_shmem_insn" not in est  # not in the samples: no estimate


def test_a_layer_still_filling_gets_a_wider_bound_that_covers_the_truth():
    """The first sample pays a fill cost the others do not: the slopes disagree, and that disagreement,
    carried to the real batch, bounds the error."""
    points = [(4, _metrics(4, fill=600)), (8, _metrics(8, fill=150)), (12, _metrics(12, fill=0))]
    est = extrapolate(points, 400, wave_images=4)["gpu_sim_cycle"]
    truth = _metrics(400)["gpu_sim_cycle"]
    assert est.bound > 500 and abs(est.value - truth) <= est.bound


# constant on 40,3,6,20,20,5,2 under SM7_QV100_small, the case of issue 32 (accel-sim fork, 2026-11-25): a wave
# is 2.67 images, so the samples (2, 5, 8 images) are 0.75, 1.9 and 3 waves; the whole layer is 15 waves.
REPORTED = {2: (34238, 7258512, 53.539), 5: (72846, 18146280, 63.7485), 8: (100985, 29034048, 61.7164)}
REPORTED_TRUTH = {"gpu_sim_cycle": 425168, "sampled_occupancy": 56.2046, "gpu_ipc": 145170240 / 425168}


def test_the_reported_case_is_covered_by_bounds_that_tell_something():
    """Measured before: cycles -5.7 % under a +-31 % bound (the first sample's partial wave, its slope's gap
    to the second carried whole over 32 images), occupancy +9.8 % under a +-3.3 % bound (the largest sample's
    own value: 3 waves have more fill and tail than 15)."""
    points = [(b, {"gpu_sim_cycle": c, "gpu_sim_insn": i, "sampled_occupancy": o}) for b, (c, i, o) in REPORTED.items()]
    est = extrapolate(points, 40, 8 / 3, {"": 0.0026465448993088264})
    for name, truth in REPORTED_TRUTH.items():
        assert abs(est[name].value - truth) <= est[name].bound, name
    assert est["gpu_sim_cycle"].relative_bound < 0.11
    assert abs(est["sampled_occupancy"].value / REPORTED_TRUTH["sampled_occupancy"] - 1) < 0.05


# wmma (fragments=global) on 114,8,16,12,12,3,1 under SM7_QV100_small (accel-sim fork, 2026-11-26): its GEMM
# kernel, 14.2 images a wave, sampled at 14, 28 and 42 images: the second wave ran fast (8,200 cycles) and the
# third slow (12,591), while the whole batch runs at about 10,500 a wave.
GEMM = {14: (14893, 643776), 28: (23093, 1380288), 42: (35684, 2137184)}
GEMM_TRUTH, GEMM_CPI = 89001, 0.011207746794584417


def test_a_wave_that_ran_unevenly_weighs_half_where_the_steady_state_says_so():
    """Measured before: the last two samples' slope gave +12.8 % under a 25 % bound. The largest sample's
    steady state is nearer the slope across all three samples, so that one is used."""
    points = [(b, {"k.gpu_sim_cycle": c, "k.gpu_sim_insn": i}) for b, (c, i) in GEMM.items()]
    est = extrapolate(points, 114, {"k": 14.22}, {"k": GEMM_CPI})["k.gpu_sim_cycle"]
    assert abs(est.value / GEMM_TRUTH - 1) < 0.01
    # 8.02 waves: the bound holds a whole wave for the last one, nearly empty (it was 0.17 with a quarter wave)
    assert abs(est.value - GEMM_TRUTH) <= est.bound and est.relative_bound < 0.25
    # without a steady state to tell, the last two samples' slope, bounded by the whole gap between the halves
    est = extrapolate(points, 114, {"k": 14.22})["k.gpu_sim_cycle"]
    assert est.value == pytest.approx(35684 + 12591 / 14 * 72)
    assert abs(est.value - GEMM_TRUTH) <= est.bound


def test_samples_must_be_three_increasing_batches_under_the_real_one():
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(4, _metrics(4)), (8, _metrics(8))], 100, 4)
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(8, _metrics(8)), (4, _metrics(4)), (12, _metrics(12))], 100, 4)
    with pytest.raises(ValueError, match="three sampled batches"):
        extrapolate([(4, _metrics(4)), (8, _metrics(8)), (12, _metrics(12))], 10, 4)


# ---- every metric of a run, the records, the store and the commands that show estimates --------------


# config_key "k": the one the records below carry (test data)
JOB = dataclasses.replace(Job.make("global", {}, PROBLEM.with_batch(400), "gpgpusim", config="SM7_QV100_small"),
                          config_key="k")
# _run's layer at 400 images: the rate's floor (62.5 cycles an image) over the 352 images past the largest
# sample, and the tail's share of a 1000-cycle wave
CYCLE_BOUND = RATE_FLOOR * 62.5 * (400 - 48) + TAIL_WAVES * 1000


def _run(batch: int, run_id: str, kernels=("conv2d_global",), per_image_ctas: int = 4, fill: float = 0.0) -> RunResult:
    """A simulator record as the backend makes it (test data: a model layer of 4 CTAs an image, 8 SMs of 8
    CTAs, so 16 images a wave; 1000 cycles a wave after a 5000-cycle launch)."""
    job = Job("global", JOB.params, PROBLEM.with_batch(batch), "gpgpusim", config="SM7_QV100_small",
              config_name="SM7_QV100_small", config_key="k")
    run = RunResult.of(job, "passed", "f", kernels=list(kernels), run_id=run_id,
                       environment={"config": "SM7_QV100_small", "config_key": "k"})
    run.add("simulated_sms", 8)
    for kernel in kernels:
        p = f"{kernel}." if len(kernels) > 1 else ""
        run.add(p + "gpu_sim_cycle", 5000 + 1000 * batch / 16 + fill, "cycles")
        run.add(p + "gpu_sim_insn", 3000.0 * batch)
        run.add(p + "gpu_tot_issued_cta", per_image_ctas * batch)
        run.add(p + "cta_per_core", 8)
        run.add(p + "L1D_total_cache_accesses", 10.0 * batch)
        run.add(p + "L1D_total_cache_misses", 2.0 * batch + 50)
        run.add(p + "L1D_total_cache_miss_rate", 0.0)  # recomputed from the counts, never carried
        run.add(p + "gpu_occupancy", 90.0 + batch / 100)  # a rate: the largest sample's
        run.add(p + "averagemflatency", 200.0)
        run.add(p + "gpu_ipc", 0.0)
    run.add("sim_wall_s", 1.0 * batch)
    run.add("max_scaled_error", 1e-7 * batch)
    return run


def test_every_metric_is_estimated_by_its_kind():
    points = [(b, _run(b, str(b)).metrics) for b in (16, 32, 48)]
    est = extrapolate(points, 400, 16)
    assert est["gpu_sim_cycle"].value == 5000 + 1000 * 25 and est["gpu_sim_cycle"].bound == pytest.approx(CYCLE_BOUND)
    # misses: 2 an image, their rate's floor over the images past the samples (the data may outgrow the caches)
    assert est["L1D_total_cache_misses"].value == 850
    assert est["L1D_total_cache_misses"].bound == pytest.approx(MISS_FLOOR * 2 * (400 - 48))
    assert est["L1D_total_cache_miss_rate"].value == pytest.approx(850 / 4000)  # from the estimated counts
    assert est["gpu_ipc"].value == pytest.approx(1_200_000 / 30000)
    # occupancy averages over cycles: occupancy x cycles adds up, extrapolated and divided by the cycles
    summed = [(90 + b / 100) * (5000 + 62.5 * b) for b in (32, 48)]
    occupancy = (summed[1] + (summed[1] - summed[0]) / 16 * (400 - 48)) / 30000
    assert est["gpu_occupancy"].value == pytest.approx(occupancy)
    assert est["gpu_occupancy"].bound == pytest.approx(max(abs(occupancy - 90.48) + 0.16, RATE_FLOOR * occupancy))
    assert est["averagemflatency"] == (200.0, 0.0) or est["averagemflatency"].value == 200.0
    assert est["sim_wall_s"].value == 96  # what the samples cost, added up
    assert "max_scaled_error" not in est  # the checks are the samples' own, not estimated


def test_several_kernels_each_get_their_wave_and_the_total_bound_adds_them_up():
    kernels = ("k_a", "k_b")
    points = []
    for b in (16, 32, 48):
        run = _run(b, str(b), kernels)
        run.add("gpu_sim_cycle", sum(run.metrics[f"{k}.gpu_sim_cycle"] for k in kernels))
        points.append((b, run.metrics))
    est = extrapolate(points, 400, {"k_a": 16, "k_b": 8})
    floor = RATE_FLOOR * 62.5 * (400 - 48)
    # each kernel's tail is a share of its own wave: k_b's wave is half k_a's
    assert est["k_a.gpu_sim_cycle"].bound == pytest.approx(floor + TAIL_WAVES * 1000)
    assert est["k_b.gpu_sim_cycle"].bound == pytest.approx(floor + TAIL_WAVES * 500)
    assert est["gpu_sim_cycle"].bound == pytest.approx(2 * floor + TAIL_WAVES * 1500)
    assert est["gpu_sim_cycle"].value == 2 * 30000
    assert est["k_b.L1D_total_cache_miss_rate"].value == pytest.approx(850 / 4000)


def test_no_waves_given_is_each_variants_own():
    """regtile's waves speed up for seven waves as its one-warp blocks fall out of step: its default samples are 2, 3
    and 5 waves; the other variants' 1, 2 and 3. Waves given are kept, and so is a scale."""
    default = SampleSpec.parse(None)
    assert default == SampleSpec.parse("default") == SampleSpec.parse("waves=default") == SampleSpec(None)
    assert str(default) == "waves=default" and SampleSpec.parse(str(default)) == default
    assert str(default.for_kernel(render("regtile", FMNIST))) == "waves=2,3,5"
    assert str(default.for_kernel(render("global", FMNIST))) == "waves=1,2,3"
    assert SampleSpec.parse("default;scale=8").for_kernel(render("regtile", FMNIST)) == SampleSpec((2, 3, 5), 8)
    given = SampleSpec.parse("1,2,4")
    assert given.for_kernel(render("regtile", FMNIST)) is given


def test_the_spec_is_three_increasing_wave_counts():
    assert SampleSpec.parse("waves=2,3,4").waves == (2, 3, 4)
    assert SampleSpec.parse("0.5,1,1.5").waves == (0.5, 1, 1.5)
    # the GPU the samples run on: chosen per layer unless the spec says
    assert SampleSpec.parse("1,2,3").scale is None and SampleSpec.parse("1,2,3;scale=auto").scale is None
    assert SampleSpec.parse("waves=2,3,4;scale=1") == SampleSpec((2, 3, 4), 1)
    assert str(SampleSpec.parse("2,3,4; scale=4")) == "waves=2,3,4;scale=4"
    assert SampleSpec.parse("scale=2") == SampleSpec(None, 2)  # the variant's own waves, see below
    for bad in ("1,2,3;scale=0", "1,2,3;scale=x"):
        with pytest.raises(UserError, match="scale takes a whole number"):
            SampleSpec.parse(bad)
    for bad in ("1,2", "3,2,1", "a,b,c", "0,1,2", "defaults"):
        with pytest.raises(UserError, match="three increasing wave counts, e.g. --sample 1,2,3"):
            SampleSpec.parse(bad)


def test_sample_batches_fill_whole_waves_of_the_longest_kernel_and_refuse_a_small_batch():
    probe = _run(1, "probe")
    kernel = JOB.kernel()  # global on batch3x3's layer: 4 CTAs an image
    assert sample_batches(probe, SampleSpec.parse("1,2,3"), kernel, 400) == ([16, 32, 48], 16)
    assert sample_batches(probe, SampleSpec.parse("0.01,0.02,0.03"), kernel, 400)[0] == [1, 2, 3]  # an image more
    with pytest.raises(UserError, match=r"batch 48 is no larger than the samples .* \(drop --sample\)"):
        sample_batches(probe, SampleSpec.parse("1,2,3"), kernel, 48)
    three = render("im2col_gemm", PROBLEM)  # an image makes 9, 2 and 4 CTAs of its three kernels
    probe = _run(1, "probe", three.kernel_names)
    probe.add("conv2d_im2col_gemm_gemm.gpu_sim_cycle", 99999)  # the longest kernel sizes the samples
    assert wave_images(probe, three, 400) == {"conv2d_im2col_gemm_im2col": 64 / 9, "conv2d_im2col_gemm_gemm": 32,
                                              "conv2d_im2col_gemm_permute": 16}
    assert sample_batches(probe, SampleSpec.parse("1,2,3"), three, 400) == ([32, 64, 96], 32)


def test_a_wave_counts_the_ctas_an_image_makes_at_the_real_batch():
    """implicit_gemm tiles pixels of the whole batch: one image alone rounds up to 3 CTAs of 64 pixels,
    10000 images make 2.25 an image; the wave is sized from the real launch, not from the probe's."""
    kernel = render("implicit_gemm", Problem(B=1, C=8, M=16, H=14, W=14, K=3), {"tile": 64})
    assert [math.prod(launch.grid) for launch in kernel.launches(1)] == [3]
    probe = _run(1, "probe", kernel.kernel_names)
    probe.metrics.update({"cta_per_core": 3})
    assert wave_images(probe, kernel, 10000) == {"conv2d_implicit_gemm": pytest.approx(8 * 3 / 2.25)}


# ---- samples on a GPU cut to 1/k of its SMs and memory channels --------------------------------------

QV100 = {"gpgpu_n_clusters": "80", "gpgpu_n_cores_per_cluster": "1", "gpgpu_n_mem": "32",
         "gpgpu_n_sub_partition_per_mchannel": "2", "gpgpu_memory_partition_indexing": "2"}


def test_a_gpu_is_cut_only_where_sms_and_memory_channels_divide_alike_and_the_hash_takes_the_slices():
    # 20 SMs on 8 channels (16 L2 slices) is the least IPOLY takes; 10 on 4 hash by XOR; 5 SMs are too few
    assert scalings(QV100) == [1, 2, 4, 8] and scalings(QV100, same_hash=True) == [1, 2, 4]
    assert scalings({**QV100, "gpgpu_n_clusters": "8", "gpgpu_n_mem": "8"}) == [1]  # SM7_QV100_small
    assert scalings({**QV100, "gpgpu_n_clusters": "160", "gpgpu_memory_partition_indexing": "0"}) == [1, 2, 4, 8, 16]
    assert scalings({**QV100, "gpgpu_n_clusters": "30"}) == [1, 2]
    # 12 channels (24 slices) neither hash takes; 8 channels IPOLY does, 4 and 2 XOR, down to 8 SMs
    assert scalings({**QV100, "gpgpu_n_clusters": "96", "gpgpu_n_mem": "24"}) == [1, 3, 6, 12]
    quarter, eighth = (scaled(load_config("SM7_QV100"), QV100, k) for k in (4, 8))
    assert quarter.options == {"gpgpu_n_clusters": "20", "gpgpu_n_mem": "8"}
    assert eighth.options == {"gpgpu_n_clusters": "10", "gpgpu_n_mem": "4", "gpgpu_memory_partition_indexing": "1"}
    assert "by XOR" in eighth.description and eighth.name == "SM7_QV100-10sms"


def _cut_gpu_run(batch: int, k: int) -> RunResult:
    """A layer on 80/k SMs: 96 images a wave on 80 SMs, 1000 cycles a wave after a 5000-cycle launch, and the
    L2 bandwidth and occupancy a GPU of that size reads."""
    run = _run(batch, f"cut{batch}")
    run.metrics.update({"gpu_sim_cycle": 5000 + 1000 * batch / (96 / k), "simulated_sms": 80 / k,
                        "L2_BW": 400.0 / k, "gpu_occupancy": 60.0})
    return run


def test_samples_on_a_quarter_of_the_gpu_estimate_the_whole_gpus_cycles_and_its_counts():
    """A cut GPU runs a quarter of the images in the waves the whole one runs them in: the cycles are carried
    to batch / 4, every count to the batch; the whole GPU's L2 bandwidth is four cut ones'."""
    points = [(b, _cut_gpu_run(b, 4).metrics) for b in (24, 48, 72)]
    est = extrapolate(points, 9600, {"conv2d_global": 24}, scale=4)
    whole = 5000 + 1000 * 9600 / 96  # 100 waves of the whole GPU
    assert est["gpu_sim_cycle"].value == pytest.approx(whole)
    assert est["gpu_sim_insn"].value == 3000 * 9600 and est["gpu_sim_insn"].bound == 0
    assert est["L1D_total_cache_misses"].value == pytest.approx(2 * 9600 + 50)
    assert est["gpu_ipc"].value == pytest.approx(3000 * 9600 / whole)
    assert est["L2_BW"].value == pytest.approx(400) and est["gpu_occupancy"].value == pytest.approx(60)
    # the cycle bound: the rate's floor over the cut GPU's images past the samples, and a quarter of its wave
    assert est["gpu_sim_cycle"].bound == pytest.approx(RATE_FLOOR * 1000 / 24 * (2400 - 72) + TAIL_WAVES * 1000)
    with pytest.raises(ValueError, match="three sampled batches"):  # the cut GPU's share must pass the samples
        extrapolate(points, 280, 24, scale=4)


def _probe_with_config(tmp_path: Path, options: dict) -> RunResult:
    probe = _run(1, "probe")
    folder = tmp_path / "probe"
    folder.mkdir()
    (folder / "gpgpusim.config").write_text("# merged\n" + "".join(f"-{k} {v}\n" for k, v in options.items()))
    probe.artifacts["run_dir"] = str(folder)
    probe.metrics.update({"simulated_sms": 80, "cta_per_core": 48})  # 80 x 48 CTAs of 4 an image: 960 images a wave
    return probe


def test_the_samples_run_on_the_smallest_cut_whose_wave_holds_enough_images(tmp_path):
    probe = _probe_with_config(tmp_path, QV100)
    kernel = JOB.kernel()
    assert choose_scale(probe, SampleSpec.parse("1,2,3"), kernel, 100000) == 8  # 120 images a wave of 10 SMs
    assert sample_batches(probe, SampleSpec.parse("1,2,3"), kernel, 100000, 8) == ([120, 240, 360], 120)
    probe.metrics["cta_per_core"] = 1  # 20 images a wave on 80 SMs: 5 on a quarter (too few), 10 on a half
    assert 20 / 4 < MIN_SCALED_WAVE <= 20 / 2 and choose_scale(probe, SampleSpec.parse("1,2,3"), kernel, 100000) == 2
    probe.metrics["simulated_sms"] = 20  # 5 images a wave of the whole GPU: it is not cut
    assert choose_scale(probe, SampleSpec.parse("1,2,3"), kernel, 100000) == 1
    assert choose_scale(probe, SampleSpec.parse("1,2,3;scale=4"), kernel, 100000) == 4  # asked for: kept
    with pytest.raises(UserError, match=r"cannot be cut to 1/3 .* it can by 1, 2, 4, 8"):
        choose_scale(probe, SampleSpec.parse("1,2,3;scale=3"), kernel, 100000)
    probe.artifacts["run_dir"] = str(tmp_path / "nowhere")  # no config to read: the whole GPU
    assert choose_scale(_run(1, "probe"), SampleSpec.parse("1,2,3"), kernel, 100000) == 1


def test_the_cut_gpu_is_an_overlay_in_the_results_folder_that_the_sample_jobs_name(tmp_path):
    probe = _probe_with_config(tmp_path, QV100)
    job = Job.make("global", {}, PROBLEM.with_batch(100000), "gpgpusim", config="SM7_QV100")
    assert scaled_job(job, probe, 1, tmp_path) is job
    cut = scaled_job(job, probe, 4, tmp_path)
    assert cut.config == str(tmp_path / "sample-configs" / "SM7_QV100-20sms.toml")
    assert cut.config_name == "SM7_QV100-20sms"
    overlay = load_config(cut.config)
    assert overlay.base == "SM7_QV100" and overlay.options == {"gpgpu_n_clusters": "20", "gpgpu_n_mem": "8"}
    assert cut.config_key == config_key(overlay) != job.config_key
    assert scaled_job(job, probe, 4, tmp_path) == cut  # the same file, the same identity: its samples are cached


def test_a_scaled_estimate_says_its_gpu_is_the_probes(tmp_path):
    probe = _probe_with_config(tmp_path, QV100)
    samples = [_cut_gpu_run(b, 4) for b in (240, 480, 720)]
    for s in samples:
        s.metrics["cta_per_core"] = 48
    job = dataclasses.replace(JOB, problem=PROBLEM.with_batch(96000))
    probe.environment["config_hash"] = "whole"
    for s in samples:
        s.environment["config_hash"] = "cut"
    plan = Plan(4, [240, 480, 720], None, 240)
    est = estimate_result(job, probe, samples, SampleSpec.parse("1,2,3"), tmp_path, plan=plan)
    assert est.metrics["simulated_sms"] == 80 and est.estimate["scale"] == 4
    assert est.environment["config_hash"] == "whole"  # the record's config is the whole GPU's
    assert est.estimate["wave_images"] == 960  # the whole GPU's wave
    assert est.metrics["gpu_sim_cycle"] == pytest.approx(5000 + 1000 * 96000 / 96 * 4 / 4, rel=1e-9)


def _estimate(tmp_path):
    probe, samples = _run(1, "probe"), [_run(b, f"s{b}") for b in (16, 32, 48)]
    return estimate_result(JOB, probe, samples, SampleSpec.parse("1,2,3"), tmp_path, wall_s=12.5)


def test_the_estimate_is_a_record_marked_sampled_that_the_store_keeps_apart_from_whole_runs(tmp_path):
    est = _estimate(tmp_path)
    assert est.sampled and est.problem.B == 400 and est.status == "passed"
    assert est.estimate["batches"] == [16, 32, 48] and est.estimate["fraction"] == pytest.approx(97 / 400)
    assert est.estimate["runs"] == ["s16", "s32", "s48"] and est.estimate["probe"] == "probe"
    assert est.bound("gpu_sim_cycle") == pytest.approx(CYCLE_BOUND) and math.isnan(est.bound("max_scaled_error"))
    assert est.metrics["max_scaled_error"] == pytest.approx(4.8e-6)  # the worst sample's check
    assert (Path(est.artifacts["run_dir"]) / "result.json").is_file()
    whole = dataclasses.replace(est, run_id="whole", estimate={}, created="")
    with Store(tmp_path) as store:
        store.add(est)
        key = (est.fingerprint, est.problem, "gpgpusim", "k")
        assert store.cached(*key) is None  # an estimate never answers for a whole simulation
        assert store.cached(*key, sample="waves=1,2,3") == est.run_id
        assert store.cached(*key, sample="waves=2,3,4") is None
        store.add(whole)
        assert store.cached(*key) == "whole"
        back = {r.run_id: r for r in store.runs()}
    assert back[est.run_id].estimate == est.estimate and back["whole"].estimate == {}


def test_diff_compare_and_explain_say_which_values_are_estimates(tmp_path):
    est = StoredRun(**{f.name: getattr(_estimate(tmp_path), f.name) for f in dataclasses.fields(RunResult)},
                    config="SM7_QV100_small", config_key="k")
    whole = dataclasses.replace(est, run_id="whole", estimate={}, created="")
    whole.metrics = {**est.metrics, "gpu_sim_cycle": est.metrics["gpu_sim_cycle"] + 400,
                     "L1D_total_cache_misses": 2000.0}
    frame = diff_runs(whole, est).set_index("metric")
    assert frame.loc["gpu_sim_cycle", "B_bound_%"] == pytest.approx(100 * CYCLE_BOUND / 30000)
    assert math.isnan(frame.loc["gpu_sim_cycle", "A_bound_%"])
    assert frame.loc["gpu_sim_cycle", "mark"] == "same"  # 1.3 %: under the threshold, within the bound
    assert frame.loc["L1D_total_cache_misses", "mark"] == "better"  # 850 vs 2000, outside its bound
    est.estimate["bounds"]["L1D_total_cache_misses"] = 2000
    assert diff_runs(whole, est).set_index("metric").loc["L1D_total_cache_misses", "mark"] == "within bound"
    assert "A_bound_%" not in diff_runs(whole, whole).columns  # whole runs: the table is as before
    tiled = dataclasses.replace(est, job=dataclasses.replace(est.job, params=Params({**est.params, "tile": 8})))
    table = comparison([whole, tiled], ["variant", "tile"]).tables[0]
    bound = f"{100 * CYCLE_BOUND / 30000:.1f}"
    assert list(table.frame["estimated"]) == ["waves=1,2,3: batches 16,32,48 of 400, 24.2 % of the images "
                                              f"simulated; cycles +/-{bound} %", "simulated whole"]
    whole.metrics.update({"gpu_sim_insn": est.metrics["gpu_sim_insn"]})
    out = as_dict(explain(whole, est))
    assert out["cycles"]["bound"] == {"a": None, "b": pytest.approx(CYCLE_BOUND)}
    assert out["sampled"]["b"]["spec"] == "waves=1,2,3"
    assert any("is an ESTIMATE from sampled simulation" in n for n in out["notes"])


def test_sample_spec_and_store_mistakes_are_refused_by_the_command_before_any_simulation(tmp_path):
    proc = simflow("sim", "global", "--sample", "3,2,1", "--results", str(tmp_path))
    assert proc.returncode == 1 and "three increasing wave counts" in proc.stderr
    proc = simflow("sim", "global", "--sample", "--no-store", "--results", str(tmp_path))
    assert proc.returncode == 1 and "drop --no-store" in proc.stderr


def test_a_sweep_file_takes_a_sample_spec_for_the_simulator_only(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('sample = "2,3,4"\nproblems = ["batch3x3"]\n[[variants]]\nname = "global"\n')
    assert load_sweep(path).sample == "waves=2,3,4"
    path.write_text('sample = true\n[[variants]]\nname = "global"\n')
    assert load_sweep(path).sample == "waves=default"  # each job's variant's own waves
    path.write_text('backends = ["gpu"]\nsample = "1,2,3"\n[[variants]]\nname = "global"\n')
    with pytest.raises(UserError, match=r"s.toml:2: sample is for the simulator"):
        load_sweep(path)
    path.write_text('sample = "1,1,1"\n[[variants]]\nname = "global"\n')
    with pytest.raises(UserError, match=r"s.toml:1: sample spec"):
        load_sweep(path)


@pytest.mark.gpgpusim
def test_a_sampled_simulation_estimates_the_whole_layer_within_its_bound(tmp_path):
    """The real simulator: a 12.5-wave layer (SM7_QV100_small, 16 images a wave) from samples of 1, 2 and 3
    waves, against simulating it whole; then the same command again is answered by the store."""
    args = ("sim", "global", "--shape", "200,1,4,16,16,3,1", "-c", "SM7_QV100_small", "--results", str(tmp_path),
            "--json")
    proc = simflow(*args, "--sample")
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    assert est["estimate"]["batches"] == [16, 32, 48] and est["problem"]["B"] == 200
    whole = json.loads(simflow(*args).stdout)
    assert whole["estimate"] == {}
    for name in ("gpu_sim_cycle", "gpu_sim_insn", "L1D_total_cache_accesses", "gpu_tot_issued_cta"):
        error = abs(est["metrics"][name] - whole["metrics"][name])
        assert error <= est["estimate"]["bounds"][name] + 1e-9 * whole["metrics"][name], name
    assert est["metrics"]["gpu_sim_insn"] == whole["metrics"]["gpu_sim_insn"]  # blocks do the same work
    assert abs(est["metrics"]["gpu_sim_cycle"] / whole["metrics"]["gpu_sim_cycle"] - 1) < 0.05
    again = simflow(*args, "--sample")
    assert json.loads(again.stdout)["run_id"] == est["run_id"]  # the stored estimate, nothing simulated
    with Store(tmp_path) as store:
        runs = store.runs()
    assert len(runs) == 6 and sum(r.sampled for r in runs) == 1  # probe, 3 samples, the estimate, the whole run


@pytest.mark.gpgpusim
def test_samples_on_an_eighth_of_the_gpu_estimate_the_whole_gpu(tmp_path):
    """The real simulator: on SM7_QV100 (80 SMs) a wave of this 1x1 layer holds 160 images, so its samples run
    on 10 SMs and 4 memory channels hashed by XOR (20, 40 and 60 images); against the whole 640 images on 80 SMs.
    Measured here at 960 images (benchmarks/sampling.py, global-1x1): cycles +0.10 % under a 4.7 % bound."""
    args = ("sim", "global", "--shape", "640,1,4,8,8,1,0", "--results", str(tmp_path), "--json")
    proc = simflow(*args, "--sample")
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    assert est["estimate"]["scale"] == 8 and est["estimate"]["sample_config"] == "SM7_QV100-10sms"
    assert est["estimate"]["batches"] == [20, 40, 60] and est["estimate"]["wave_images"] == 160
    assert est["metrics"]["simulated_sms"] == 80
    with Store(tmp_path) as store:
        samples = [store.runs("WHERE id = ?", (run_id,))[0] for run_id in est["estimate"]["runs"]]
    assert {s.metrics["simulated_sms"] for s in samples} == {10}
    whole = json.loads(simflow(*args).stdout)
    for name in ("gpu_sim_cycle", "gpu_sim_insn", "L1D_total_cache_accesses", "sampled_occupancy"):
        error = abs(est["metrics"][name] - whole["metrics"][name])
        assert error <= est["estimate"]["bounds"][name] + 1e-9 * whole["metrics"][name], name
    assert est["metrics"]["gpu_sim_insn"] == whole["metrics"]["gpu_sim_insn"]
    assert abs(est["metrics"]["gpu_sim_cycle"] / whole["metrics"]["gpu_sim_cycle"] - 1) < 0.05


@pytest.mark.gpgpusim
def test_a_one_launch_layer_is_estimated_from_its_first_ctas(tmp_path):
    """The real simulator: implicit_gemm on 40x40 1x1 images makes 25 CTAs an image and an SM of SM7_QV100_small
    holds 7, so a wave is 2.24 images; the samples are the launch's first 56, 112 and 168 CTAs (the simulator
    stopped after them), against the whole 400 CTAs (7.1 waves): cycles -0.24 % under a 7.9 % bound. At 12 images
    (5.36 waves) the error is -6.0 % under 7.7 %: a last wave of 20 CTAs costs most of a wave, which the bound's
    quarter wave and rate floor cover there."""
    args = ("sim", "implicit_gemm", "-P", "tile=64", "--shape", "16,1,4,40,40,1,0", "-c", "SM7_QV100_small",
            "--results", str(tmp_path), "--json")
    proc = simflow(*args, "--sample")
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    assert est["estimate"]["ctas"] == [56, 112, 168] and est["estimate"]["batches"] == [3, 5, 7]
    assert "checked no output" in est["reason"]
    with Store(tmp_path) as store:
        samples = [store.runs("WHERE id = ?", (run_id,))[0] for run_id in est["estimate"]["runs"]]
    for sample, n in zip(samples, (56, 112, 168), strict=True):
        assert sample.status == "stopped_at_limit" and f"first {n} CTAs" in sample.reason
        assert sample.metrics["gpu_tot_issued_cta"] == n
    whole = json.loads(simflow(*args).stdout)
    assert whole["status"] == "passed" and whole["metrics"]["gpu_tot_issued_cta"] == 400
    assert est["metrics"]["gpu_sim_insn"] == whole["metrics"]["gpu_sim_insn"]  # a CTA's work is every CTA's
    # exact here, yet bounded: the real launch's last CTA could be a partial tile (issue 57), one CTA's share
    assert est["estimate"]["bounds"]["gpu_sim_insn"] == pytest.approx(whole["metrics"]["gpu_sim_insn"] / 400)
    for name in ("gpu_sim_cycle", "L1D_total_cache_accesses", "gpu_tot_issued_cta"):
        error = abs(est["metrics"][name] - whole["metrics"][name])
        assert error <= est["estimate"]["bounds"][name] + 1e-9 * whole["metrics"][name], name
    assert abs(est["metrics"]["gpu_sim_cycle"] / whole["metrics"]["gpu_sim_cycle"] - 1) < 0.05


@pytest.mark.gpgpusim
def test_samples_over_half_the_layer_are_said_with_the_whole_run_suggested(tmp_path):
    """Issue 57: at 12 images (5.36 waves) the samples are 56, 112 and 168 of its 300 CTAs, 112 % of the layer:
    sampling saves nothing, and --sample says so as it plans them, and in the estimate."""
    args = ("sim", "implicit_gemm", "-P", "tile=64", "--shape", "12,1,4,40,40,1,0", "-c", "SM7_QV100_small",
            "--results", str(tmp_path), "--sample")
    proc = simflow(*args, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    said = ("the samples are 112% of the layer's images: sampling saves little here; simulating it whole (without "
            "--sample) costs about 0.89x the samples")
    assert said in proc.stderr and f"note: {said}" in proc.stdout
    stored = simflow(*args, "--json")  # the store answers: the estimate keeps its note
    assert said in json.loads(stored.stdout)["estimate"]["note"]


def test_no_count_estimated_from_samples_has_a_bound_of_zero():
    """Issue 57: implicit_gemm tile=64 on 57 images read +0.04 % instructions under a bound of 0: the real
    launch's last CTA (of 151) was a partial tile. Every count carries one CTA's share of it."""
    points = [(b, _metrics(b)) for b in (4, 8, 12)]
    est = extrapolate(points, 57, wave_images=4, cta_images={"conv2d_implicit_gemm": 57 / 151})
    assert est["gpu_sim_insn"].value == 3000 * 57 + 100
    assert est["gpu_sim_insn"].bound == pytest.approx(3000 * 57 / 151)  # 0.66 %: covers the +0.04 %
    assert est["L1D_total_cache_misses"].bound >= 7 * 57 / 151
    # 57 images at 4 a wave: the last of 14.25 waves is three quarters empty, and may cost a whole wave
    assert est["gpu_sim_cycle"].bound == pytest.approx(RATE_FLOOR * 250 * (57 - 12) + 0.75 * 1000)


def test_a_part_full_last_wave_is_bounded_by_its_empty_share():
    """Issue 57: implicit_gemm at 8.3 waves read 6.6 % more cycles than the samples' line (a GEMM tile's block takes
    as long alone on an SM), past a bound of TAIL_WAVES of a wave."""
    assert tail_waves(8.3) == pytest.approx(0.7)
    assert tail_waves(9.8) == TAIL_WAVES  # nearly full: ending unevenly still costs up to TAIL_WAVES
    assert tail_waves(12.0) == TAIL_WAVES and tail_waves(12.0000000001) == TAIL_WAVES  # whole, float noise aside
    assert tail_waves(2.03) == pytest.approx(0.97)  # a handful of blocks past a whole wave


@pytest.mark.gpgpusim
def test_a_launch_after_a_weight_copy_is_estimated_from_its_first_ctas(tmp_path):
    """The real simulator: implicit_gemm_async copies w in one CTA, then its GEMM makes 200 CTAs on 16 40x40 1x1
    images; each sample runs the copy whole and stops the GEMM after its first CTAs (gpgpu_max_cta counts the
    copy's CTA too, gpgpu_max_completed_cta only the GEMM's)."""
    args = ("sim", "implicit_gemm_async", "--shape", "16,1,4,40,40,1,0", "-c", "SM7_QV100_small",
            "--results", str(tmp_path), "--json")
    proc = simflow(*args, "--sample")
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    ctas = est["estimate"]["ctas"]
    assert ctas and "checked no output" in est["reason"]
    with Store(tmp_path) as store:
        samples = [store.runs("WHERE id = ?", (run_id,))[0] for run_id in est["estimate"]["runs"]]
    for sample, n in zip(samples, ctas, strict=True):
        assert sample.status == "stopped_at_limit" and f"first {n} CTAs, after the 1 of" in sample.reason
        assert sample.metrics["conv2d_implicit_gemm_async_w.gpu_tot_issued_cta"] == 1
        assert sample.metrics["conv2d_implicit_gemm_async.gpu_tot_issued_cta"] == n
    whole = json.loads(simflow(*args).stdout)
    assert whole["status"] == "passed"
    assert est["metrics"]["gpu_sim_insn"] == pytest.approx(whole["metrics"]["gpu_sim_insn"], rel=1e-12)
    for name in ("gpu_sim_cycle", "conv2d_implicit_gemm_async.gpu_sim_cycle", "L1D_total_cache_accesses"):
        error = abs(est["metrics"][name] - whole["metrics"][name])
        assert error <= est["estimate"]["bounds"][name] + 1e-9 * whole["metrics"][name], name
    assert abs(est["metrics"]["gpu_sim_cycle"] / whole["metrics"]["gpu_sim_cycle"] - 1) < 0.05


def _intervals(kernel: str, waves: int, wave_cycles: int = 1000, wave_insn: float = 4.0e6) -> list[dict]:
    """Progress samples every 100 cycles of a layer whose first wave starts slowly (half the IPC for its
    first half) and whose waves then run at a steady IPC (test data: chosen, not measured)."""
    rows, cycle = [], 0
    steady = wave_insn / wave_cycles
    for w in range(waves):
        for _ in range(wave_cycles // 100):
            ipc = steady / 2 if w == 0 and cycle < wave_cycles / 2 else steady
            rows.append({"kernel": kernel, "cycle_start": str(cycle), "cycle_end": str(cycle + 100), "ipc": str(ipc)})
            cycle += 100
    return rows


def test_the_steady_rate_is_read_past_the_first_wave_and_before_the_last():
    rows = _intervals("k", waves=3) + _intervals("other", waves=3, wave_cycles=300)
    assert steady_cpi(rows, "k", waves=3) == pytest.approx(1000 / 4.0e6)  # the ramp is left out
    assert steady_cpi(rows, "k", waves=2.4) is None  # too few waves for a window between first and last
    assert steady_cpi(rows, "missing", waves=3) is None


def test_the_steady_rate_checks_the_slope_and_widens_the_cycle_bound_where_they_disagree():
    points = [(b, _run(b, str(b)).metrics) for b in (16, 32, 48)]
    cpi = 1000 / 16 / 3000  # the model layer: 1000 cycles a wave of 16 images, 3000 insn an image
    est = extrapolate(points, 400, {"conv2d_global": 16}, {"conv2d_global": cpi})["gpu_sim_cycle"]
    assert est.value == pytest.approx(30000) and est.bound == pytest.approx(CYCLE_BOUND)  # agree: the floor
    est = extrapolate(points, 400, {"conv2d_global": 16}, {"conv2d_global": 1.1 * cpi})["gpu_sim_cycle"]
    assert est.value == pytest.approx(30000)  # the value follows the samples' slope
    assert est.bound == pytest.approx(0.1 * 62.5 * 352 + TAIL_WAVES * 1000)  # 10 % apart over the 352 images


def test_a_count_of_a_kernel_whose_tiles_span_images_gets_the_ctas_disagreement_as_its_bound():
    """Where a tile spans images, the CTAs do not grow with the images (10 pixels an image, 16 to a tile): the
    count grown along the CTAs differs from the images' line, and that difference is its bound; where every
    image makes whole CTAs the two agree and an exact count keeps a bound of 0."""
    tiles = {"k": lambda b: math.ceil(10 * b / 16)}
    insn = {b: 1000.0 * tiles["k"](b) for b in (3, 7, 11, 45)}  # a CTA's instructions, whole tiles only
    points = [(b, {"gpu_sim_insn": insn[b]}) for b in (3, 7, 11)]
    est = extrapolate(points, 45, {"k": 2.0}, ctas=lambda b: {"k": tiles["k"](b)})["gpu_sim_insn"]
    assert est.bound > 0 and abs(est.value - insn[45]) <= est.bound
    whole = extrapolate([(b, {"gpu_sim_insn": 3000.0 * b}) for b in (3, 7, 11)], 45, {"k": 2.0},
                        ctas=lambda b: {"k": 3 * b})["gpu_sim_insn"]
    assert whole.value == 3000 * 45 and whole.bound == 0


# ---- samples inside a launch: its first CTAs ----------------------------------------------------------

def test_a_cta_sample_is_a_config_that_stops_after_its_first_ctas_have_ended(tmp_path):
    """Both limits at once: gpgpu_max_cta alone leaves the simulator spinning after the last CTA (measured on the
    fork), gpgpu_max_completed_cta alone lets CTAs past the n-th start."""
    limited = first_ctas(load_config("SM7_QV100_small"), 40)
    assert limited.name == "SM7_QV100_small-first40ctas" and limited.base == "SM7_QV100"
    assert limited.options == {"gpgpu_n_clusters": "8", "gpgpu_n_mem": "8", "gpgpu_max_cta": "40",
                               "gpgpu_max_completed_cta": "40"}
    assert cta_limit(limited.options) == (40, 40)
    assert cta_limit({"gpgpu_max_cta": "40"}) == (0, 0) and cta_limit({}) == (0, 0)  # not both: not a sample's limit
    assert cta_limit({"gpgpu_max_cta": "40", "gpgpu_max_completed_cta": "41"}) == (0, 0)
    job = Job.make("implicit_gemm", {}, FMNIST.with_batch(2), "gpgpusim", config="SM7_QV100")
    sample = first_ctas_job(at_batch(job, 1), 1, tmp_path)
    assert sample.config_name == "SM7_QV100-first1ctas" and sample.config_key != job.config_key
    assert probe_job(job, tmp_path) == sample  # a one-launch variant's probe: its first CTA
    two = Job.make("im2col_gemm", {}, FMNIST.with_batch(2), "gpgpusim", config="SM7_QV100")
    assert by_ctas(two.kernel()) is None
    assert probe_job(two, tmp_path) == at_batch(two, 1)  # three launches that grow: the limit would stop the first
    # an image of one CTA (regtile on 8x8): the limit would be reached exactly as the launch ends, which the fork
    # does not report as a stop (and then skips the copy of y back), so the probe runs whole
    tiny = Job.make("regtile", {}, Problem(B=64, C=1, M=4, H=8, W=8, K=1), "gpgpusim", config="SM7_QV100")
    assert by_ctas(tiny.kernel()) and math.prod(tiny.kernel().launches(1)[-1].grid) == 1
    assert probe_job(tiny, tmp_path) == at_batch(tiny, 1)


def test_a_launch_after_a_weight_copy_is_sampled_by_ctas_the_copy_run_whole(tmp_path):
    """implicit_gemm_async first copies w (7 CTAs on fmnist-conv1 at any batch): the simulator counts issued CTAs
    over the process and completed ones per launch, so the GEMM's first n CTAs are gpgpu_max_cta = 7 + n and
    gpgpu_max_completed_cta = n, with n past 7 (else the copy would be the launch stopped)."""
    job = Job.make("implicit_gemm_async", {}, FMNIST.with_batch(10000), "gpgpusim", config="SM7_QV100")
    kernel = job.kernel()
    assert by_ctas(kernel) == "conv2d_implicit_gemm_async" and fixed_ctas(kernel) == (7, 7)
    limited = first_ctas(load_config("SM7_QV100"), 20, before=7)
    assert limited.name == "SM7_QV100-first20ctas-after7"
    assert cta_limit(limited.options) == (27, 20)
    probe = probe_job(job, tmp_path)  # one image, and of the GEMM just enough CTAs that the copy runs whole
    assert probe.problem.B == 1 and probe.config_name == "SM7_QV100-first8ctas-after7"
    run = _cta_probe(tmp_path, "conv2d_implicit_gemm_async", 1, limit=8, before=7)
    run.kernels = ["conv2d_implicit_gemm_async_w", "conv2d_implicit_gemm_async"]
    run.metrics = {"simulated_sms": 80, "gpu_tot_issued_cta": 15,
                   "conv2d_implicit_gemm_async_w.cta_per_core": 8, "conv2d_implicit_gemm_async_w.gpu_sim_cycle": 900.0,
                   "conv2d_implicit_gemm_async.cta_per_core": 1, "conv2d_implicit_gemm_async.gpu_sim_cycle": 9000.0}
    assert completed(run)
    plan = plan_samples(run, SampleSpec.parse("1,2,3"), kernel, 10000)
    assert plan.ctas == [20, 40, 60] and plan.scale == 4
    samples = sample_jobs(job, plan, run, tmp_path)
    assert [s.config_name for s in samples] == [f"SM7_QV100-20sms-first{n}ctas-after7" for n in (20, 40, 60)]
    small = plan_samples(run, SampleSpec.parse("0.1,0.2,0.3;scale=4"), kernel, 10000)
    assert small.ctas == [8, 9, 10]  # each past the copy's 7
    est_probe_share = 8 * 10000 / 500000
    samples = []
    for n in plan.ctas:
        sample = _run(1, f"ctas{n}", run.kernels)
        sample.status = "stopped_at_limit"
        sample.metrics.update({"conv2d_implicit_gemm_async_w.gpu_sim_cycle": 900.0,
                               "conv2d_implicit_gemm_async.gpu_sim_cycle": 5000 + 100.0 * n,
                               "conv2d_implicit_gemm_async_w.gpu_sim_insn": 1e4,
                               "conv2d_implicit_gemm_async.gpu_sim_insn": 1.4e6 * n,
                               "gpu_sim_cycle": 5900 + 100.0 * n, "gpu_sim_insn": 1e4 + 1.4e6 * n})  # the totals
        samples.append(sample)
    est = estimate_result(job, run, samples, SampleSpec.parse("1,2,3"), tmp_path, plan=plan)
    assert est.metrics["conv2d_implicit_gemm_async_w.gpu_sim_cycle"] == 900  # the same at any batch
    assert est.metrics["conv2d_implicit_gemm_async.gpu_sim_insn"] == pytest.approx(1.4e6 * 500000)
    assert est.metrics["gpu_sim_cycle"] == pytest.approx(900 + 5000 + 100 * 500000 / 4)
    assert est.estimate["fraction"] == pytest.approx(est_probe_share / 10000 + (0.4 + 0.8 + 1.2) / 10000)


FMNIST = Problem(B=1, C=1, M=4, H=86, W=86, K=7, name="fmnist-conv1")


def _cta_probe(tmp_path: Path, kernel_name: str, per_core: int, limit: int = 1, before: int = 0) -> RunResult:
    probe = _probe_with_config(tmp_path, {**QV100, "gpgpu_max_cta": str(before + limit),
                                          "gpgpu_max_completed_cta": str(limit)})
    probe.kernels = [kernel_name]
    probe.status = "stopped_at_limit"
    probe.metrics = {"simulated_sms": 80, "cta_per_core": per_core, "gpu_sim_cycle": 9000.0,
                     "gpu_tot_issued_cta": limit}
    return probe


def test_a_one_launch_variant_whose_wave_holds_few_images_is_sampled_by_whole_waves_of_ctas(tmp_path):
    """fmnist-conv1 on implicit_gemm: 50 CTAs of 128 columns an image, one CTA an SM, so a wave of 80 SMs is 1.6
    images (images would sample it at 1, 3 and 4); the samples are 1, 2 and 3 waves of CTAs of a GPU cut to 10 SMs,
    each launching the fewest images that make more CTAs than it runs; the cut keeps the whole GPU's address hash
    (20 SMs, 8 channels: IPOLY), as the 10-SM cut (XOR) misread a streaming layer by 9.8 %."""
    kernel = render("implicit_gemm", FMNIST)
    probe = _cta_probe(tmp_path, "conv2d_implicit_gemm", 1)
    assert completed(probe)
    plan = plan_samples(probe, SampleSpec.parse("1,2,3"), kernel, 10000)
    assert plan == Plan(4, [1, 1, 2], [20, 40, 60], 0.4)
    assert plan.sizes(kernel, 10000) == [0.4, 0.8, 1.2]
    probe.metrics.update({"gpu_sim_insn": 1.4e6, "L2_total_cache_accesses": 1.4e6 * 4.7 / 1000})  # global's stream
    assert plan_samples(probe, SampleSpec.parse("1,2,3"), kernel, 10000).scale == 4
    probe.metrics["L2_total_cache_accesses"] = 1.4e6 * 1.15 / 1000  # implicit_gemm's: it computes, the XOR cut reads
    assert plan_samples(probe, SampleSpec.parse("1,2,3"), kernel, 10000).ctas == [10, 20, 30]  # as well, at half cost
    del probe.metrics["L2_total_cache_accesses"]  # unknown: the same hash
    assert plan_samples(probe, SampleSpec.parse("1,2,3;scale=8"), kernel, 10000).ctas == [10, 20, 30]  # asked for
    wide = plan_samples(probe, SampleSpec.parse("10,20,30;scale=2"), kernel, 10000)
    assert wide.ctas == [400, 800, 1200] and wide.batches == [9, 17, 25]  # 450 CTAs > 400 run
    with pytest.raises(UserError, match=r"batch 4 is no larger than the samples \(20, 40, 60 CTAs on 1/4 .* of 200"):
        plan_samples(probe, SampleSpec.parse("1,2,3"), kernel, 4)  # 200 CTAs: 50 on a quarter of the GPU
    probe.metrics["cta_per_core"] = 8  # 12.8 images a wave: whole images, as before (on a half: 6.4 is too few)
    image_plan = plan_samples(probe, SampleSpec.parse("1,2,3"), kernel, 10000)
    assert image_plan.ctas is None and image_plan.batches == [12, 25, 38] and image_plan.scale == 1


def test_a_run_stopped_at_its_cta_limit_is_a_sample_only_with_every_cta_issued(tmp_path):
    probe = _cta_probe(tmp_path, "conv2d_implicit_gemm", 1, limit=30)
    probe.metrics["gpu_tot_issued_cta"] = 30
    assert completed(probe)
    probe.metrics["gpu_tot_issued_cta"] = 29  # the program's launch had fewer CTAs, or the run ended early
    assert not completed(probe)
    probe.status = "crashed"
    assert not completed(probe) and not completed(None) and completed(_run(1, "whole"))


def test_an_estimate_from_cta_samples_extrapolates_along_the_ctas_and_says_it_checked_no_output(tmp_path):
    kernel = render("implicit_gemm", FMNIST)
    job = Job.make("implicit_gemm", {}, FMNIST.with_batch(10000), "gpgpusim", config="SM7_QV100")
    probe = _cta_probe(tmp_path, "conv2d_implicit_gemm", 1)
    plan = Plan(8, [1, 1, 1], [10, 20, 30], 0.2)
    samples = []
    for n in plan.ctas:  # a wave of 10 CTAs every 1000 cycles after a 5000-cycle launch; 1.4e6 insn a CTA
        run = _run(1, f"ctas{n}", kernel.kernel_names)
        run.status = "stopped_at_limit"
        run.metrics.update({"gpu_sim_cycle": 5000 + 100.0 * n, "gpu_sim_insn": 1.4e6 * n,
                            "gpu_tot_issued_cta": n, "cta_per_core": 1})
        samples.append(run)
    est = estimate_result(job, probe, samples, SampleSpec.parse("1,2,3"), tmp_path, plan=plan)
    total = 50 * 10000
    assert est.metrics["gpu_sim_insn"] == pytest.approx(1.4e6 * total)
    assert est.metrics["gpu_sim_cycle"] == pytest.approx(5000 + 100 * total / 8)  # the cut GPU's share of the CTAs
    assert est.estimate["ctas"] == [10, 20, 30] and est.estimate["scale"] == 8
    assert est.estimate["fraction"] == pytest.approx((1 + 60) / total)
    assert "checked no output" in est.reason and "bad_elements" not in est.metrics


# ---- variants of several launches that grow with the batch: one launch at a time ---------------------------------

def test_a_variant_of_several_growing_launches_is_sampled_one_launch_at_a_time(tmp_path):
    """im2col_gemm's three launches all grow with the batch, so no CTA limit over the process samples them: each is
    made alone by the program (Job.launch), its own run and cache entry; fft's weight transform is the same at any
    batch and runs whole once (the backend does not check the y of a launch made alone)."""
    job = Job.make("im2col_gemm", {}, FMNIST.with_batch(10000), "gpgpusim", config="SM7_QV100")
    assert by_launch(job.kernel()) and by_ctas(job.kernel()) is None
    parts = launch_parts(job)
    assert [p.launch for p in parts] == job.kernel().kernel_names
    for part in parts:
        assert [launch.kernel for launch in part.kernel().launches(10000)] == [part.launch]
        assert not fixed(part) and "only" in part.describe()
        assert probe_job(part, tmp_path) == first_ctas_job(at_batch(part, 1), 1, tmp_path)
    assert len({job.kernel().fingerprint(), *(p.kernel().fingerprint() for p in parts)}) == 4  # four runs, four keys
    with pytest.raises(UserError, match="launches no kernel 'conv2d_nope'; it launches conv2d_im2col_gemm_im2col"):
        dataclasses.replace(job, launch="conv2d_nope").kernel()
    fft = {p.launch: p for p in launch_parts(Job.make("fft", {}, FMNIST.with_batch(10000), "gpgpusim",
                                                       config="SM7_QV100"))}
    assert fixed(fft["conv2d_fft_wfft"]) and not fixed(fft["conv2d_fft_cgemm"])  # cgemm grows in blocks of 4 images
    assert probe_job(fft["conv2d_fft_wfft"], tmp_path) == at_batch(fft["conv2d_fft_wfft"], 1)  # run whole
    for variant in ("implicit_gemm", "implicit_gemm_async", "global"):
        assert not by_launch(render(variant, FMNIST))


def test_a_sample_of_a_launch_whose_grid_grows_along_x_launches_enough_images_to_keep_its_first_ctas(tmp_path):
    """im2col's grid is (25 an image, 49): the simulator issues x first, so the first 480 CTAs of the real launch are
    row y = 0 only; 19 images (475 CTAs a row) would run 5 of row 1 instead, 20 run the real launch's own."""
    job = Job.make("im2col_gemm", {}, FMNIST.with_batch(10000), "gpgpusim", config="SM7_QV100")
    part = launch_parts(job)[0]
    probe = _cta_probe(tmp_path, part.launch, 8)
    plan = plan_samples(probe, SampleSpec.parse("1,2,3"), part.kernel(), 10000)
    assert plan.ctas == [160, 320, 480] and plan.scale == 4
    assert plan.batches == [7, 13, 20]


def test_a_streaming_launch_made_alone_samples_until_it_outgrows_the_cut_l2_as_the_real_launch_outgrows_the_l2(
        tmp_path):
    """im2col_gemm's permute at fmnist-conv1's geometry, 1x1: 100 CTAs an image of 2 KB each (64 L2 sectors, 7.8
    accesses per 1000 instructions). Its real launch moves more than SM7_QV100's 6 MB of L2, so its samples on 20 SMs
    grow from 160, 320, 480 CTAs until the smallest moves the cut GPU's 1.5 MB; where the real launch fits the L2,
    where the launch computes (the GEMM, 1.3 accesses per 1000), or where the probe says nothing, they do not grow; in
    a batch too small for them they grow as far as the launch's share of the cut GPU allows."""
    job = Job.make("im2col_gemm", {}, Problem(B=10000, C=1, M=4, H=80, W=80, K=1, name="wide"), "gpgpusim",
                   config="SM7_QV100")
    permute = launch_parts(job)[2].kernel()
    volta_l2 = {"gpgpu_cache:dl2": "S:32:128:24,L:B:m:L:P,A:192:4,32:0,32"}
    probe = _probe_with_config(tmp_path, {**QV100, **volta_l2, "gpgpu_max_cta": "1", "gpgpu_max_completed_cta": "1"})
    probe.kernels, probe.status = [permute.only], "stopped_at_limit"
    probe.metrics = {"simulated_sms": 80, "cta_per_core": 8, "gpu_sim_cycle": 5685.0, "gpu_tot_issued_cta": 1,
                     "gpu_sim_insn": 8192.0, "L2_total_cache_accesses": 64.0}
    plan = plan_samples(probe, SampleSpec.parse("1,2,3"), permute, 10000)
    assert plan.scale == 4 and plan.ctas == [768, 1536, 2304]  # 768 x 2 KB = 1.5 MB
    assert plan.batches == [8, 16, 24]
    assert plan_samples(probe, SampleSpec.parse("1,2,3"), permute, 24).ctas == [160, 320, 480]  # 4.9 MB: it fits
    small = plan_samples(probe, SampleSpec.parse("1,2,3"), permute, 80)  # 8000 CTAs, 2000 on the cut GPU
    assert small.ctas == [666, 1333, 1999] and small.batches == [7, 14, 20]  # as far as its launch allows
    probe.metrics["gpu_sim_insn"] = 64 * 1000 / 1.3  # as few accesses as the GEMM makes: it computes
    assert plan_samples(probe, SampleSpec.parse("1,2,3"), permute, 10000).ctas == [80, 160, 240]  # on 10 SMs
    probe.metrics["gpu_sim_insn"] = 8192.0
    del probe.metrics["L2_total_cache_accesses"]
    assert plan_samples(probe, SampleSpec.parse("1,2,3"), permute, 10000).ctas == [160, 320, 480]


def _launch_run(run_id: str, cycles: float, insn: float, misses: float) -> RunResult:
    job = Job("fft", Params({}), FMNIST, "gpgpusim", config="SM7_QV100", config_name="SM7_QV100")
    run = RunResult.of(job, "stopped_at_limit", "f", kernels=["k"], run_id=run_id,
                       environment={"config": "SM7_QV100"})
    for name, value in (("gpu_sim_cycle", cycles), ("gpu_sim_insn", insn), ("L1D_total_cache_misses", misses),
                        ("L1D_total_cache_accesses", 4 * misses), ("gpu_occupancy", 50.0), ("simulated_sms", 80),
                        ("regs", 32), ("sim_wall_s", 2.0)):
        run.add(name, value)
    return run


def test_an_estimate_made_one_launch_at_a_time_sums_its_launches_and_their_bounds(tmp_path, monkeypatch):
    """Each launch keeps its own estimate under its name; the run's totals are its launches' (counts and their bounds
    summed, occupancy weighted by cycles); a fixed launch's run is exact; what the runs cost adds up."""
    job = Job.make("fft", {}, FMNIST.with_batch(10000), "gpgpusim", config="SM7_QV100")
    parts = {p.launch: p for p in launch_parts(job)}
    grown = {"conv2d_fft_xfft": (1000.0, 100.0), "conv2d_fft_cgemm": (3000.0, 300.0)}  # cycles, bound
    faked = {}

    def fake(part, probe, samples, plan):
        cycles, bound = grown[part.launch]
        faked[part.launch] = plan
        own = {"gpu_sim_cycle": Estimate(cycles, bound), "gpu_sim_insn": Estimate(10 * cycles, 0.0),
               "gpu_occupancy": Estimate(40.0 if part.launch.endswith("xfft") else 80.0, 4.0),
               "L1D_total_cache_misses": Estimate(cycles / 10, cycles / 100), "sim_wall_s": Estimate(6.0, 0.0),
               "simulated_sms": Estimate(80, 0.0)}
        facts = {"batches": [1, 2, 3], "ctas": [20, 40, 60], "wave_images": 0.4, "scale": 4, "sample_config": "c",
                 "steady_cycles_per_insn": {}, "fraction": 0.01, "probe": probe.run_id,
                 "runs": [s.run_id for s in samples]}
        return own, facts

    monkeypatch.setattr("simflow.sim.estimate._estimates", fake)
    plan = Plan(4, [1, 2, 3], [20, 40, 60], 0.4)
    wfft = _launch_run("wfft", 500.0, 5000.0, 20.0)
    done = [(parts["conv2d_fft_wfft"], wfft, [], None)]
    for name in grown:
        probe = _launch_run(f"{name}-probe", 1, 1, 1)
        done.append((parts[name], probe, [_launch_run(f"{name}-{i}", 1, 1, 1) for i in range(3)], plan))
    est = estimate_launches(job, done, SampleSpec.parse("1,2,3"), tmp_path, wall_s=9.0)
    assert est.metrics["conv2d_fft_wfft.gpu_sim_cycle"] == 500 and est.bound("conv2d_fft_wfft.gpu_sim_cycle") == 0
    assert est.metrics["conv2d_fft_cgemm.gpu_sim_cycle"] == 3000
    assert est.metrics["gpu_sim_cycle"] == 4500 and est.bound("gpu_sim_cycle") == pytest.approx(400)
    assert est.metrics["gpu_sim_insn"] == 45000 and est.bound("gpu_sim_insn") == 0
    assert est.metrics["gpu_occupancy"] == pytest.approx((50 * 500 + 40 * 1000 + 80 * 3000) / 4500)
    assert est.metrics["sim_wall_s"] == 2 + 6 + 6 and "conv2d_fft_xfft.sim_wall_s" not in est.metrics
    assert est.metrics["simulated_sms"] == 80 and "conv2d_fft_wfft.regs" in est.metrics and "regs" not in est.metrics
    assert est.estimate["ctas"] == [20, 40, 60] and set(est.estimate["launches"]) == {"conv2d_fft_wfft", *grown}
    assert est.estimate["fraction"] == pytest.approx(0.02)
    assert "one launch at a time" in est.reason and "checked no output" in est.reason


def test_a_family_whose_waves_drift_widens_its_cycle_rate_floor():
    """Issue 57: regtile's waves speed up until the seventh (9.7 %), so its rate past a 5-wave sample may be that far
    off: regtile on 3 -> 6 channels at 12 waves read +7.31 % under the 6 % floor's 5.40 %."""
    points = [(b, _metrics(b)) for b in (4, 8, 12)]
    est = extrapolate(points, 400, wave_images=4, rate_floor=0.10)
    assert est["gpu_sim_cycle"].bound == pytest.approx(0.10 * 250 * (400 - 12) + TAIL_WAVES * 1000)
    assert render("regtile", get_problem("batch3x3")).family.SAMPLE_DRIFT == 0.10  # a class fact, not a field
    assert render("global", get_problem("batch3x3")).family.SAMPLE_DRIFT is None  # RATE_FLOOR


def test_an_interrupted_probe_phase_starts_no_samples_and_says_so(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM while a sampled sweep runs its probes: its workers keep their runs as interrupted and the
    sweep stops there (no sample is started after it), every layer's outcome says it was interrupted, and
    `simflow sim --sample` takes the command's Ctrl-C path (exit 130) rather than reporting a failure."""
    from simflow.run import sampled
    from simflow.run.sweep import SweepReport
    from simflow.sim.sampling import SampleSpec

    phases = []

    def interrupted_sweep(sweep, store, **_):
        phases.append(sweep.name)
        return SweepReport(sweep.name, len(sweep.jobs), 0, interrupted=True)

    monkeypatch.setattr(sampled, "run_sweep", interrupted_sweep)
    jobs = [Job.make(variant, {}, FMNIST.with_batch(1000), "gpgpusim", config="SM7_QV100")
            for variant in ("global", "shared")]
    with Store(tmp_path) as store:
        outcomes = sampled.run_sampled(jobs, store, SampleSpec.parse("1,2,3"), quiet=True)
    assert len(phases) == 1 and "probes" in phases[0]
    assert [(o.interrupted, o.result) for o in outcomes] == [(True, None), (True, None)]
    assert all("interrupted during the probes" in o.error for o in outcomes)
    with pytest.raises(KeyboardInterrupt):
        sampled.sampled_run(jobs[0], SampleSpec.parse("1,2,3"), tmp_path, workers=1, progress=None)


def test_a_layers_samples_start_as_its_own_probe_ends_in_one_sweep(tmp_path, monkeypatch):
    """One sweep runs the probes, and hears of each probe's end (`then`): that layer's samples, planned from it, the
    longest first, are fed to the same sweep, so a slow probe holds up only its own layer (a 35-minute probe once
    held a core idle while every other layer's samples waited). A failed probe feeds nothing and is its layer's
    error; two layers that share a probe are both planned from it."""
    from simflow.run import sampled
    from simflow.run.sweep import SweepReport
    from simflow.sim.sampling import SampleSpec

    shared = dataclasses.replace(JOB, variant="shared", params=Params(render("shared", PROBLEM).params))
    layers = [JOB, dataclasses.replace(JOB, problem=PROBLEM.with_batch(800)), shared]
    failed = _run(1, "failed")
    failed.status, failed.reason = "failed", "the simulator crashed"
    stored = {probe_job(JOB, tmp_path): _run(1, "probe"), probe_job(shared, tmp_path): failed}
    sweeps, fed = [], {}

    def one_sweep(sweep, store, then=None, **_):
        sweeps.append(sweep)
        for probe in sweep.jobs:
            fed[probe] = then(probe)
        return SweepReport(sweep.name, len(sweep.jobs), 0)

    monkeypatch.setattr(sampled, "run_sweep", one_sweep)
    monkeypatch.setattr(sampled, "stored_run", lambda store, job: stored.get(job))
    with Store(tmp_path) as store:
        outcomes = sampled.run_sampled(layers, store, SampleSpec.parse("1,2,3"), quiet=True)
    assert len(sweeps) == 1 and set(sweeps[0].jobs) == set(stored) and "then each layer's samples" in sweeps[0].name
    samples = fed[probe_job(JOB, tmp_path)]
    assert [job.problem.B for job in samples] == [48, 48, 32, 32, 16, 16]  # each layer's, the longest first
    assert fed[probe_job(shared, tmp_path)] == []
    assert "its probe" in outcomes[2].error and "the simulator crashed" in outcomes[2].error
    assert all("its sample" in o.error and not o.interrupted for o in outcomes[:2])  # none ran here
    monkeypatch.setattr(sampled, "run_sweep", lambda sweep, store, then=None, **_: (
        [then(probe) for probe in sweep.jobs], SweepReport(sweep.name, len(sweep.jobs), 0, interrupted=True))[1])
    with Store(tmp_path) as store:
        stopped = sampled.run_sampled(layers[:2], store, SampleSpec.parse("1,2,3"), quiet=True)
    assert all(o.interrupted and "had not ended when the sweep was stopped" in o.error for o in stopped)


def test_a_layers_estimate_is_stored_as_soon_as_its_own_samples_have_ended(tmp_path, monkeypatch):
    """The estimate of a layer is made and stored when its last sample ends, while the sweep runs on (another
    layer's samples can take hours): a sweep killed outright later keeps it."""
    from simflow.run import sampled
    from simflow.run.sweep import SweepReport
    from simflow.sim.sampling import SampleSpec

    stored = {probe_job(JOB, tmp_path): _run(1, "probe")}
    estimates_seen = []

    def one_sweep(sweep, store, then=None, **_):
        for probe in sweep.jobs:
            for sample in then(probe):
                stored[sample] = _run(sample.problem.B, f"s{sample.problem.B}")
                then(sample)
                estimates_seen.append(sum(run.sampled for run in store.runs()))
        return SweepReport(sweep.name, len(sweep.jobs), 0)

    monkeypatch.setattr(sampled, "run_sweep", one_sweep)
    monkeypatch.setattr(sampled, "stored_run", lambda store, job: stored.get(job))
    with Store(tmp_path) as store:
        (outcome,) = sampled.run_sampled([JOB], store, SampleSpec.parse("1,2,3"), quiet=True)
    assert estimates_seen == [0, 0, 1]  # stored once the third sample ended, inside the sweep
    assert outcome.result is not None and outcome.result.estimate["batches"] == [16, 32, 48] and not outcome.error
