"""`simflow calibrate`: the overlay made from recorded H200 measurements (gpgpusim_configs/H200.measured.json,
measured on the GPU machine), each option with its source; the pointer-chase chain; the command's paths. The
measurement itself runs where a GPU is (marked gpu)."""

import importlib.util
import json
import re

import numpy as np
import pytest
from conftest import ROOT, simflow

from simflow.calibrate.measure import _chain
from simflow.calibrate.overlay import config_name, overlay_text, settings
from simflow.sim.config import parse_overlay

CONFIGS = ROOT / "gpgpusim_configs"
MEASURED = json.loads((CONFIGS / "H200.measured.json").read_text())
CHECKED = json.loads((CONFIGS / "H200.check.json").read_text())  # the simulator check folded into H200.toml


def test_the_committed_h200_config_is_what_its_measurements_and_check_give():
    assert overlay_text("H200", MEASURED, CHECKED) == (CONFIGS / "H200.toml").read_text()


def test_every_option_says_where_its_value_comes_from():
    text = (CONFIGS / "H200.toml").read_text()
    config = parse_overlay(text, "H200")
    assert config.base == "SM7_QV100" and len(config.options) == len(settings(MEASURED))
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if " = " in line and not line.startswith(("#", "base", "description")):
            assert lines[i - 1].split(":")[0] in ("# measured", "# derived", "# set"), line
    assert "Kept from SM7_QV100, not measured" in text and "CTA launch latency" in text


def test_the_h200_overlay_values_follow_from_the_figures():
    by = {s.option: s for s in settings(MEASURED)}
    assert by["gpgpu_n_clusters"].value == 132 and by["gpgpu_shader_cta"].value == 32
    sets, line, ways = (int(x) for x in by["gpgpu_cache:dl2"].value.split(",")[0].split(":")[1:])
    assert 32 * 2 * sets * line * ways == MEASURED["l2_bytes"] == 60 * 2**20  # 64 slices hold the L2 exactly
    core, icnt, l2, dram = (float(x) for x in by["gpgpu_clock_domains"].value.split(":"))
    assert core == pytest.approx(MEASURED["clock_mhz"], abs=0.05) and icnt == l2
    # 64 slices a sector a cycle at the SM clock give 4.05 TB/s, short of the 5.83 measured: the L2 runs faster
    assert 64 * 32 * l2 * 1e6 == pytest.approx(MEASURED["l2_bandwidth_gbs"] * 1e9, rel=1e-4) and l2 > core
    assert 32 * 16 * 2 * dram * 1e6 == pytest.approx(MEASURED["dram_bandwidth_gbs"] * 1e9, rel=1e-4)
    l1, l2_hit, dram_hit = (round(MEASURED[f"{x}_latency_cycles"]) for x in ("l1", "l2", "dram"))
    assert by["gpgpu_l1_latency"].value == l1 and by["gpgpu_l2_rop_latency"].value == l2_hit - l1
    assert by["dram_latency"].value == dram_hit - l2_hit and l1 < l2_hit < dram_hit
    assert by["gpgpu_shmem_option"].value.endswith(",228") and by["gpgpu_unified_l1d_size"].value == 256
    assert config_name("NVIDIA H200") == "H200" and config_name("NVIDIA GeForce RTX 4090") == "GeForce_RTX_4090"


def test_the_fp32_units_take_warps_at_the_rate_measured():
    """The FMA rate measured is what the simulated units give: schedulers x 32 lanes / initiation interval (the base's
    interval of 2 would halve it: Volta has 16 FP32 lanes a scheduler, the H200 32); a Volta-like rate keeps 2."""
    by = {s.option: s for s in settings(MEASURED)}
    add, fmax, mul, mad, div = (int(x) for x in by["ptx_opcode_initiation_fp"].value.split(","))
    assert (add, mul, mad) == (1, 1, 1) and (fmax, div) == (2, 4)  # max and div as SM7_QV100
    simulated = by["gpgpu_num_sched_per_core"].value * 32 / mad
    assert simulated == pytest.approx(MEASURED["fma_per_sm_per_cycle"], rel=0.05)
    # a Volta-like rate: 4 schedulers of 16 lanes
    volta = dict(MEASURED, fma_per_sm_per_cycle=62.0, warp_fma_issue_per_sm_per_cycle=62.0 / 32)
    assert {s.option: s for s in settings(volta)}["ptx_opcode_initiation_fp"].value == "2,2,2,2,4"


def test_the_integer_units_take_warps_at_the_rates_measured():
    """PTX integer adds ran at 115 an SM a cycle on the H200 (ptxas spreads them over the ALU and the FMA pipe) and
    mad.lo at 64 (an IMAD: the FMA pipe alone): an add takes a scheduler's integer unit 1 cycle, a mul or mad 2, as on
    Volta; max, div and shfl keep the base's; measurements with no integer rates keep them all."""
    by = {s.option: s for s in settings(MEASURED)}
    add, imax, mul, mad, div, shfl = (int(x) for x in by["ptx_opcode_initiation_int"].value.split(","))
    assert (add, mul, mad) == (1, 2, 2) and (imax, div, shfl) == (2, 8, 4)
    assert 4 * 32 / add == pytest.approx(MEASURED["int_add_per_sm_per_cycle"], rel=0.15)  # an interval is whole
    assert 4 * 32 / mad == pytest.approx(MEASURED["int_mad_per_sm_per_cycle"], rel=0.05)
    slow = dict(MEASURED, int_add_per_sm_per_cycle=60.0, int_mad_per_sm_per_cycle=30.0)
    assert {s.option: s for s in settings(slow)}["ptx_opcode_initiation_int"].value == "2,2,4,4,8,4"
    older = {k: v for k, v in MEASURED.items() if not k.startswith("int_")}
    assert "ptx_opcode_initiation_int" not in {s.option for s in settings(older)}
    assert "integer add, mul and mad where measured" in overlay_text("H200", older)


def test_the_chase_is_one_cycle_through_every_entry():
    step = 256
    chain = _chain(1000, np.random.default_rng(3), stride=4 * step)
    seen, j = set(), 0
    for _ in range(1000):
        seen.add(j)
        j = int(chain[j])
    assert j == 0 and len(seen) == 1000 and all(x % step == 0 for x in seen)


def test_calibrate_from_recorded_measurements(tmp_path):
    proc = simflow("calibrate", "--from", str(CONFIGS / "H200.measured.json"), "-d", str(tmp_path), "--name", "mine")
    assert proc.returncode == 0, proc.stderr
    assert "132 SMs at 1978 MHz" in proc.stdout and "recorded measurements" in proc.stdout
    assert "per SM a cycle 122 FMA, 115 integer adds, 64 mads" in proc.stdout
    assert (tmp_path / "mine.toml").read_text() == overlay_text("mine", MEASURED)
    assert json.loads((tmp_path / "mine.measured.json").read_text()) == MEASURED
    bad = simflow("calibrate", "--from", str(tmp_path / "nope.json"), "-d", str(tmp_path))
    assert bad.returncode == 1 and "cannot read measurements" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here")
def test_calibrate_without_pycuda_says_how_to_get_it(tmp_path):
    proc = simflow("calibrate", "-d", str(tmp_path), env={"SIMFLOW_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 3 and "pip install 'simflow[gpu]'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.gpu
def test_live_calibrate_measures_this_gpu(tmp_path):
    env = {"SIMFLOW_CACHE": str(tmp_path / "cache")}
    first = simflow("calibrate", "-d", str(tmp_path), "--name", "here", env=env)
    assert first.returncode == 0, first.stderr
    m = json.loads((tmp_path / "here.measured.json").read_text())
    assert m["l1_latency_cycles"] < m["l2_latency_cycles"] < m["dram_latency_cycles"]
    assert 0.8 < m["clock_mhz"] / m["clock_mhz_attribute"] < 1.2 and m["l1_bytes"] > 0
    assert 0.5 < m["launch_us"] < m["wave_launch_us"] < 50  # a launch costs microseconds, a full wave more
    # a 4-way conflicting load takes four wavefronts of the shared-memory pipe; ten FMAs a load leave it part idle
    assert 3.5 < m["shared_load_per_sm_per_cycle"] / m["shared_load_4way_per_sm_per_cycle"] < 4.5
    assert m["shared_fma_load_2way_per_sm_per_cycle"] < m["shared_fma_load_per_sm_per_cycle"] < \
        m["shared_load_per_sm_per_cycle"]
    again = simflow("calibrate", "-d", str(tmp_path), "--name", "here", env=env)
    assert "cached measurements" in again.stdout
    cached = next((tmp_path / "cache" / "calibrate").glob("*.json"))
    cached.write_text(json.dumps({**m, "version": 1}))  # what an older simflow measured: measured anew
    third = simflow("calibrate", "-d", str(tmp_path), "--name", "here", env=env)
    assert third.returncode == 0 and "measured in" in third.stdout


def test_a_measured_launch_sets_the_kernel_launch_latency_and_none_keeps_the_base():
    by = {s.option: s for s in settings({**MEASURED, "launch_us": 2.5})}
    assert by["gpgpu_kernel_launch_latency"].value == round(2.5 * MEASURED["clock_mhz"])
    assert by["gpgpu_kernel_launch_latency"].source == "derived"
    old = {k: v for k, v in MEASURED.items() if k not in ("launch_us", "wave_launch_us")}
    assert "gpgpu_kernel_launch_latency" not in {s.option for s in settings(old)}
    assert "the kernel launch latency where the measurements have no launch_us" in overlay_text("H200", old)


def test_an_overlay_written_back_keeps_options_toml_must_quote():
    """Sampled simulation writes the config it runs (first CTAs only) as an overlay: gpgpu_cache:dl2 must be a
    quoted key there, or the probe of a sampled run on this config cannot even start."""
    from simflow.sim.config import overlay_text as written

    config = parse_overlay((CONFIGS / "H200.toml").read_text(), "H200")
    assert parse_overlay(written(config), "H200").options == config.options
    assert '"gpgpu_cache:dl2" = ' in written(config) and "\ngpgpu_n_clusters = " in written(config)


# `simflow calibrate --check`: the same microbenchmarks in GPGPU-Sim. A real run's log (the accel-sim fork at
# 667834cf on gpgpusim_configs/H200.toml, CUDA 11.8; tests/data/README.md) read as the command reads it.
CHECK_LOG = ROOT / "tests" / "data" / "accelsim-fork_h200_calibrate-check.log.gz"
# what the GPU measured when that check ran (2026-11-30): the overlay of these alone is the one it checked
CHECK_MEASURED = json.loads((ROOT / "tests" / "data" / "h200-calibrate-measured-2026-11-30.json").read_text())


def _check_text() -> str:
    import gzip

    return gzip.decompress(CHECK_LOG.read_bytes()).decode()


def test_the_simulated_figures_are_read_beside_the_measured_ones():
    from simflow.calibrate.check import figures

    text = _check_text()
    got = {f.name: f for f in figures(text, MEASURED)}
    assert list(got) == ["l1_latency_cycles", "shared_latency_cycles", "l2_latency_cycles", "dram_latency_cycles",
                         "l2_bandwidth_gbs"]
    printed = dict(re.findall(r"^simflow-calibrate: (\w+) (\S+)$", text, re.M))
    for name in ("l1_latency_cycles", "l2_latency_cycles", "dram_latency_cycles"):
        assert got[name].simulated == float(printed[name]) and got[name].measured == MEASURED[name]
        assert got[name].ratio == pytest.approx(got[name].simulated / MEASURED[name])
    assert got["l2_latency_cycles"].simulated < got["dram_latency_cycles"].simulated  # the DRAM chase met DRAM
    # bandwidth: the extra reads' bytes over the cycles the last launch took past the one-read launch
    cycles = [float(c) for c in re.findall(r"^gpu_sim_cycle = (\d+)", text, re.M)][-2:]
    seconds = (cycles[1] - cycles[0]) / 1977.4e6
    assert got["l2_bandwidth_gbs"].simulated == pytest.approx(float(printed["l2_read_bytes"]) / seconds / 1e9)
    assert figures(text, {})[0].measured is None and figures(text, {})[0].ratio is None  # no measurements: none


def test_a_simulated_calibration_cut_short_says_what_is_missing():
    from simflow.calibrate.check import figures
    from simflow.errors import ToolError

    text = _check_text()
    cut = text[: text.index("simflow-calibrate: l2_latency_cycles")]
    with pytest.raises(ToolError, match=r"did not finish \(no l2_latency_cycles, dram_latency_cycles, l2_read_bytes"):
        figures(cut, MEASURED)


def test_the_simulated_program_times_with_the_clock_the_simulator_has():
    """GPGPU-Sim aborts on %clock64: the program's chases read the 32-bit %clock; the GPU's keep clock64."""
    from simflow.calibrate.check import SIM_TIMER, program_source
    from simflow.resources import templates_dir

    kernels = (templates_dir() / "calibrate.cu").read_text()
    source = program_source()
    assert source.startswith(SIM_TIMER) and kernels in source and "%%clock;" in SIM_TIMER
    assert "#ifndef CAL_TIMER\n#define CAL_TIMER() clock64()" in kernels and "= CAL_TIMER();" in kernels


def test_check_reads_the_measurements_beside_the_config(tmp_path):
    from simflow.calibrate.check import measured_beside
    from simflow.errors import UserError
    from simflow.sim.config import load_config

    assert measured_beside(load_config("H200")) == MEASURED
    assert measured_beside(load_config("SM7_QV100")) == {}
    (tmp_path / "mine.toml").write_text((CONFIGS / "H200.toml").read_text())
    assert measured_beside(load_config(str(tmp_path / "mine.toml"))) == {}
    (tmp_path / "mine.measured.json").write_text("{ cut")
    with pytest.raises(UserError, match="cannot read .*mine.measured.json"):
        measured_beside(load_config(str(tmp_path / "mine.toml")))


@pytest.mark.cuda11
def test_the_simulated_chases_compile_to_the_32_bit_clock(tmp_path):
    from simflow.calibrate.check import program_source
    from simflow.sim.standalone import cuda11_toolkit

    (tmp_path / "program.cu").write_text(program_source())
    cuda11_toolkit().run_nvcc(["-ptx", "-arch=compute_70"], tmp_path / "program.cu", tmp_path / "program.ptx",
                              "build the PTX of calibrate --check")
    ptx = (tmp_path / "program.ptx").read_text()
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", ptx, re.S))
    for name in ("cal_chase", "cal_chase_cg", "cal_chase_shared"):
        assert "%clock;" in bodies[name] and "%clock64" not in bodies[name], name
    assert "%clock64" in bodies["cal_spin"]  # the GPU's SM clock probe, never launched in the simulator


@pytest.mark.cuda11
def test_the_mixed_stream_issues_its_loads_before_the_fmas_that_do_not_wait_on_them(tmp_path):
    """cal_shared_fma's PTX, what the simulator runs, keeps the order written: a step's eight shared loads, eighty
    FMAs, then the eight adds that use the loads (nvcc moves plain C++ adds up to their loads, and each warp would
    then wait on its load in the simulator, which issues PTX in order)."""
    import itertools

    from simflow.calibrate.check import program_source
    from simflow.sim.standalone import cuda11_toolkit

    (tmp_path / "program.cu").write_text(program_source())
    cuda11_toolkit().run_nvcc(["-ptx", "-arch=compute_70"], tmp_path / "program.cu", tmp_path / "program.ptx",
                              "build the PTX of calibrate --check")
    body = dict(re.findall(r"\.entry (\w+)\((.*?)\n}", (tmp_path / "program.ptx").read_text(), re.S))["cal_shared_fma"]
    ops = re.findall(r"^\s+(ld\.volatile\.shared\.u32|fma\.rn\.f32|add\.s32)\s", body, re.M)
    runs = [(op, len(list(group))) for op, group in itertools.groupby(ops[ops.index("ld.volatile.shared.u32"):])]
    step = [("ld.volatile.shared.u32", 8), ("fma.rn.f32", 80), ("add.s32", 8)]
    assert runs[:11] == (step * 4)[:11] and runs[11][0] == "add.s32"  # the last step's adds, then the loop's own


def _as_the_fixture_ran(text: str) -> str:
    """An overlay's text without the operand collector units (calibrate sets them since session 53): the overlay
    of the fixture's measurements alone as its check ran it (options 7a4e6fdc)."""
    return re.sub(r"^# set: [^\n]*\ngpgpu_operand_collector_\w+ = \d+\n", "", text, flags=re.M)


def _recorded_check() -> dict:
    """The fixture's check (the overlay of the measurements alone, options 7a4e6fdc, in the simulator) as
    NAME.check.json keeps it."""
    from simflow.calibrate.check import figures
    from simflow.calibrate.overlay import check_record
    from simflow.sim.config import config_key

    config = parse_overlay(_as_the_fixture_ran(overlay_text("H200", CHECK_MEASURED)), "H200")
    assert config_key(config).startswith("7a4e6fdc")
    simulated = {f.name: f.simulated for f in figures(_check_text(), CHECK_MEASURED)}
    return check_record(config_key(config), dict(config.options), simulated, "2026-12-01", "fixture")


def _simulated_machine(options: dict, own: dict) -> dict:
    """A simulated machine that adds `own` cycles past the options to each chase (the L2 and DRAM chases load past
    L1 and skip its queue, as in GPGPU-Sim) and delivers own['share'] of the L2 bandwidth its clock gives."""
    l1, rop, dram = options["gpgpu_l1_latency"], options["gpgpu_l2_rop_latency"], options["dram_latency"]
    l2_mhz = float(options["gpgpu_clock_domains"].split(":")[2])
    return {"l1_latency_cycles": l1 + own["l1"], "shared_latency_cycles": options["gpgpu_smem_latency"] + own["shared"],
            "l2_latency_cycles": rop + own["l2"], "dram_latency_cycles": rop + dram + own["dram"],
            "l2_bandwidth_gbs": own["share"] * 64 * 32 * l2_mhz / 1e3}


def test_a_check_folded_in_sets_each_latency_less_what_the_simulated_chase_adds():
    """The recorded check: the simulated L1 chase took 62 cycles with 40 set (22 of its own), shared 49 with 29, and
    the L2 read gave 0.656 of what 64 slices x 32 B at 2847 MHz allow: the folded overlay sets 18 and 9 and raises
    the interconnect and L2 clock by 1 / 0.656."""
    from simflow.calibrate.overlay import fold

    check = _recorded_check()
    f = fold(check)
    assert f.l1 == pytest.approx(22.0) and f.shared == pytest.approx(20.02)
    assert f.l2_share == pytest.approx(0.6556, rel=1e-3)
    by = {s.option: s for s in settings(CHECK_MEASURED, check)}
    assert by["gpgpu_l1_latency"].value == 18 and by["gpgpu_smem_latency"].value == 9
    # the L2 chase took 276.2 with 247 set (29.2 of its own), the DRAM chase 549.9 with 247 + 258 (44.9)
    assert by["gpgpu_l2_rop_latency"].value == 258 and by["dram_latency"].value == round(545.4 - 44.85) - 258
    core, icnt, l2, dram = (float(x) for x in by["gpgpu_clock_domains"].value.split(":"))
    assert icnt == l2 == pytest.approx(2847.0 / f.l2_share, abs=0.1) and core == pytest.approx(1977.4)
    assert all(by[o].source == "derived" for o in ("gpgpu_l1_latency", "gpgpu_smem_latency", "dram_latency"))
    assert "simulated chase's own +22.0" in by["gpgpu_l1_latency"].how and "7a4e6fdc" in by["gpgpu_clock_domains"].how
    text = overlay_text("H200", CHECK_MEASURED, check)
    assert "# Folded in: `calibrate --check` of options 7a4e6fdc, 2026-12-01 (H200.check.json)" in text
    assert parse_overlay(text, "H200").options["gpgpu_l1_latency"] == "18"


@pytest.mark.parametrize("own", [{"l1": 22.0, "shared": 20.0, "l2": 29.2, "dram": 44.9, "share": 0.656},
                                 {"l1": 5.0, "shared": 3.0, "l2": 30.0, "dram": -12.0, "share": 1.0}])
def test_a_machine_whose_own_cycles_stay_put_shows_the_measured_figures_once_folded(own):
    """Fold a check of a machine that adds fixed cycles of its own to each chase: the folded overlay, run on the same
    machine, gives every figure measured (to the rounding of the integer options), whatever the overlay checked."""
    from simflow.calibrate.overlay import check_record

    first = {s.option: s.value for s in settings(CHECK_MEASURED)}
    check = check_record("0" * 16, first, _simulated_machine(first, own), "2026-12-01", "model")
    folded = {s.option: s.value for s in settings(CHECK_MEASURED, check)}
    shown = _simulated_machine(folded, own)
    for name in ("l1_latency_cycles", "shared_latency_cycles", "l2_latency_cycles", "dram_latency_cycles"):
        assert shown[name] == pytest.approx(CHECK_MEASURED[name], abs=1.5), name
    assert shown["l2_bandwidth_gbs"] == pytest.approx(CHECK_MEASURED["l2_bandwidth_gbs"], rel=1e-4)
    # folding a check of the folded overlay changes nothing: the fold is a fixed point on such a machine
    again = check_record("1" * 16, folded, shown, "2026-12-01", "model")
    assert {s.option: s.value for s in settings(CHECK_MEASURED, again)} == folded


def test_fold_into_keeps_the_check_and_writes_the_overlay_again(tmp_path):
    from simflow.calibrate.check import Check, figures, fold_into
    from simflow.errors import UserError
    from simflow.sim.config import load_config

    (tmp_path / "mine.toml").write_text(_as_the_fixture_ran(overlay_text("mine", CHECK_MEASURED)))  # 7a4e6fdc
    found = Check("mine", figures(_check_text(), CHECK_MEASURED), tmp_path / "sim.log", "build")
    config = load_config(str(tmp_path / "mine.toml"))
    with pytest.raises(UserError, match="has none beside it .*--from NAME.measured.json"):
        fold_into(config, found, {})
    with pytest.raises(UserError, match="SM7_QV100.toml: the config sets no gpgpu_l1_latency"):
        fold_into(load_config("SM7_QV100"), found, CHECK_MEASURED)  # a tested config: never written by calibrate
    done = fold_into(config, found, CHECK_MEASURED)
    assert done.folded == (tmp_path / "mine.check.json", tmp_path / "mine.toml")
    kept = json.loads((tmp_path / "mine.check.json").read_text())
    assert kept["options"]["gpgpu_l1_latency"] == 40 and kept["simulated"]["l1_latency_cycles"] == 62.0
    assert kept["simulator"] == "build" and kept["options_key"].startswith("7a4e6fdc")
    assert (tmp_path / "mine.toml").read_text() == overlay_text("mine", CHECK_MEASURED, kept)
    assert json.loads((tmp_path / "mine.measured.json").read_text()) == CHECK_MEASURED
    # an overlay that sets no latency (not one calibrate made) is refused, the option named
    (tmp_path / "other.toml").write_text('base = "SM7_QV100"\n[options]\ngpgpu_n_clusters = 8\n')
    with pytest.raises(UserError, match="sets no gpgpu_l1_latency.*only an overlay `simflow calibrate` wrote"):
        fold_into(load_config(str(tmp_path / "other.toml")), found, CHECK_MEASURED)


def test_calibrate_folds_in_the_check_beside_the_overlay(tmp_path):
    check = _recorded_check()
    (tmp_path / "mine.check.json").write_text(json.dumps(check))
    proc = simflow("calibrate", "--from", str(ROOT / "tests" / "data" / "h200-calibrate-measured-2026-11-30.json"),
                   "-d", str(tmp_path), "--name", "mine")
    assert proc.returncode == 0, proc.stderr
    assert "folded in: mine.check.json" in proc.stdout
    assert (tmp_path / "mine.toml").read_text() == overlay_text("mine", CHECK_MEASURED, check)
    bad = simflow("calibrate", "--fold")
    assert bad.returncode == 1 and "give --check CONFIG with it" in bad.stderr


KEPT_CHECKS = ROOT / "benchmarks" / "results" / "calibrate-check-h200-2026-12-01"
SHARED = ROOT / "benchmarks" / "results" / "calibrate-shared-h200-2026-12-01"
BASE_UNITS_CHECK = SHARED / "check.log.gz"  # options 2e177337, the base's 8 operand collector units (session 51)
COMMITTED_CHECK = ROOT / "benchmarks" / "results" / "calibrate-collectors-h200-2026-12-01" / "check.log.gz"
INT_CHECK = ROOT / "benchmarks" / "results" / "calibrate-int-h200-2026-12-01" / "check.log.gz"  # session 50's
SHARED_FIGURES = ("shared_load_per_sm_per_cycle", "shared_load_4way_per_sm_per_cycle",
                  "shared_fma_load_per_sm_per_cycle", "shared_fma_load_2way_per_sm_per_cycle")
# the shared-memory figures were first measured on 2026-12-01 (measurement version 4), after H200.measured.json
SHARED_MEASURED = {k: v for k, v in json.loads((SHARED / "measured-run1.json").read_text()).items()
                   if k in SHARED_FIGURES}


def _kept(path) -> str:
    import gzip

    return gzip.decompress(path.read_bytes()).decode()


def test_the_check_folded_into_the_committed_overlay_is_the_one_kept():
    """H200.check.json is the kept check of the overlay folded once (session 49): its options and figures."""
    from simflow.calibrate.check import figures
    from simflow.sim.log import parse_text

    text = _kept(KEPT_CHECKS / "check-folded-once.log.gz")
    assert {f.name: round(f.simulated, 2) for f in figures(text, {})} == CHECKED["simulated"]
    ran = parse_text(text).options
    assert all(str(v) == ran[k] for k, v in CHECKED["options"].items())


def test_the_committed_overlay_shows_in_the_simulator_what_the_gpu_measured():
    """The kept check of the committed H200.toml (2026-12-01, session 53, its options read back from the log):
    latencies, L2 bandwidth, the FMA and PTX integer rates and the shared-memory loads, alone and among FMAs, within
    3 % of the GPU's."""
    from simflow.calibrate.check import figures
    from simflow.sim.log import parse_text

    text = _kept(COMMITTED_CHECK)
    found = {f.name: f for f in figures(text, {**MEASURED, **SHARED_MEASURED})}
    ran = parse_text(text).options
    committed = parse_overlay((CONFIGS / "H200.toml").read_text(), "H200").options
    for option, value in committed.items():
        if option != "gpgpu_cache:dl2":  # the log echoes it under another key
            assert ran[option] == value, option
    assert list(found)[-7:] == ["fma_per_sm_per_cycle", "int_add_per_sm_per_cycle", "int_mad_per_sm_per_cycle",
                                *SHARED_FIGURES]
    assert all(f.ratio == pytest.approx(1, abs=0.03) for f in found.values()), {k: f.ratio for k, f in found.items()}


def test_with_the_base_operand_collector_units_a_conflicting_load_held_up_the_fmas():
    """Session 51's check of the overlay before the collector units (options 2e177337, the base's 8): among FMAs the
    simulated SM gave 0.95 of the GPU's loads without conflicts and 0.82 with 2-way conflicts (a waiting load held
    the units the FMAs behind it needed), every other figure as now; the committed overlay's 64 units (session 53)
    take both to 1.00."""
    from simflow.calibrate.check import figures
    from simflow.sim.log import parse_text

    text = _kept(BASE_UNITS_CHECK)
    ran = parse_text(text).options
    assert ran["gpgpu_operand_collector_num_units_gen"] == "8"
    assert parse_overlay((CONFIGS / "H200.toml").read_text(), "H200").options[
        "gpgpu_operand_collector_num_units_gen"] == "64"
    found = {f.name: f for f in figures(text, {**MEASURED, **SHARED_MEASURED})}
    add = found.pop("int_add_per_sm_per_cycle")
    assert add.ratio == pytest.approx(4 * 32 / MEASURED["int_add_per_sm_per_cycle"], rel=0.05) and add.ratio < 1.08
    among = found.pop("shared_fma_load_per_sm_per_cycle")
    assert 0.93 < among.ratio < 0.97  # conflict-free among FMAs: 0.95
    conflicting = found.pop("shared_fma_load_2way_per_sm_per_cycle")
    assert 0.75 < conflicting.ratio < 0.88  # 2-way among FMAs: 0.82
    assert all(f.ratio == pytest.approx(1, abs=0.03) for f in found.values()), {k: f.ratio for k, f in found.items()}


def test_the_simulated_rates_are_the_streams_extra_operations_over_their_extra_cycles():
    from simflow.calibrate.check import figures
    from simflow.errors import ToolError

    text = _kept(COMMITTED_CHECK)
    got = {f.name: f for f in figures(text, MEASURED)}
    ops = float(re.search(r"^simflow-calibrate: stream_ops (\d+)$", text, re.M).group(1))
    assert ops == 1024 * 128 * 8  # one block of 1,024 threads, 8 passes more of 128 operations
    loads = float(re.search(r"^simflow-calibrate: mix_loads (\d+)$", text, re.M).group(1))
    assert loads == 1024 * 32 * 8  # the mixed stream: 32 loads a pass
    cycles = [int(c) for c in re.findall(r"^gpu_sim_cycle = (\d+)", text, re.M)]
    # the program's first fourteen launches, two a stream (the shared-memory ones at two conflict degrees)
    for i, (name, n) in enumerate((("fma", ops), ("int_add", ops), ("int_mad", ops), ("shared_load", ops),
                                   ("shared_load_4way", ops), ("shared_fma_load", loads),
                                   ("shared_fma_load_2way", loads))):
        assert got[f"{name}_per_sm_per_cycle"].simulated == pytest.approx(n / (cycles[2 * i + 1] - cycles[2 * i]))
    assert got["int_add_per_sm_per_cycle"].unit == "per SM a cycle"
    cut = text.replace("kernel_name = cal_int_mad", "kernel_name = cal_int_mad_cut", 1)  # its first launch lost
    with pytest.raises(ToolError, match=r"did not finish \(1 complete cal_int_mad launches of 2\)"):
        figures(cut, MEASURED)
    cut = text.replace("kernel_name = cal_shared_fma", "kernel_name = cal_shared_fma_cut", 1)
    with pytest.raises(ToolError, match=r"did not finish \(3 complete cal_shared_fma launches of 4\)"):
        figures(cut, MEASURED)
    earlier = _kept(INT_CHECK)  # session 50's program: the FMA and integer streams, no shared-memory ones
    assert [f.name for f in figures(earlier, {})][-1] == "int_mad_per_sm_per_cycle"
    earlier = _kept(KEPT_CHECKS / "check-folded-once.log.gz")  # session 49's program: no streams, no rates
    assert [f.name for f in figures(earlier, {})][-1] == "l2_bandwidth_gbs"
