"""`explain` on hardware (gpu-ncu runs): B - A decomposed into issue-slot terms that add up exactly, from Nsight
Compute's warp-state counters, on real profiles from an H200 (tests/data/ncu-h200_*, made by
benchmarks/ncu_capture.py): tensor-core against tensor-core, Winograd against implicit GEMM, a kernel against a
kernel, direct convolutions; and the refusals around it."""

import dataclasses
import gzip
import json
import math
from pathlib import Path

import pytest
from conftest import simflow
from runs import sim_record

from simflow.analysis.explain import explain, format_explanation, totals, verdict
from simflow.backends import ncu
from simflow.errors import UserError
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.kernels.values import Params
from simflow.kernels.variants import render
from simflow.results.store import Store, StoredRun

DATA = Path(__file__).parent / "data"


def profile(variant: str, preset: str, params: dict | None = None, log: str = "") -> StoredRun:
    problem = get_problem(preset)
    kernel = render(variant, problem, params or {})
    run = StoredRun(status="passed", job=Job(variant, Params(kernel.params), problem, "gpu-ncu"),
                    fingerprint=kernel.fingerprint(), kernels=kernel.kernel_names, run_id=f"hw-{variant}-{preset}")
    tag = "_".join([variant, *map(str, (params or {}).values()), preset])
    ncu.read_output(run, gzip.open(DATA / (log or f"ncu-h200_{tag}.log.gz"), "rt").read(), 0, Path("ncu.log"))
    assert run.status == "passed", run.reason
    return run


PAIRS = {
    "wgmma_halo against wgmma_nhwc (TF32)": (("wgmma_nhwc", "vgg16-conv3_2", {"precision": "tf32"}),
                                             ("wgmma_halo", "vgg16-conv3_2", {})),
    "winograd against implicit_gemm_async": (("implicit_gemm_async", "vgg16-conv3_2", {}),
                                             ("winograd", "vgg16-conv3_2", {})),
    "wgmma_nhwc against mma_nchw (fp16)": (("mma_nchw", "resnet50-3x3-64-64-56", {}),
                                           ("wgmma_nhwc", "resnet50-3x3-64-64-56", {})),
    "shared against global": (("global", "fmnist-conv2", {}), ("shared", "fmnist-conv2", {})),
    # pairs profiled after the account was written (session 45, the same H200): bf16, fp16 1x1 read in place, FFT,
    # register tiles, and a variant of three kernels
    "wgmma_nhwc against mma_nhwc (bf16)": (("mma_nhwc", "resnet50-3x3-128-128-28", {"precision": "bf16"}),
                                           ("wgmma_nhwc", "resnet50-3x3-128-128-28", {"precision": "bf16"})),
    "wgmma_nchw against mma_nchw (fp16 1x1)": (("mma_nchw", "resnet50-1x1-256-64-56", {"io": "float16"}),
                                               ("wgmma_nchw", "resnet50-1x1-256-64-56", {"io": "float16"})),
    "regtile against shared_weights": (("shared_weights", "resnet50-1x1-64-64-56", {}),
                                       ("regtile", "resnet50-1x1-64-64-56", {"channels": 16})),
    "im2col_gemm against implicit_gemm": (("implicit_gemm", "resnet50-conv1", {}),
                                          ("im2col_gemm", "resnet50-conv1", {})),
    "fft against winograd": (("winograd", "vgg16-conv1_2", {}), ("fft", "vgg16-conv1_2", {})),
}


def pair(name):
    (va, pa, xa), (vb, pb, xb) = PAIRS[name]
    return profile(va, pa, xa), profile(vb, pb, xb)


@pytest.mark.parametrize("name", PAIRS)
def test_the_issue_slot_terms_add_up_to_b_minus_a_exactly(name):
    a, b = pair(name)
    out = explain(a, b)
    slots = out.terms("slots")
    assert slots and sum(t.effect for t in slots) == pytest.approx(out.delta, rel=1e-9, abs=1e-6)
    assert sum(t.effect for t in out.terms("cycles")) == pytest.approx(out.delta, rel=1e-9, abs=1e-6)
    assert out.cycles == (totals(a)["gpu_sim_cycle"], totals(b)["gpu_sim_cycle"])
    assert not any("no issue-slot breakdown" in n for n in out.notes)
    assert verdict(out).startswith(f"B is {abs(100 * out.delta / out.cycles[0]):.1f} %")


def test_the_slots_of_each_kernel_are_its_active_sub_partition_cycles():
    run = profile("winograd", "vgg16-conv3_2")
    for kernel in run.kernels:
        counters = {k.split("ncu:")[1]: v for k, v in run.metrics.items() if k.startswith(f"{kernel}.ncu:")}
        issued, lost = ncu.issue_slots({f"ncu:{k}": v for k, v in counters.items()})
        assert issued + sum(lost.values()) == pytest.approx(counters["smsp__cycles_active.sum"], rel=1e-12)
        assert all(v >= 0 for v in lost.values())
    assert ncu.issue_slots({"ncu:smsp__inst_issued.sum": 5.0}) is None  # no active cycles: no account


def test_tensor_core_against_tensor_core_names_wgmma_waits_pipes_and_bulk_copies():
    out = explain(*pair("wgmma_halo against wgmma_nhwc (TF32)"))
    terms = {t.what: t for t in out.terms("slots")}
    assert terms["slots lost: barrier"].effect > 0 and terms["slots lost: gmma"].b > terms["slots lost: gmma"].a
    assert "barrier stalls" in verdict(out)
    evidence = {line.what: line for line in out.lines if math.isnan(line.effect)}
    tensor = evidence["tensor pipe active"]
    assert 0 < tensor.b < tensor.a <= 100  # a share of the pipe's peak, weighted over the kernels
    assert evidence["bytes read by bulk copies (TMA)"].a == 0 < evidence["bytes read by bulk copies (TMA)"].b
    assert evidence["cp.async copies (LDGSTS)"].a > 0 == evidence["cp.async copies (LDGSTS)"].b
    assert "limited by registers, shared_mem" in evidence["theoretical occupancy"].detail
    text = format_explanation(out)
    assert "Pipes busy, % of their peak" in text and "wgmma stalls (warps waiting on a warpgroup MMA)" in text


def test_winograd_is_faster_for_fewer_instructions():
    out = explain(*pair("winograd against implicit_gemm_async"))
    assert out.delta < 0 and out.ranked()[0].what == "warp instructions issued"
    assert verdict(out).startswith("B is 50.7 % faster than A") and "fewer warp instructions to issue" in verdict(out)


@pytest.mark.parametrize("name,said", [
    ("wgmma_nhwc against mma_nhwc (bf16)", "B is 38.5 % faster than A (-35653 cycles): mostly fewer warp instructions"),
    ("wgmma_nchw against mma_nchw (fp16 1x1)", "B is 10.6 % faster than A (-5494 cycles)"),
    ("regtile against shared_weights", "B is 68.3 % faster than A (-1271170 cycles)"),
    ("im2col_gemm against implicit_gemm", "B is 46.0 % slower than A (+475719 cycles): mostly more long-scoreboard"),
    ("fft against winograd", "B is 67.4 % slower than A (+2310782 cycles): mostly more warp instructions"),
])
def test_pairs_profiled_after_the_account_was_written_are_explained_alike(name, said):
    """Five pairs profiled in session 45 that no test was written against first (ncu_capture.py's second set): the
    same exact account, and the evidence names the hardware's own counters, never a simulator stat."""
    out = explain(*pair(name))
    assert verdict(out).startswith(said)
    lines = {line.what: line for line in out.lines}
    assert lines["threads per warp instruction"].detail == "sm__sass_thread_inst_executed.sum / smsp__inst_executed.sum"
    assert not any(line.detail.startswith(("gpu_sim", "gpgpu_")) for line in out.lines)
    if "bf16" in name:
        assert lines["tensor pipe active"].a > 0 and lines["tensor pipe active"].b > 0


def test_a_gemm_kernel_against_another_variants_gemm_kernel():
    a, b = pair("im2col_gemm against implicit_gemm")
    out = explain(a, b, kernels=("conv2d_implicit_gemm", "conv2d_im2col_gemm_gemm"))
    assert sum(t.effect for t in out.terms("slots")) == pytest.approx(out.delta, rel=1e-9, abs=1e-6)
    assert verdict(out).startswith("B is 3.8 % slower than A (+39565 cycles)")  # ncu_capture.py's im2col-gemm
    assert out.cycles[1] < totals(b)["gpu_sim_cycle"]  # the GEMM alone, not its im2col and permute launches
    waves = next(line for line in explain(a, b).lines if line.what == "waves of blocks per SM")
    assert waves.detail == "B: of the longest kernel"  # one side's note, not an empty 'A: ;'


def test_one_kernel_against_another_kernel_of_another_run():
    a, b = pair("winograd against implicit_gemm_async")
    out = explain(a, b, kernels=("conv2d_implicit_gemm_async", "conv2d_winograd_gemm"))
    gemm = float(b.metrics["conv2d_winograd_gemm.gpu_sim_cycle"])
    assert out.cycles == (float(a.metrics["conv2d_implicit_gemm_async.gpu_sim_cycle"]), gemm)
    assert sum(t.effect for t in out.terms("slots")) == pytest.approx(out.delta, rel=1e-9)


def test_a_simulator_run_against_a_hardware_run_is_refused_with_a_pointer(tmp_path):
    hw = profile("shared", "batch3x3", log="ncu-h200_shared_batch3x3.log.gz")
    sim = StoredRun(**{k: v for k, v in vars(sim_record(tmp_path / "r", "shared")).items()})
    with pytest.raises(UserError, match="different machines.*simflow correlate"):
        explain(sim, hw)


def test_a_profile_without_warp_state_counters_says_how_to_get_them():
    old = [profile(v, "batch3x3", log=f"ncu-h200_{v}_batch3x3.log.gz") for v in ("global", "shared")]
    out = explain(*old)
    assert not out.terms("slots") and any("profile them again" in n for n in out.notes)


def test_explain_of_two_profiles_through_the_cli(tmp_path):
    a, b = pair("winograd against implicit_gemm_async")
    with Store(tmp_path) as store:
        for run in (a, b):
            store.add(run)
    proc = simflow("explain", a.id, b.id, "--json", "--results", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert sum(t["effect"] for t in data["issue_slots"]) == pytest.approx(data["cycles"]["delta"])
    assert {s for s in data["evidence"]} >= {"instructions", "pipes", "memory", "occupancy"}
    kernel = simflow("explain", a.id, b.id, "--kernel", "conv2d_implicit_gemm_async,conv2d_winograd_gemm",
                     "--results", str(tmp_path))
    assert kernel.returncode == 0 and "verdict: B is 59.7 % faster" in kernel.stdout


def test_only_the_counters_this_ncu_knows_are_asked_for(tmp_path):
    fake = tmp_path / "ncu"
    known = ["smsp__cycles_active", "smsp__inst_issued", "sm__cycles_elapsed", "smsp__warps_issue_stalled_barrier"]
    fake.write_text("#!/bin/sh\necho 'Device NVIDIA X'\n" + "".join(f"echo '{n}   Counter  cycle  words'\n"
                                                                    for n in known))
    fake.chmod(0o755)
    asked = ncu.known_counters(fake)
    assert "smsp__warps_issue_stalled_barrier.sum" in asked and "smsp__warps_issue_stalled_gmma.sum" not in asked
    assert "launch__registers_per_thread" in asked and "device__attribute_multiprocessor_count" in asked
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 1\n")
    silent.chmod(0o755)
    assert ncu.known_counters(silent) == ncu.COUNTERS  # no list: ask for everything, as before


def _both_ways(tmp_path, swapped: bool):
    """global and shared on batch3x3 simulated (real logs) and profiled on the H200 (real logs); swapped: each
    profile filed under the other variant (test data: chosen, so that the two sides disagree)."""
    with Store(tmp_path) as store:
        for variant, other in (("global", "shared"), ("shared", "global")):
            store.add(sim_record(tmp_path, variant))
            measured = profile(other if swapped else variant, "batch3x3")
            kernel = render(variant, get_problem("batch3x3"))
            store.add(dataclasses.replace(measured, job=dataclasses.replace(measured.job, variant=variant,
                                                                                 params=Params(kernel.params)),
                                          fingerprint=kernel.fingerprint(), run_id=f"hw-{variant}"))
        return store.runs()


def test_simulator_and_gpu_agreeing_say_nothing(tmp_path):
    from simflow.analysis.fidelity import disagreements

    assert disagreements(_both_ways(tmp_path, swapped=False)) == []  # both have global faster on batch3x3


def test_where_simulator_and_gpu_order_two_variants_differently_compare_and_explain_say_so(tmp_path):
    from simflow.analysis.fidelity import disagreements

    (said,) = disagreements(_both_ways(tmp_path, swapped=True))
    assert "order variant=global" in said and "the simulator has variant=global" in said
    assert "the GPU variant=shared" in said and "B/A differs most in" in said and said.count("simulated") == 3
    compare = simflow("compare", "--results", str(tmp_path))  # both backends: two tables, and the note
    assert compare.returncode == 0 and "simulator and the GPU order" in compare.stderr
    explained = simflow("explain", "variant=global,backend=gpgpusim", "variant=shared,backend=gpgpusim", "--json",
                        "--results", str(tmp_path))
    assert explained.returncode == 0, explained.stderr
    assert any("differently" in n for n in json.loads(explained.stdout)["notes"])
