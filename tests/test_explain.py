"""`simflow explain`: the account's terms add up to the cycle difference, from real simulator logs
(examples/: simflow's global and shared kernels on batch3x3), and live on the simulator where it is."""

import dataclasses
import json
import math

import pytest
from conftest import simflow
from runs import PROBLEM, gpu_record, sim_record

from simflow.analysis.explain import explain, format_explanation, totals, verdict
from simflow.errors import UserError
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.kernels.values import Params
from simflow.results.store import Store, StoredRun


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("explain")
    with Store(folder) as store:
        for variant in ("global", "shared"):
            store.add(sim_record(folder, variant))
        store.add(gpu_record("gpu-run", "global", 0.01))
        runs = {run.variant if run.backend == "gpgpusim" else run.backend: run for run in store.runs()}
    return folder, runs


def _sums(out, section):
    return sum(line.effect for line in out.terms(section))


def test_both_decompositions_add_up_to_the_cycle_difference(stored):
    _, runs = stored
    out = explain(runs["global"], runs["shared"])
    a, b = runs["global"].metrics["gpu_sim_cycle"], runs["shared"].metrics["gpu_sim_cycle"]
    assert out.cycles == (a, b) and out.delta == b - a > 0
    assert _sums(out, "cycles") == pytest.approx(b - a, abs=1e-6)
    assert _sums(out, "slots") == pytest.approx(b - a, abs=1e-6)
    assert out.launch_latency == (5000, 5000)  # from the option dump the simulator printed
    top = out.ranked()[0]
    assert top.what == "slots lost: W0_Scoreboard" and top.effect > 0.5 * out.delta  # waiting on loads
    assert top.a == runs["global"].metrics["issue_slots[W0_Scoreboard]"]
    by_what = {line.what: line for line in out.lines}
    assert by_what["shared-memory instructions (thread level)"].b == runs["shared"].metrics["gpgpu_n_shmem_insn"] > 0
    assert by_what["theoretical occupancy"].a == runs["global"].metrics["theoretical_occupancy"]
    assert "limited by threads" in by_what["theoretical occupancy"].detail
    # the reverse question has the opposite answer, term by term
    back = explain(runs["shared"], runs["global"])
    assert _sums(back, "slots") == pytest.approx(a - b, abs=1e-6)


def test_every_format_carries_the_numbers(stored):
    _, runs = stored
    out = explain(runs["global"], runs["shared"])
    text = format_explanation(out)
    assert f"cycles: A {out.cycles[0]:.0f}, B {out.cycles[1]:.0f}" in text and "W0_Scoreboard" in text
    assert "of which kernel launch latency (no instruction runs): A 5000, B 5000" in text
    markdown = format_explanation(out, "markdown")
    assert "| rank | factor |" in markdown and "**Where the issue slots went" in markdown
    data = json.loads(format_explanation(out, "json"))
    assert data["cycles"]["delta"] == out.delta and data["simulator"] == "accel-sim fork"
    assert sum(row["effect"] for row in data["issue_slots"]) == pytest.approx(out.delta)
    assert {"instructions", "memory", "occupancy"} <= set(data["evidence"])
    rows = format_explanation(out, "csv").splitlines()
    assert rows[0] == "section,what,a,b,unit,effect_cycles,detail" and len(rows) == len(out.lines) + 1
    with pytest.raises(UserError, match="table, markdown, csv or json"):
        format_explanation(out, "html")


def test_the_verdict_says_in_words_what_the_largest_terms_say(stored):
    """The README's question (batch3x3, global -> shared): L1 already caught the reuse, so staging adds waits
    and saves no misses."""
    _, runs = stored
    out = explain(runs["global"], runs["shared"])
    said = verdict(out)
    pct = 100 * out.delta / out.cycles[0]
    assert said.startswith(f"B is {pct:.1f} % slower than A (+{out.delta:.0f} cycles): mostly more scoreboard stalls")
    assert "more idle issue slots" in said and "no L1D misses are saved (1056 vs 1056)" in said
    assert "A's L1D already hit 83 %" in said
    assert format_explanation(out).rstrip().splitlines()[-1] == f"verdict: {said}"  # the last line
    assert json.loads(format_explanation(out, "json"))["verdict"] == said
    back = verdict(explain(runs["shared"], runs["global"]))
    assert back.startswith("B is ") and " faster than A (-" in back and "fewer scoreboard stalls" in back
    same = verdict(explain(runs["global"], runs["global"]))
    assert same.startswith("B takes about the same cycles as A")


def test_the_cli_resolves_selectors(stored):
    folder, runs = stored
    proc = simflow("explain", "variant=global,backend=gpgpusim", "variant=shared", "-f", "json",
                   env={"SIMFLOW_RESULTS": str(folder)})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["a"].startswith(runs["global"].id)
    proc = simflow("explain", "variant=global,backend=gpgpusim", "variant=nope", env={"SIMFLOW_RESULTS": str(folder)})
    assert proc.returncode == 1 and "no run matches 'variant=nope'" in proc.stderr


def test_refusals_say_why(stored, tmp_path):
    _, runs = stored
    gpu = runs["gpu"]
    with pytest.raises(UserError, match="not comparable: backend differs"):
        explain(runs["global"], gpu)
    with pytest.raises(UserError, match="two simulator runs or two gpu-ncu runs"):
        explain(gpu, gpu)
    other = dataclasses.replace(runs["shared"], job=dataclasses.replace(runs["shared"].job,
                                                                   problem=get_problem("fmnist-conv1")))
    with pytest.raises(UserError, match="problem differs.*--force"):
        explain(runs["global"], other)
    assert any("not comparable" in n for n in explain(runs["global"], other, force=True).notes)


def test_several_kernels_are_explained_on_their_totals():
    run = StoredRun(status="passed", job=Job("im2col_gemm", Params({}), PROBLEM, "gpgpusim"), fingerprint="x",
                    kernels=["a", "b"], run_id="r")
    for kernel, cycles, occupancy in (("a", 6000, 10.0), ("b", 12000, 40.0)):
        run.add(f"{kernel}.gpu_sim_cycle", cycles)
        run.add(f"{kernel}.gpu_occupancy", occupancy)
        run.add(f"{kernel}.L1D_total_cache_accesses", 100)
        run.add(f"{kernel}.averagemflatency", cycles / 100)  # a whole-process figure: the last kernel's
        run.add(f"{kernel}.theoretical_occupancy", 50.0)
    run.add("kernel_launch_latency", 5000)
    t = totals(run)
    assert t["gpu_sim_cycle"] == 18000 and t["kernel_launches"] == 2 and t["L1D_total_cache_accesses"] == 200
    assert t["gpu_occupancy"] == pytest.approx((6000 * 10 + 12000 * 40) / 18000)  # cycle-weighted
    assert t["averagemflatency"] == 120 and t["theoretical_occupancy"] == 50 and t["kernel_launch_latency"] == 5000


def test_a_hardware_counter_pair_stops_at_ipc():
    def ncu(run_id, cycles, insn, warps):
        run = StoredRun(status="passed", job=Job("global", Params({}), PROBLEM, "gpu-ncu"), fingerprint="x",
                        kernels=["k"], run_id=run_id)
        for name, value in (("gpu_sim_cycle", cycles), ("gpu_sim_insn", insn), ("gpgpu_n_tot_w_icount", warps),
                            ("gpu_occupancy", 40.0)):
            run.add(name, value)
        return run

    out = explain(ncu("a", 1000, 64000, 2000), ncu("b", 1500, 96000, 3000))  # test data: chosen, not measured
    ranked = out.ranked()
    assert ranked[0].what == "thread instructions" and ranked[0].effect == pytest.approx(500)
    assert {line.what: line.effect for line in ranked[1:]} == {"IPC while executing": pytest.approx(0)}
    assert "launch latency" not in format_explanation(out)  # the hardware has none that simflow models
    assert _sums(out, "cycles") == pytest.approx(500) and not out.terms("slots")
    assert any("no issue-slot breakdown" in n for n in out.notes)


def _live(tmp_path, shape: str):
    folder = tmp_path / "results"
    for variant in ("global", "shared"):
        proc = simflow("sim", variant, "--shape", shape, "--results", str(folder))
        assert proc.returncode == 0, proc.stderr
    proc = simflow("explain", "variant=global", "variant=shared", "-f", "json", "--results", str(folder))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.gpgpusim
def test_live_the_users_question_shared_is_slower_on_batch3x3(tmp_path):
    """Why the shared 3x3 kernel takes more cycles than the global one: its warps wait longer."""
    data = _live(tmp_path, "4,1,4,16,16,3,1")
    assert data["cycles"]["delta"] > 0 and data["cycles"]["launch_latency"] == [5000, 5000]
    top = data["issue_slots"][0]
    assert top["what"].startswith("slots lost: W0_") and top["effect"] > 0
    assert sum(r["effect"] for r in data["issue_slots"]) == pytest.approx(data["cycles"]["delta"])
    # the global kernel already hits in L1D: staging through shared memory saves no miss
    memory = {row["detail"]: row for row in data["evidence"]["memory"]}
    assert memory["L1D_total_cache_misses"]["a"] == memory["L1D_total_cache_misses"]["b"]


@pytest.mark.gpgpusim
def test_live_shared_tiling_wins_with_a_7x7_filter_on_32x32(tmp_path):
    """K=7, 4 channels, 32x32: each staged pixel is read 49 times, and shared wins by about 15 %."""
    data = _live(tmp_path, "1,4,4,32,32,7,3")
    assert data["cycles"]["delta"] < -0.05 * data["cycles"]["a"]
    assert sum(r["effect"] for r in data["issue_slots"]) == pytest.approx(data["cycles"]["delta"])
    instructions = {row["detail"]: row for row in data["evidence"]["instructions"]}
    assert instructions["gpgpu_n_load_insn"]["b"] < instructions["gpgpu_n_load_insn"]["a"]
    assert not math.isnan(data["evidence"]["occupancy"][0]["a"])
