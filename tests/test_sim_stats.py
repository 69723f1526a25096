"""What the simulator path got wrong before, each from real logs: dynamic shared memory, one kernel explained
against another, which config options two logs differ in, why DRAM reads are 0 beside L2 misses, and the
sampled occupancy standing in where a build prints -nan."""

import gzip
from pathlib import Path

import pytest
from conftest import simflow

from simflow.analysis.compare import comparable, comparison, diff
from simflow.analysis.explain import explain, format_explanation, kernel_view, totals
from simflow.results.store import Store
from simflow.sim.log import parse_file, parse_text
from simflow.sim.log_import import import_log

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FORK_TWO = DATA / "accelsim-fork_qv100_global-then-shared.log.gz"  # 16-CTA kernels, one after the other
SHARED = EXAMPLES / "accelsim-fork_qv100_batch3x3_shared.log.gz"
GLOBAL = EXAMPLES / "accelsim-fork_qv100_batch3x3_global.log.gz"
SAMPLED = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
GK, SK = "_Z13conv2d_globalPKfS0_Pfiiii", "_Z13conv2d_sharedPKfS0_Pfiiii"  # FORK_TWO's kernels, as it names them


def test_dynamic_shared_memory_comes_from_the_programs_launch_line():
    """The simulator's resource line has the static size only (smem=0 for an extern array)."""
    (kernel,) = parse_file(SHARED).kernels
    assert kernel.resources["smem"] == 0 and kernel.resources["dynamic_smem"] == 1296
    (plain,) = parse_file(GLOBAL).kernels
    assert plain.resources["dynamic_smem"] == 0
    assert "dynamic_smem" not in parse_file(FORK_TWO).kernels[1].resources  # not simflow's program: unknown


def _imported(tmp_path, *logs, labels=None):
    runs = [import_log(log, {"problem": "batch3x3", **(labels or {})}, None, tmp_path) for log in logs]  # one program
    with Store(tmp_path) as store:
        for run in runs:
            store.add(run)
        return {run.id: run for run in store.runs()}, [run.run_id for run in runs]


def test_one_kernel_is_explained_against_another_of_the_same_run(tmp_path):
    stored, (rid,) = _imported(tmp_path, FORK_TWO)
    run = stored[rid]
    global_, shared = kernel_view(run, GK), kernel_view(run, SK)
    assert global_.metrics["gpu_sim_cycle"] == run.metrics[f"{GK}.gpu_sim_cycle"]
    assert shared.metrics["gpgpu_n_shmem_insn"] == run.metrics[f"{SK}.gpgpu_n_shmem_insn"] > 0
    assert global_.metrics["kernel_launch_latency"] == 5000  # the run-level facts come along
    out = explain(run, run, kernels=(GK, SK))
    assert out.cycles == (run.metrics[f"{GK}.gpu_sim_cycle"], run.metrics[f"{SK}.gpu_sim_cycle"])
    assert sum(line.effect for line in out.terms("slots")) == pytest.approx(out.delta, abs=1e-6)
    text = format_explanation(out)
    assert f"A = {rid} " in text and f", kernel {GK}" in text and f", kernel {SK}" in text
    with pytest.raises(Exception, match=f"has no kernel 'conv2d_nope'; its kernels: {GK}, {SK}"):
        kernel_view(run, "conv2d_nope")
    proc = simflow("explain", rid, rid, "--kernel", f"{GK},{SK}", "--results", str(tmp_path))
    assert proc.returncode == 0 and f"kernel {SK}" in proc.stdout, proc.stderr


def test_on_totals_the_sms_with_work_are_the_largest_kernels_not_the_sum(tmp_path):
    stored, (rid,) = _imported(tmp_path, FORK_TWO)
    run = stored[rid]
    assert totals(run)["gpu_tot_issued_cta"] == 32 and totals(run)["largest_kernel_ctas"] == 16
    out = explain(run, run)
    ctas = next(line for line in out.lines if line.what == "thread blocks (CTAs)")
    assert "at most 16 vs 16 SMs have work at once (the largest kernel's CTAs" in ctas.detail


def test_a_diff_of_two_configs_names_the_options_that_differ(tmp_path):
    text = gzip.open(SAMPLED, "rt").read()
    other = tmp_path / "warp-parts-2.log"
    other.write_text(text.replace("-gpgpu_shmem_warp_parts                    1 ", "-gpgpu_shmem_warp_parts 2 ")
                         .replace("-gpgpu_runtime_stat 500:10", "-gpgpu_runtime_stat 100:10"))  # print-only
    stored, (a, b) = _imported(tmp_path / "store", SAMPLED, other)
    why = comparable(stored[a], stored[b])
    assert why == "simulator config differs (as-logged vs as-logged: -gpgpu_shmem_warp_parts 1 -> 2)"
    proc = simflow("diff", a, b, "--results", str(tmp_path / "store"))
    assert proc.returncode == 1 and "-gpgpu_shmem_warp_parts 1 -> 2" in proc.stderr


def test_dram_reads_of_0_beside_l2_misses_are_explained(tmp_path):
    stored, (g, s) = _imported(tmp_path, GLOBAL, SHARED)
    run = stored[g]
    assert run.metrics["total dram reads"] == 0 and run.metrics["L2_total_cache_misses"] == 512
    assert run.metrics["L2_cache_stats_breakdown[GLOBAL_ACC_W][MISS]"] == 128
    assert run.metrics["L2_cache_stats_breakdown[GLOBAL_ACC_W][SECTOR_MISS]"] == 384
    assert run.metrics["L2_cache_stats_breakdown[GLOBAL_ACC_R][HIT]"] == 544
    assert run.metrics["L2_cache_stats_breakdown[GLOBAL_ACC_R][MISS]"] == 0
    out = explain(stored[g], stored[s], force=True)
    assert ("A has 0 DRAM reads beside 512 L2 misses: 512 of the misses are writes, allocated in the write-back L2 "
            "without a DRAM read, and all 544 global reads hit in L2") in " ".join(out.notes)
    # the fork resets the L2 breakdown for each kernel; upstream accumulates it: both give each kernel its own
    fork, upstream = (parse_file(DATA / f"{name}_qv100_global-then-shared.log.gz").kernels
                      for name in ("accelsim-fork", "gpgpusim-dev"))
    for kernels in (fork, upstream):
        assert kernels[1].metrics["L2_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]"] == 688


def test_sampled_occupancy_stands_in_where_the_build_prints_nan(tmp_path):
    fork_nan = tmp_path / "nan.log"
    fork_nan.write_text(gzip.open(SAMPLED, "rt").read().replace("gpu_occupancy = 12.4249%", "gpu_occupancy = -nan%"))
    (kernel,) = parse_text(fork_nan.read_text()).kernels
    assert kernel.metrics["gpu_occupancy"] != kernel.metrics["gpu_occupancy"] and kernel.metrics[
        "sampled_occupancy"] == 12.5
    stored, (a, b) = _imported(tmp_path / "store", fork_nan, fork_nan)
    table = diff(stored[a], stored[b], metrics=["gpu_occupancy"])
    assert list(table["metric"])[1:] == ["sampled_occupancy"]
    result = comparison(list(stored.values()), ["app"], None, None, force=True)
    assert any("sampled_occupancy" in t.frame.columns for t in result.tables)
    out = explain(stored[a], stored[b])
    line = next(line for line in out.lines if line.what == "achieved occupancy")
    assert line.a == 12.5 and "from the progress samples" in line.detail


def test_a_stats_block_printed_twice_is_flagged_not_read_as_a_second_kernel_of_zeros():
    text = gzip.open(GLOBAL, "rt").read()
    start, end = text.index("kernel_name"), text.index("GPGPU-Sim: *** exit detected ***")
    log = parse_text(text[:end] + text[start:end] + text[end:])
    assert log.status == "mixed" and "kernel_launch_uid 1 has two stats blocks" in log.reason
    assert not any(k.complete for k in log.kernels)
    assert all("L1D_total_cache_misses" not in k.metrics for k in log.kernels)  # no differenced zeros, no NaN rate
