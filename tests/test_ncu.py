"""Nsight Compute counters: the CSV parser and the alignment on real ncu output from an H200
(tests/data/ncu-h200_*: 'simflow profile' of the global and shared variants on batch3x3), error
paths, and simulator-vs-hardware diffs and correlations."""

import gzip
import math
from pathlib import Path

import pytest
from runs import sim_record

from simflow.analysis.compare import comparable, diff
from simflow.analysis.fidelity import correlate
from simflow.backends import ncu
from simflow.errors import UserError
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.kernels.values import Params
from simflow.kernels.variants import render
from simflow.results.record import RunResult
from simflow.results.store import Store

DATA = Path(__file__).parent / "data"
PROBLEM = get_problem("batch3x3")


def text(name):
    return gzip.open(DATA / name, "rt").read()


def hw_record(variant, log="ncu-h200_{}_batch3x3.log.gz", returncode=0, run_id=None):
    kernel = render(variant, PROBLEM)
    result = RunResult.of(Job(variant, Params(kernel.params), PROBLEM, "gpu-ncu"), "passed", kernel.fingerprint(),
                          kernels=kernel.kernel_names, run_id=run_id or f"hw-{variant}")
    ncu.read_output(result, text(log.format(variant)), returncode, Path("ncu.log"))
    return result


def test_csv_with_program_output_units_and_thousands_separators():
    table = ncu.parse_csv(text("ncu-h200_shared_batch3x3.log.gz"))
    (row,) = table.kernels
    assert row["Kernel Name"] == "conv2d_shared" and row["device__attribute_display_name"] == "NVIDIA H200"
    assert table.units["sm__cycles_elapsed.max"] == "cycle" and table.units["gpu__time_duration.sum"] == "ns"
    assert ncu._number("1,980,000") == 1980000 and ncu._number("12.46") == 12.46 and math.isnan(ncu._number("n/a"))
    with pytest.raises(ValueError, match="no ncu CSV header"):
        ncu.parse_csv("==PROF== Connected\nhello\n")
    with pytest.raises(ValueError, match="no kernel rows"):
        ncu.parse_csv('"ID","Process ID","Kernel Name"\n')


def test_counters_under_the_simulators_names():
    shared = hw_record("shared")
    assert shared.status == "passed" and shared.environment["gpu"] == "NVIDIA H200"
    m = shared.metrics
    assert m["gpu_sim_cycle"] == 6577 and m["gpu_sim_insn"] == 837120 and m["gpu_tot_issued_cta"] == 16
    assert m["gpgpu_n_shmem_insn"] == 1328 and m["gpgpu_n_shmem_bkconflict"] == 1152
    assert m["gpu_ipc"] == pytest.approx(837120 / 6577)
    assert m["Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]"] == 1792
    assert m["ncu:smsp__inst_executed_op_shared_ld.sum"] + m["ncu:smsp__inst_executed_op_shared_st.sum"] == 1328
    assert shared.units["gpu_sim_cycle"] == "cycles" and shared.units["ncu:gpu__time_duration.sum"] == "ns"


def test_failures():
    failed = hw_record("shared", log="ncu-h200_no-pycuda_app-error.log.gz", returncode=1)
    assert failed.status == "crashed" and "no ncu CSV header" in failed.reason
    assert "PyCUDA is not importable" in failed.reason and "raw output kept in ncu.log" in failed.reason
    partial = hw_record("shared", returncode=1)
    assert partial.status == "crashed" and "ncu exit 1" in partial.reason
    result = RunResult.of(Job("global", Params({}), PROBLEM, "gpu-ncu"), "passed", "x", kernels=["conv2d_global"])
    with pytest.raises(UserError, match="ERR_NVGPUCTRPERM.*NVreg_RestrictProfilingToAdminUsers=0"):
        ncu.read_output(result, "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", 1, Path("l"))
    # the profiled run's own record (its result.json) failed its check: so does the profile
    kernel = render("shared", PROBLEM)
    wrong = RunResult.of(Job("shared", Params(kernel.params), PROBLEM, "gpu-ncu"), "passed", kernel.fingerprint(),
                         kernels=kernel.kernel_names)
    ncu.read_output(wrong, text("ncu-h200_shared_batch3x3.log.gz"), 0, Path("ncu.log"),
                    child={"status": "wrong_result", "reason": "3 of 4096 output elements wrong"})
    assert wrong.status == "wrong_result" and "3 of 4096 output elements wrong" in wrong.reason


def test_ncu_missing_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.delenv("SIMFLOW_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu, "NCU_DEFAULT", str(tmp_path / "absent"))
    with pytest.raises(UserError, match="ncu not found .*SIMFLOW_NCU"):
        ncu.find_ncu()


def test_command_line():
    cmd = ncu.ncu_command(Path("/x/ncu"), ["conv2d_a", "conv2d_b"], ["python", "-m", "simflow"])
    assert cmd[:8] == ["/x/ncu", "--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none"]
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^(conv2d_a|conv2d_b)$"
    assert cmd[cmd.index("--launch-count") + 1] == "2" and cmd[-3:] == ["python", "-m", "simflow"]
    assert "sm__warps_active.avg.pct_of_peak_sustained_active" in cmd[cmd.index("--metrics") + 1].split(",")


def test_a_strided_layer_is_profiled_at_its_stride(tmp_path, monkeypatch):
    """The profiled run is the job's own layer: its shape reaches `simflow run` whole, the stride included."""
    from simflow.job import Job
    from simflow.kernels.problems import parse_shape

    fake = tmp_path / "ncu"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("SIMFLOW_NCU", str(fake))
    job = Job.make("global", {}, parse_shape("2,3,4,16,16,3,1,2"), "gpu-ncu")
    (folder := tmp_path / "run").mkdir()
    ncu.profile(job, folder)
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[argv.index("--shape") + 1] == "2,3,4,16,16,3,1,2"


def test_simulator_and_hardware_side_by_side(tmp_path):
    with Store(tmp_path) as store:
        for variant in ("global", "shared"):
            store.add(sim_record(tmp_path, variant))
            store.add(hw_record(variant))
        runs = {(r.backend, r.variant): r for r in store.runs()}
    sim, hw = runs["gpgpusim", "shared"], runs["gpu-ncu", "shared"]
    assert comparable(sim, hw) == ""
    frame = diff(sim, hw).set_index("metric")
    assert frame.loc["gpgpu_n_shmem_insn", "A"] == 42048 / 32 and frame.loc["gpgpu_n_shmem_insn", "B"] == 1328
    assert "its value / 32" in frame.loc["gpgpu_n_shmem_insn", "normalisation"]
    assert frame.loc["gpgpu_n_shmem_bkconflict", "ratio"] == 1.0  # 1152 on both
    assert "whole GPU" in frame.loc["gpu_ipc", "normalisation"]
    table, points = correlate(list(runs.values()))
    table = table.set_index("metric")
    assert table.loc["gpu_sim_cycle", "n"] == 2 and len(points[points.metric == "gpu_sim_cycle"]) == 2
    # shared is slower than global in both (7277 vs 6693 cycles simulated, 6577 vs 5429 measured)
    assert table.loc["gpu_sim_cycle", "same_order_%"] == 100
    assert table.loc["Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", "n"] == 2
    with pytest.raises(UserError, match="needs at least 2 variants run both"):
        correlate([runs["gpgpusim", "shared"], runs["gpu-ncu", "shared"]])


def _report_of_both_ways(tmp_path) -> list:
    """global and shared, simulated and profiled, in one report (tmp_path/report)."""
    from simflow.analysis.report import write_report

    with Store(tmp_path) as store:
        for variant in ("global", "shared"):
            store.add(sim_record(tmp_path, variant))
            store.add(hw_record(variant))
        runs = store.runs()
    return write_report(runs, tmp_path / "report", by=["variant"])


def test_report_shows_the_correlation(tmp_path):
    paths = _report_of_both_ways(tmp_path)
    page = (tmp_path / "report" / "index.html").read_text()
    assert "Simulator vs hardware (2 jobs run both ways)" in page and "ordered_differently" in page
    scatter = tmp_path / "report" / "sim-vs-hardware-SM7_QV100-gpu_sim_cycle.svg"
    assert scatter in paths and scatter.read_text().startswith("<svg") and "Spearman" in scatter.read_text()
    assert (tmp_path / "report" / "sim-vs-hardware-SM7_QV100-L2_total_cache_accesses.svg") in paths


@pytest.mark.chromium
def test_the_simulator_vs_hardware_section_in_chromium(tmp_path):
    from browser import measure

    _report_of_both_ways(tmp_path)
    for width in (800, 1280, 1920):
        seen = measure(tmp_path / "report" / "index.html", width)
        assert seen["scrollWidth"] <= width and not seen["outside"] and not seen["overlaps"], (width, seen)
        assert seen["figures"] >= 6  # the scatters with their y = x line among the report's figures
