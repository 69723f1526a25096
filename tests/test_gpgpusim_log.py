"""The simulator-log parser on real GPGPU-Sim output (tests/data, from ../shared/gpgpusim-logs)."""

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simflow.results.metrics import better
from simflow.sim.aerialvision import parse_aerialvision
from simflow.sim.catalogue import CATALOGUE, STATS, iter_catalogue, stat_of
from simflow.sim.log import parse_file, parse_text

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
TWO = DATA / "gpgpusim-dev_qv100_global-then-shared.log.gz"
GLOBAL_ONLY = DATA / "gpgpusim-dev_qv100_global-only.log.gz"
SHARED_ONLY = DATA / "gpgpusim-dev_qv100_shared-only.log.gz"
FORK = DATA / "accelsim-fork_qv100_global-then-shared.log.gz"


def text(path):
    return gzip.open(path, "rt").read()


def test_values_exactly_as_printed():
    log = parse_file(TWO)
    assert log.status == "complete" and log.exit_detected and log.simulator_version == "4.2.0"
    assert log.build.startswith("gpgpu-sim_git-commit-6b244a5d")
    first, second = log.kernels
    assert (first.launch_uid, first.kernel) == (1, "_Z13conv2d_globalPKfS0_Pfiiii")
    assert (second.launch_uid, second.kernel) == (2, "_Z13conv2d_sharedPKfS0_Pfiiii")
    m = first.metrics
    assert m["gpu_sim_cycle"] == 6627 and m["gpu_sim_insn"] == 319488 and m["gpu_ipc"] == 48.21
    assert m["gpu_occupancy"] == 10.2516 and m["L2_BW"] == 8.3846 and m["gpu_tot_issued_cta"] == 16
    assert m["L1D_total_cache_accesses"] == 7488 and m["L1D_total_cache_misses"] == 1200
    assert m["L1D_total_cache_miss_rate"] == pytest.approx(0.1603, abs=5e-5)
    assert m["gpgpu_n_load_insn"] == 73728 and m["gpgpu_n_store_insn"] == 4096 and m["gpgpu_n_shmem_insn"] == 0
    assert first.resources == {"regs": 32, "lmem": 0, "smem": 0, "cmem": 392, "grid": "1,1,16",
                               "block": "16,16,1", "cta_per_core": 8, "cta_limited_by": "threads regs"}
    assert second.resources["regs"] == 40 and second.resources["cta_limited_by"] == "regs"
    # reset-per-kernel values are kept as printed for the second kernel
    assert second.metrics["gpu_sim_cycle"] == 7222 and second.metrics["gpu_ipc"] == 71.311
    facts = log.run_facts()
    assert facts["gpgpu_simulation_time"] == 6 and facts["gpgpu_simulation_rate_insn"] == 139082
    assert facts["gpgpu_silicon_slowdown"] == 626949


def test_second_block_differenced_equals_the_shared_only_run():
    both = parse_file(TWO).kernels[1].metrics
    alone = parse_file(SHARED_ONLY).kernels[0].metrics
    cumulative = [s.name for s in STATS.values() if s.kind == "cumulative"]
    compared = 0
    for name in cumulative:
        if name in ("L2_total_cache_misses", "total dram reads", "total dram writes") or name.startswith(
                "L2_cache_stats_breakdown[GLOBAL_ACC_W]["):
            continue  # the data was already in L2 for the second kernel (its y writes hit where they had missed)
        assert both[name] == alone[name], name
        compared += 1
    assert compared > 40
    assert both["gpgpu_n_shmem_insn"] == 42048 and both["L1D_total_cache_accesses"] == 2672


def test_first_block_equals_the_global_only_run():
    both, alone = parse_file(TWO).kernels[0].metrics, parse_file(GLOBAL_ONLY).kernels[0].metrics
    # the global-only log never prints the read-fail line; the two-kernel log's second block does, so its
    # first kernel reads 0 there
    extra = {k: v for k, v in both.items() if k not in alone}
    assert extra == {"Total_core_cache_fail_stats_breakdown[GLOBAL_ACC_R][MISS_QUEUE_FULL]": 0}
    assert {k: v for k, v in both.items() if k in alone} == alone


def test_fork_names_and_nan():
    log = parse_file(FORK)
    assert log.status == "complete" and log.build.startswith("gpgpu-sim_git-commit-667834cf")
    shared = log.kernels[1].metrics
    assert math.isnan(log.kernels[0].metrics["gpu_occupancy"])  # printed as -nan%
    assert shared["gpgpu_n_shmem_bkconflict"] == 1296  # the fork fills it
    assert "gpgpu_n_cache_bkconflict" in shared  # printed as gpgpu_n_l1cache_bkconflict
    upstream = parse_file(TWO).kernels[1].metrics
    assert upstream["gpgpu_n_shmem_bkconflict"] == 0 and upstream["gpgpu_stall_shd_mem[s_mem][bk_conf]"] == 1296


def test_bad_config_abort_is_a_failed_run_with_the_assertion():
    log = parse_file(DATA / "gpgpusim-dev_bad-config_assert-abort.log.gz")
    assert log.status == "aborted" and not log.ok
    assert "Assertion `0 <= l1_ratio && l1_ratio <= 1' failed" in log.reason
    assert log.kernels == []


def test_log_cut_in_the_middle_of_a_kernel_is_incomplete():
    lines = text(TWO).splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("kernel_name = _Z13conv2d_shared")) + 40
    log = parse_text("".join(lines[:cut]))
    assert log.status == "incomplete" and "no exit line" in log.reason and "conv2d_shared" in log.reason
    assert [k.complete for k in log.kernels] == [True, False]
    assert log.kernels[0].metrics["gpu_sim_cycle"] == 6627


def test_stopped_at_a_limit():
    body = text(GLOBAL_ONLY).replace("GPGPU-Sim: *** exit detected ***",
                                     "GPGPU-Sim: ** break due to reaching the maximum cycles (or instructions) **\n"
                                     "GPGPU-Sim: *** exit detected ***")
    log = parse_text(body)
    assert log.status == "stopped_at_limit" and log.stopped_at_limit and not log.kernels[-1].complete


def test_real_limit_stop_reprints_the_kernel_unnamed():
    """gpgpu_max_insn = 300000: the block of conv2d_global, then the same block with an empty name and uid."""
    log = parse_file(DATA / "accelsim-fork_qv100_batch3x3_global_max-insn-stop.log.gz")
    assert log.status == "stopped_at_limit" and log.exit_detected
    (kernel,) = log.kernels
    assert (kernel.launch_uid, kernel.kernel, kernel.complete) == (1, "conv2d_global", False)
    assert kernel.metrics["gpu_sim_insn"] == 300559 and kernel.metrics["gpu_sim_cycle"] == 5642


def test_unknown_option_abort_names_the_option():
    log = parse_file(DATA / "accelsim-fork_unknown-option-abort.log.gz")
    assert log.status == "aborted" and log.kernels == []
    assert "Unknown Option: '-gpgpu_no_such_option'" in log.reason


def test_log_of_a_killed_run_is_incomplete():
    log = parse_file(DATA / "accelsim-fork_qv100_batch3x3_global_killed-by-timeout.log.gz")
    assert log.status == "incomplete" and "before any kernel finished" in log.reason


def test_cuda13_binary_gets_a_clear_reason():
    log = parse_file(DATA / "cuda13-binary_not-simulated.log.gz")
    assert log.status == "not_simulated"
    assert "libcudart.so.13" in log.reason and "CUDA 11.x" in log.reason


@pytest.mark.parametrize("body,status", [("", "empty"), ("hello\nworld\n", "not_simulated"),
                                         ("\x00\xff garbage = 12\n", "not_simulated")])
def test_not_simulator_output(body, status):
    log = parse_text(body)
    assert log.status == status and log.reason


def test_catalogue_is_data():
    assert len({s.name for s in CATALOGUE}) == len(CATALOGUE)
    for s in CATALOGUE:
        assert s.kind in ("cumulative", "per_kernel", "process", "ratio", "derived")
        assert s.better in ("", "lower", "higher") and s.meaning
    for name in ("gpu_sim_cycle", "gpu_ipc", "gpu_occupancy", "L1D_total_cache_accesses", "L1D_total_cache_misses",
                 "L1D_total_cache_miss_rate", "gpgpu_n_shmem_insn", "gpgpu_n_load_insn", "gpgpu_n_store_insn",
                 "gpu_tot_issued_cta"):
        assert name in STATS


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "simflow", "parse", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


def test_cli_json_and_csv(tmp_path):
    proc = _cli(TWO, "--json", "--csv", tmp_path / "k.csv")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "complete" and out["log"].endswith(".log.gz")
    assert [k["kernel"] for k in out["per_kernel"]] == ["_Z13conv2d_globalPKfS0_Pfiiii",
                                                         "_Z13conv2d_sharedPKfS0_Pfiiii"]
    assert out["per_kernel"][1]["gpgpu_n_shmem_insn"] == 42048
    import pandas as pd

    frame = pd.read_csv(tmp_path / "k.csv")
    assert list(frame.gpu_sim_cycle) == [6627, 7222]


def test_cli_failed_logs_exit_2_with_reason(tmp_path):
    proc = _cli(DATA / "gpgpusim-dev_bad-config_assert-abort.log.gz")
    assert proc.returncode == 2 and "aborted" in proc.stdout and "Assertion" in proc.stdout
    assert "Traceback" not in proc.stderr
    missing = _cli(tmp_path / "nope.log")
    assert missing.returncode == 1 and "no such log file" in missing.stderr


def test_examples_of_simflows_own_kernels():
    examples = ROOT / "examples"
    glob = parse_file(examples / "accelsim-fork_qv100_batch3x3_global.log.gz")
    shared = parse_file(examples / "accelsim-fork_qv100_batch3x3_shared.log.gz")
    assert glob.ok and shared.ok
    assert any(line.startswith("simflow: PASS") for line in glob.program_lines)
    assert any(line.startswith("simflow: PASS") for line in shared.program_lines)
    g, s = glob.kernels[0], shared.kernels[0]
    assert (g.kernel, s.kernel) == ("conv2d_global", "conv2d_shared")  # extern "C": readable names
    assert g.metrics["gpgpu_n_shmem_insn"] == 0 and s.metrics["gpgpu_n_shmem_insn"] > 0
    assert s.metrics["L1D_total_cache_accesses"] < g.metrics["L1D_total_cache_accesses"]


# ---- damaged, mixed and hostile input: the parser never raises --------------------------------------

def _cumulative_never_negative(log) -> bool:
    return all(value >= 0 for k in log.kernels for name, value in k.metrics.items()
               if stat_of(name).kind == "cumulative" and not math.isnan(value))


def test_both_builds_give_the_second_kernel_its_own_breakdown():
    """The fork resets Total_core_cache_stats_breakdown per kernel, upstream accumulates it: both
    must give shared's own numbers, never the fork's old negative difference (1192 - 6024)."""
    fork, upstream = parse_file(FORK), parse_file(TWO)
    assert (fork.flavour, upstream.flavour) == ("accel-sim fork", "upstream")
    for name in ("[GLOBAL_ACC_R][HIT]", "[GLOBAL_ACC_R][TOTAL_ACCESS]", "[GLOBAL_ACC_W][TOTAL_ACCESS]"):
        key = f"Total_core_cache_stats_breakdown{name}"
        assert fork.kernels[1].metrics[key] == upstream.kernels[1].metrics[key] > 0
    assert _cumulative_never_negative(fork) and _cumulative_never_negative(upstream)


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_a_truncated_gzip_keeps_what_came_before(tmp_path, cut):
    data = TWO.read_bytes()
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: int(len(data) * cut)])
    log = parse_file(path)
    assert log.status == "incomplete" and "the file is damaged after line" in log.reason
    assert all(k.complete for k in log.kernels[:-1]) and not (log.kernels and log.kernels[-1].complete)
    if cut == 0.95:  # the first kernel's block came through whole
        assert log.kernels[0].metrics["gpu_sim_cycle"] == 6627


def test_gzip_header_then_garbage_and_appended_garbage(tmp_path):
    path = tmp_path / "junk.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4)
    log = parse_file(path)
    assert log.status in ("incomplete", "empty") and "damaged" in log.reason or log.status == "empty"
    whole = tmp_path / "whole-then-junk.gz"
    whole.write_bytes(TWO.read_bytes() + b"\x1f\x8bgarbage")
    log = parse_file(whole)
    assert log.status == "incomplete" and len(log.kernels) == 2 and log.kernels[0].complete


@pytest.mark.parametrize("gz", [False, True])
def test_two_processes_appended_are_refused_not_differenced(tmp_path, gz):
    body = text(GLOBAL_ONLY) + text(SHARED_ONLY)
    path = tmp_path / ("two.log.gz" if gz else "two.log")
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(body)
    else:
        path.write_text(body)
    log = parse_file(path)
    assert log.status == "mixed" and "more than one simulator process" in log.reason
    assert _cumulative_never_negative(log) and "L1D_total_cache_accesses" not in log.kernels[1].metrics
    assert log.kernels[1].metrics["gpu_sim_cycle"] > 0  # its per-kernel stats are kept


def test_interleaved_lines_of_two_runs_are_refused():
    a, b = text(GLOBAL_ONLY).splitlines(), text(SHARED_ONLY).splitlines()
    mixed = [line for pair in zip(a, b, strict=False) for line in pair]
    log = parse_text("\n".join(mixed))
    assert log.status == "mixed" and _cumulative_never_negative(log)


def test_out_of_range_numbers_are_missing_with_a_note():
    body = text(GLOBAL_ONLY).replace("kernel_launch_uid = 1", "kernel_launch_uid = inf", 1)
    body = body.replace("gpu_sim_insn = 319488", "gpu_sim_insn = 1e999", 1)
    log = parse_text(body)
    assert log.status == "complete" and log.kernels[0].launch_uid == 1
    assert math.isnan(log.kernels[0].metrics["gpu_sim_insn"])
    assert any("kernel_launch_uid" in n for n in log.notes) and any("gpu_sim_insn" in n for n in log.notes)


def _mutations(rng, sources: list[bytes]):
    """Seeded damage of the shipped logs: truncations, bit flips, splices, as gzip or plain bytes."""
    for _ in range(300):
        src = sources[int(rng.integers(len(sources)))]
        plain = gzip.decompress(src)
        kind = rng.choice(["cut-gz", "flip-gz", "cut-text", "flip-text", "splice", "garbage-gz"])
        if kind == "cut-gz":
            yield kind, src[: int(rng.integers(len(src)))]
        elif kind == "flip-gz":
            data = bytearray(src)
            for _ in range(int(rng.integers(1, 6))):
                data[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
            yield kind, bytes(data)
        elif kind == "cut-text":
            yield kind, plain[: int(rng.integers(len(plain)))]
        elif kind == "flip-text":
            data = bytearray(plain)
            for _ in range(int(rng.integers(1, 50))):
                data[int(rng.integers(len(data)))] = int(rng.integers(256))
            yield kind, bytes(data)
        elif kind == "splice":
            other = gzip.decompress(sources[int(rng.integers(len(sources)))])
            yield kind, plain[: int(rng.integers(len(plain)))] + other[int(rng.integers(len(other))):]
        else:
            yield kind, b"\x1f\x8b" + bytes(rng.integers(0, 256, int(rng.integers(1, 4000)), dtype=np.uint8))


def test_fuzz_never_raises(tmp_path):
    """A few hundred damaged copies of the shipped logs: zero exceptions, a status for each, and no
    negative differenced counter."""
    import time

    rng = np.random.default_rng(20261122)
    sources = [p.read_bytes() for p in sorted(DATA.glob("*.log.gz")) + sorted((ROOT / "examples").glob("*.log.gz"))]
    path = tmp_path / "case"
    seen, start = {}, time.monotonic()
    for kind, data in _mutations(rng, sources):
        path.write_bytes(data)
        log = parse_file(path)
        assert log.status in ("complete", "stopped_at_limit", "incomplete", "aborted", "not_simulated", "mixed",
                              "empty"), (kind, log.status)
        assert _cumulative_never_negative(log), (kind, log.reason)
        seen[log.status] = seen.get(log.status, 0) + 1
    assert time.monotonic() - start < 120
    assert seen.get("incomplete", 0) > 50  # the damage was real


# simflow's own runs, with its instrumentation (progress every 500 cycles): batch3x3 on both builds,
# and im2col_gemm's three kernels in one process.
SAMPLED_FORK = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
SAMPLED_UPSTREAM = DATA / "gpgpusim-dev_qv100_batch3x3_shared_sampled.log.gz"
SAMPLED_THREE = DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_sampled.log.gz"
EVERY_COMPLETE = (TWO, GLOBAL_ONLY, SHARED_ONLY, FORK, SAMPLED_FORK, SAMPLED_UPSTREAM, SAMPLED_THREE)


@pytest.mark.parametrize("path", EVERY_COMPLETE, ids=lambda p: p.name)
def test_issued_slots_are_the_warp_instructions(path):
    for record in parse_file(path).kernels:
        m = record.metrics
        assert m["issue_slots[issued]"] == m["gpgpu_n_tot_w_icount"], (path.name, record.kernel)
        assert 0 <= m["issue_slots[issued_partial]"] <= m["issue_slots[issued]"]


def test_issue_slots_from_the_warp_distribution_line():
    first, second = (k.metrics for k in parse_file(TWO).kernels)
    slots = ("issue_slots[Stall]", "issue_slots[W0_Idle]", "issue_slots[W0_Scoreboard]", "issue_slots[issued]")
    assert [first[s] for s in slots] == [1942, 27579, 58823, 10112]  # as printed
    assert [second[s] for s in slots] == [4271 - 1942, 58623 - 27579, 148962 - 58823, 28192 - 10112]
    assert second["issue_slots[issued_partial]"] == 1296  # W4: the tile loads' partial warps
    assert STATS["issue_slots[W0_Scoreboard]"].better == "lower"


def test_fail_stats_are_a_family_printed_only_when_not_zero():
    first, second = (k.metrics for k in parse_file(TWO).kernels)
    read, write = ("Total_core_cache_fail_stats_breakdown[GLOBAL_ACC_R][MISS_QUEUE_FULL]",
                   "Total_core_cache_fail_stats_breakdown[GLOBAL_ACC_W][MISS_QUEUE_FULL]")
    assert (first[read], first[write]) == (0, 48)  # upstream leaves out the zero read line
    alone = parse_file(SHARED_ONLY).kernels[0].metrics
    assert (second[read], second[write]) == (alone[read], alone[write]) == (244, 69)  # differenced
    fork_second = parse_file(FORK).kernels[1].metrics
    assert (fork_second[read], fork_second[write]) == (284, 72)  # the fork counts per kernel: as printed
    assert stat_of(read).unit == "" and stat_of(read).better == "lower" and stat_of(read).kind == "cumulative"
    assert better(read) == "lower" and stat_of("Total_core_cache_fail_stats") is None
    assert any(row["name"].endswith("[TYPE][REASON]") for row in iter_catalogue())


def test_latency_stats_are_whole_process_figures():
    first, second = (k.metrics for k in parse_file(TWO).kernels)
    assert (first["averagemflatency"], first["maxmflatency"], first["avg_icnt2mem_latency"]) == (214, 295, 51)
    assert (second["averagemflatency"], second["avg_icnt2mem_latency"]) == (219, 64)  # as printed, not differenced
    assert STATS["averagemflatency"].kind == "process" and STATS["averagemflatency"].unit == "cycles"


@pytest.mark.parametrize("path", [SAMPLED_FORK, SAMPLED_UPSTREAM, SAMPLED_THREE], ids=lambda p: p.name)
def test_progress_samples_add_up_to_each_kernel(path):
    log = parse_file(path)
    assert log.status == "complete" and len(log.samples) > 10
    rows = log.intervals()
    start = total = 0
    for position, record in enumerate(log.kernels, 1):
        mine = [r for r in rows if r["launch"] == position]
        assert {r["kernel"] for r in mine} == {record.kernel}
        total += record.metrics["gpu_tot_sim_cycle"]  # the process's cycles, differenced per kernel
        assert mine[0]["cycle_start"] == start and mine[-1]["cycle_end"] == total
        assert all(a["cycle_end"] == b["cycle_start"] for a, b in zip(mine, mine[1:], strict=False))
        insn = sum(r["ipc"] * (r["cycle_end"] - r["cycle_start"]) for r in mine)
        assert insn == pytest.approx(record.metrics["gpu_sim_insn"], rel=1e-9)
        # occupancy sampled every 500 cycles vs the simulator's per-cycle average (both over SMs with work)
        busy = [(r["occupancy"], r["cycle_end"] - r["cycle_start"]) for r in mine if not math.isnan(r["occupancy"])]
        sampled = sum(o * w for o, w in busy) / sum(w for _, w in busy)
        assert sampled == pytest.approx(record.metrics["gpu_occupancy"], abs=2.5), record.kernel
        # the launch latency: no instruction in the first 5000 cycles of each kernel
        assert all(r["ipc"] == 0 for r in mine if r["cycle_end"] <= start + 5000)
        hits = [r["l1d_hit_rate"] for r in mine if not math.isnan(r["l1d_hit_rate"])]
        assert hits and all(0 <= h <= 1 for h in hits)
        start = mine[-1]["cycle_end"]


def test_samples_of_a_kernel_that_never_finished():
    lines = text(SAMPLED_FORK).splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("kernel_name"))
    log = parse_text("".join(lines[:cut]))
    assert log.status == "incomplete" and not log.kernels and len(log.samples) > 10
    assert {s.kernel for s in log.samples} == {"conv2d_shared"} and {s.launch for s in log.samples} == {0}
    assert [r["cycle_end"] for r in log.intervals()][:2] == [500, 1000]


def test_aerialvision_intervals_follow_the_kernels():
    """An overlay with visualizer_enabled = 1 on im2col_gemm (three kernels): the file's intervals add
    up to each kernel's instructions, and their slots follow the log's issue-slot breakdown."""
    rows = parse_aerialvision(DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_aerialvision.log.gz")
    log = parse_file(DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_aerialvision-run.log.gz")
    assert {r["kernel"] for r in rows} == {1, 2, 3} and len(log.kernels) == 3
    for position, record in enumerate(log.kernels, 1):
        mine = [r for r in rows if r["kernel"] == position]
        assert mine[0]["cycle_start"] == 0 and mine[-1]["cycle_end"] <= record.metrics["gpu_sim_cycle"]
        insn = sum(r["ipc"] * (r["cycle_end"] - r["cycle_start"]) for r in mine)
        assert insn <= record.metrics["gpu_sim_insn"] and insn > 0.9 * record.metrics["gpu_sim_insn"]
    # the GEMM kernel: issued slots per SM x 80 SMs ~ its warp instructions (the file rounds down per interval)
    gemm = log.kernels[1].metrics
    issued = sum(r["slots_issued"] for r in rows if r["kernel"] == 2) * 80
    assert issued == pytest.approx(gemm["issue_slots[issued]"], rel=0.05)
    assert all(r["slots_issued_partial"] <= r["slots_issued"] for r in rows)


def test_aerialvision_damaged_keeps_what_came_before(tmp_path):
    whole = DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_aerialvision.log.gz"
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    assert 0 < len(parse_aerialvision(cut)) < len(parse_aerialvision(whole))


# Lines the compiled scanner reads itself (plain ASCII): numbers it must read as float() does or leave to Python,
# keys with and without spaces before '=', words that only begin a key, option lines of dashes and spaces.
_ASCII_LINES = [b"gpu_sim_cycle = 1e999", b"gpu_sim_cycle = 12.", b"gpu_sim_insn = .5", b"gpu_ipc = 1.5e",
                b"gpu_ipc = +3", b"gpu_sim_insn = 1_0", b"gpu_sim_insn = -0", b"gpu_ipc = nan", b"gpu_ipc =  7 \t",
                b"gpu_sim_cycle=123456789012345678901234567890", b"gpu_sim_cycle \t = 0.1e-320", b"gpu_ipc = 2E+3",
                b"gpu_sim_cycle_x = 5", b"gpu_sim_cycle", b"kernel_name", b"kernel_name = ", b"- - -", b"-x", b"--",
                b"\t", b"Total_core_cache_fail_stats_breakdown[GLOBAL_ACC_R][MISS_QUEUE_FULL] = 3",
                b"gpgpu_simulation_rate = 12 (cycle/sec)", b"kernel_launch_uid = 99999999999999999999",
                b"GPGPU-Sim uArch: CTA/core = 3, limited by: regs", b"GPGPU-Sim uArch: nothing to see",
                b"total_dl1_accesses = 4", b"Stall:1 W0_Idle:2", b"simflow: launch k grid=1 block=1 smem=0"]


def _damaged(raw: bytes, seed: int, ascii_only: bool = False) -> bytes:
    """A log as files come: Windows or old-Mac line ends, indented lines, values out of range, repeated and
    garbage lines, banners in the middle, invalid UTF-8, no final newline. `ascii_only`: damage in plain ASCII
    with '\n' line ends (what the compiled scanner reads itself; any other byte sends a block to the regex)."""
    import random

    rng = random.Random(seed)
    lines = raw.split(b"\n")
    for _ in range(40 if ascii_only else 12):
        lines.insert(rng.randrange(len(lines)), rng.choice([
            b"gpu_sim_cycle = 1e999", b"\tL2_total_cache_accesses = inf", b"kernel_launch_uid = abc",
            b"**** GPGPU-Sim Simulator Version 4.2.0  [build gpgpu-sim_git-commit-x] ****", b"  gpu_ipc =    12.5",
            b"GPGPU-Sim uArch: x pushing kernel 'k' to stream 0, gridDim= (1,1,1) blockDim = (1,1,1)",
            b"-------------------------", b"-gpgpu_n_clusters 3", b"Segmentation fault",
            lines[rng.randrange(len(lines))], *(_ASCII_LINES if ascii_only else [
                b"\xff\xfe garbage \x00",
                # spaces of more than one byte (no-break, ideographic, em), a digit that is not ASCII, a signed zero
                b"\xc2\xa0gpu_sim_cycle = 7", b"gpu_tot_sim_insn\xe3\x80\x80= 9", b"\tgpu_ipc = \xd9\xa3",
                b"\xe2\x80\x83kernel_name = k2", b"gpu_sim_insn = -0", b"-\xc2\xa0"])]))
    lines = [b" \t" + line if rng.random() < 0.1 else line for line in lines]
    return (b"\n" if ascii_only else rng.choice([b"\n", b"\r\n", b"\r"])).join(lines).rstrip(b"\n")


@pytest.mark.parametrize("scanner", ["compiled", "regex"])
@pytest.mark.parametrize("damage", ["any", "ascii"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("path", sorted(DATA.glob("*.log.gz")), ids=lambda p: p.name)
def test_reading_a_file_by_blocks_reads_as_every_line_does(tmp_path, monkeypatch, path, seed, damage, scanner):
    """parse_file hands the parser only the lines that can matter, found in C or by a regex over blocks of the
    file (for speed): every log, damaged or not, reads exactly as when each line is handed to it."""
    from simflow.sim import log_scan
    from simflow.sim.log import parse_lines

    if scanner == "regex":
        monkeypatch.setitem(log_scan._LOADED, "lib", None)
    elif not log_scan.compiled():
        pytest.skip("no C compiler (cc) to build the parser's scanner; the regex reads every block")
    raw = gzip.open(path).read()
    broken = _damaged(raw, seed, ascii_only=damage == "ascii")
    if damage == "ascii":
        assert broken.isascii() and b"\r" not in broken
    for name, data in ((f"{seed}.log", broken), (f"{seed}.log.gz", gzip.compress(broken))):
        (tmp_path / name).write_bytes(data)
        with open(tmp_path / name, "rb") as handle:
            zipped = handle.read(2) == b"\x1f\x8b"
        with (gzip.open if zipped else open)(tmp_path / name, "rt", errors="replace") as text:
            every_line = parse_lines(text)
        assert repr(parse_file(tmp_path / name)) == repr(every_line)


@pytest.mark.parametrize("scanner", ["compiled", "regex"])
@pytest.mark.parametrize("damage", ["any", "ascii"])
@pytest.mark.parametrize("path", sorted(DATA.glob("*.log.gz")), ids=lambda p: p.name)
def test_reading_in_small_blocks_reads_as_every_line_does(tmp_path, monkeypatch, path, damage, scanner):
    """The same with blocks of 97 bytes (a real log is read in blocks of 1 MB): lines cut at a block's end, '\r\n'
    split across two, a block of lines ended by '\r' alone, the carried line."""
    from simflow.sim import log, log_scan

    for module in (log, log_scan):
        monkeypatch.setattr(module, "BLOCK", 97)
    test_reading_a_file_by_blocks_reads_as_every_line_does(tmp_path, monkeypatch, path, 1, damage, scanner)


def test_a_negative_counter_is_marked_and_read_as_missing(tmp_path):
    """Issue 57: a log with gpu_sim_cycle = -5 parsed as complete with no note."""
    raw = text(GLOBAL_ONLY)
    assert "gpu_sim_cycle = " in raw
    broken = tmp_path / "negative.log"
    broken.write_text(raw.replace("gpu_sim_cycle = ", "gpu_sim_cycle = -5 #", 1))
    log = parse_file(broken)
    (kernel,) = log.kernels
    assert math.isnan(kernel.printed["gpu_sim_cycle"])
    assert any("gpu_sim_cycle = -5" in note and "negative" in note for note in log.notes)


def test_without_a_c_compiler_the_parser_reads_the_same_records_with_its_regex_and_doctor_says_so(
        tmp_path, monkeypatch):
    """Issue 57: the parser's scanner is C, built with the machine's cc into simflow's cache; where there is no cc,
    or it fails, the regex reads every block and doctor says how to get the faster path."""
    import shutil

    from simflow import doctor, resources
    from simflow.sim import log_scan

    expected = repr(parse_file(GLOBAL_ONLY))
    monkeypatch.setattr(resources, "cache_dir", lambda: tmp_path / "cache")
    for compiler in (None, "/bin/false"):
        monkeypatch.setattr(log_scan, "_LOADED", {})
        monkeypatch.setattr(shutil, "which", lambda name, compiler=compiler: compiler)
        assert not log_scan.compiled()
        assert repr(parse_file(GLOBAL_ONLY)) == expected
        finding = doctor.parser_finding()
        assert not finding.found and "regex" in finding.detail and "gcc" in finding.how_to_get
    assert not list((tmp_path / "cache").rglob("*.so"))  # nothing half-built is left to load later
    monkeypatch.undo()
    monkeypatch.setattr(resources, "cache_dir", lambda: tmp_path / "cache")
    monkeypatch.setattr(log_scan, "_LOADED", {})
    if shutil.which("cc") or shutil.which("gcc"):
        assert log_scan.compiled() and doctor.parser_finding().found
        assert len(list((tmp_path / "cache").rglob("log_scan-*.so"))) == 1
        assert repr(parse_file(GLOBAL_ONLY)) == expected


@pytest.mark.parametrize("lanes", ["W1:3 W2:4", "W1:3 W2:1_0", "W1:3 W2:inf", "W1:3 W2:x", "W1:3 W2:", "W1:-2 W32:5",
                                   "W1:1e3 W31:0x10", "W1:٣ W2:4", ""])
def test_the_stall_line_reads_each_lane_as_any_value_is_read(lanes):
    """The 'Warp Occupancy Distribution' line's 32 lanes are summed from each value as _value reads it (float() in
    one go where that reads them alike: plain numbers)."""
    from simflow.sim.log import _value, parse_text

    raw = text(GLOBAL_ONLY)
    start = raw.index("Stall:")
    line = raw[start:raw.index("\n", start)]
    log = parse_text(raw.replace(line, f"Stall:5 W0_Idle:6 W0_Scoreboard:7 {lanes}"))
    slots = dict(part.split(":", 1) for part in lanes.split())
    values = [_value(slots.get(f"W{n}", "nan")) for n in range(1, 33)]
    printed = log.kernels[0].metrics
    for name, expected in (("issue_slots[issued]", sum(values)), ("issue_slots[issued_partial]", sum(values[:31]))):
        assert printed[name] == pytest.approx(expected, nan_ok=True), (name, lanes)


def test_the_scanner_built_is_the_c_its_process_loaded_not_a_newer_file(tmp_path, monkeypatch):
    """A sweep's workers outlive an upgrade of simflow under them: each builds (and loads) the C it read when it
    started, whose functions its bindings match; a library of the newer file is another name. (A worker of this
    project's own sweep crashed in the library when it loaded one built from a newer file.)"""
    import hashlib

    from simflow import resources
    from simflow.sim import log_scan

    monkeypatch.setattr(resources, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(log_scan, "_LOADED", {})
    older = log_scan.SOURCE.read_bytes() + b"\n/* what this process read when it started */\n"
    monkeypatch.setattr(log_scan, "_SOURCE_TEXT", older)
    if not log_scan.compiled():
        pytest.skip("no C compiler (cc) to build the parser's scanner")
    (built,) = (tmp_path / "log_scan").glob("*.so")
    assert built.name.endswith(f"-{hashlib.sha256(older).hexdigest()[:16]}.so")
    assert not list((tmp_path / "log_scan").glob("*.c"))
    assert repr(parse_file(GLOBAL_ONLY)) == repr(parse_lines_of(GLOBAL_ONLY))


def parse_lines_of(path):
    from simflow.sim.log import parse_lines

    with gzip.open(path, "rt", errors="replace") as handle:
        return parse_lines(handle)


def test_threads_parsing_at_once_each_read_their_own_log(tmp_path):
    """The compiled scanner fills its buffers with the GIL released: each thread has its own (a Dask worker parses
    several runs' logs at once)."""
    from concurrent.futures import ThreadPoolExecutor

    logs = []
    for n, path in enumerate(sorted(DATA.glob("gpgpusim-dev_qv100_*.log.gz"))[:3]):
        logs.append(tmp_path / f"{n}.log")
        logs[-1].write_bytes(gzip.open(path).read() * 12)  # several blocks of 1 MB each
    alone = {log: repr(parse_file(log)) for log in logs}
    with ThreadPoolExecutor(len(logs)) as pool:
        for _ in range(3):
            assert dict(zip(logs, pool.map(lambda log: repr(parse_file(log)), logs), strict=True)) == alone
