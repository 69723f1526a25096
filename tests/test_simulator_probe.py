"""What a simulator build can do: the probe program, the reading of its runs (on real logs), the WMMA
refusal, sampled occupancy, and (marked gpgpusim) the probes on the build simflow finds here."""

import gzip
from pathlib import Path

import pytest
from conftest import simflow

from simflow.sim import probe as simulator_probe
from simflow.sim.log import parse_file, parse_text
from simflow.sim.probe import WMMA_FORMS, Capabilities, ProbeRun, wmma_refusal

DATA = Path(__file__).parent / "data"
FORK_SHARED = DATA / "accelsim-fork_qv100_batch3x3_shared_sampled.log.gz"
UPSTREAM_SHARED = DATA / "gpgpusim-dev_qv100_batch3x3_shared_sampled.log.gz"


def test_the_probe_program_holds_every_form_once():
    source = simulator_probe.probe_source()
    assert len(WMMA_FORMS) == 48 and len({f.name for f in WMMA_FORMS}) == 48
    for form in WMMA_FORMS:
        assert source.count(f'"{form.name}"') == 1
    assert 'if (!strcmp(probe, "banks"))' in source and "tile[t * 32 + r % 32]" in source  # a 32-way conflict
    assert "wmma_form<" not in simulator_probe.probe_source(wmma=False)  # what a plain run builds: banks only


def _run(log: Path, line: str, returncode: int = 0) -> ProbeRun:
    return ProbeRun("banks", parse_file(log), line, returncode)


def test_the_bank_probe_reads_each_builds_counter_and_occupancy(tmp_path):
    fork = simulator_probe._basic(_fake_sim(tmp_path), _run(FORK_SHARED, "simflow-probe: banks PASS"))
    assert (fork.flavour, fork.bank_conflict_counter) == ("accel-sim fork", "gpgpu_n_shmem_bkconflict")
    upstream = simulator_probe._basic(_fake_sim(tmp_path), _run(UPSTREAM_SHARED, "simflow-probe: banks PASS"))
    assert (upstream.flavour, upstream.bank_conflict_counter) == ("upstream", "gpgpu_stall_shd_mem[s_mem][bk_conf]")
    assert upstream.occupancy == "printed" and upstream.build.startswith("gpgpu-sim_git-commit-6b244a5d")
    # the fork as its own README builds it prints gpu_occupancy = -nan: sampled_occupancy stands for it
    text = gzip.open(FORK_SHARED, "rt").read().replace("gpu_occupancy = 12.4249%", "gpu_occupancy = -nan%")
    nan_fork = simulator_probe._basic(_fake_sim(tmp_path), ProbeRun("banks", parse_text(text),
                                                                      "simflow-probe: banks PASS", 0))
    assert nan_fork.occupancy == "sampled"
    with pytest.raises(Exception, match="did not run simflow's bank-conflict probe: wrong: 3 of 512"):
        simulator_probe._basic(_fake_sim(tmp_path), _run(FORK_SHARED, "simflow-probe: banks FAIL 3 of 512 wrong "
                                                                       "(first: 0 got 1 expected 2)"))


def _fake_sim(tmp_path):
    from test_simulator import fake_build

    from simflow.sim.simulator import simulator_at

    root = tmp_path / "sim"
    return simulator_at(root if root.exists() else fake_build(root))


@pytest.mark.parametrize("run,said", [
    (ProbeRun("f", parse_file(UPSTREAM_SHARED), "simflow-probe: f PASS", 0), "correct"),
    (ProbeRun("f", parse_file(UPSTREAM_SHARED), "simflow-probe: f FAIL 169 of 256 wrong (first: 0 got 0 "
              "expected 2)", 0), "wrong: 169 of 256 wrong (first: 0 got 0 expected 2)"),
    (ProbeRun("f", parse_text("GPGPU-Sim Simulator Version 4.2.0 [build x]\n"), "", -11), "crashed: SIGSEGV"),
    (ProbeRun("f", parse_file(DATA / "gpgpusim-dev_bad-config_assert-abort.log.gz"), "", 134), "aborted: "),
])
def test_each_probe_run_is_read_as_correct_wrong_crashed_or_aborted(run, said):
    assert simulator_probe._outcome(run).startswith(said)


def test_a_wmma_refusal_names_the_measured_failure_and_what_would_run():
    forms = ["wmma_m16n16k16_row_row_f32_shared"]
    upstream = Capabilities(root="/up", flavour="upstream", wmma={
        form.name: "correct" if form.space == "global" and form.m == 16 else "wrong: 169 of 256 wrong"
        for form in WMMA_FORMS})
    said = wmma_refusal(upstream, forms)
    assert "upstream at /up" in said and "m16n16k16 A row B row f32 shared: wrong: 169 of 256" in said
    assert said.endswith("wmma fragments=global uses a form it computes correctly")
    assert wmma_refusal(upstream, ["wmma_m16n16k16_row_row_f32_global"]) == ""
    fork = Capabilities(root="/fork", flavour="accel-sim fork", wmma={f.name: "crashed: SIGSEGV" for f in WMMA_FORMS})
    assert wmma_refusal(fork, forms).endswith("crashed: SIGSEGV; 'simflow doctor' lists every form); it computes no "
                                              "WMMA form correctly: simulate a variant without tensor cores")
    assert "not probed" in wmma_refusal(Capabilities(root="/x"), forms)
    assert upstream.summary()["simulator_wmma"].startswith("8 of 48 forms correct: wmma_m16n16k16_row_row_f32_global")


def test_sampled_occupancy_agrees_with_upstreams_printed_figure_on_its_own_log():
    """Upstream prints gpu_occupancy and the progress samples: the two measures of one run agree."""
    (kernel,) = parse_file(UPSTREAM_SHARED).kernels
    assert kernel.metrics["sampled_occupancy"] == pytest.approx(kernel.metrics["gpu_occupancy"], abs=0.5)
    gemm = parse_file(DATA / "accelsim-fork_qv100_batch3x3_im2col-gemm_sampled.log.gz").kernels
    assert [k.metrics["sampled_occupancy"] for k in gemm] == pytest.approx([12.5, 10.33, 12.5], abs=0.01)
    assert "sampled_occupancy" not in parse_file(DATA / "gpgpusim-dev_qv100_global-only.log.gz").kernels[0].metrics


@pytest.mark.gpgpusim
def test_doctor_probes_the_build_found_here():
    proc = simflow("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    import json

    findings = {f["component"]: f for f in json.loads(proc.stdout)}
    builds = [f for name, f in findings.items() if name.startswith("GPGPU-Sim at ")]
    assert builds and all(f["found"] for f in builds), builds
    for build in builds:
        assert "WMMA:" in build["detail"] and " of 48 forms correct" in build["detail"]
        assert "bank conflicts in gpgpu_" in build["detail"]
    assert findings["GPGPU-Sim search"]["detail"].count("used: ") == 1
