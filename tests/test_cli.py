"""The command line as a user meets it: output, exit codes, and clear errors without tracebacks."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, simflow

from simflow.cli import main
from simflow.kernels.problems import get_problem
from simflow.kernels.variants import VARIANTS
from simflow.registry import backend_class


def test_variants_json(capsys):
    assert main(["variants", "--json"]) == 0
    data = {v["variant"]: v for v in json.loads(capsys.readouterr().out)}
    import tomllib

    declared = tomllib.loads((ROOT / "cuda_templates" / "variants.toml").read_text())["variants"]
    assert set(data) == set(declared) and len(data) >= 19  # every variant the table declares, none it does not
    tile = next(p for p in data["shared"]["params"] if p["name"] == "tile")
    assert tile == {"name": "tile", "choices": ["8", "16", "32"], "default": "16", "help": tile["help"], "host": False}
    streams = next(p for p in data["shared"]["params"] if p["name"] == "streams")
    assert streams["host"] and streams["default"] == "0"


def test_render_to_stdout_and_file(tmp_path, capsys):
    assert main(["render", "shared", "--param", "tile=8", "--param", "pad_row=on", "--problem", "fmnist-conv2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("// simflow kernel: variant shared\n// parameters: tile=8, pad_row=on")
    assert "C = 4, M = 16, H = 40, W = 40, K = 7" in out
    target = tmp_path / "k.cu"
    assert main(["render", "global", "--shape", "2,3,4,10,10,3,1", "-o", str(target)]) == 0
    assert "pad=1" in target.read_text()


@pytest.mark.parametrize("args,words", [
    (["render", "tiled"], "unknown variant 'tiled'; valid variants: global, constant, shared"),
    (["render", "global", "--param", "tile=12"], "tile takes one of 8, 16, 32, got 12"),
    (["render", "global", "--param", "colour=red"], "valid parameters: tile, unroll, restrict"),
    (["render", "global", "--problem", "mnist"], "presets: fmnist-conv1"),
    (["render", "global", "--shape", "1,1,1,4,4,9"], "filter K=9 is larger than the padded input"),
    (["render", "constant", "--problem", "toycnn"], "constant memory: needs 6,553,600 bytes"),
])
def test_user_errors_exit_1_without_traceback(args, words):
    proc = simflow(*args)
    assert proc.returncode == 1
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(backend_class("gpu").probe().available, reason="a GPU is present")
def test_run_without_gpu_says_how_to_get_one():
    proc = simflow("run", "global", "--problem", "batch3x3")
    assert proc.returncode == 3  # an external tool missing, as --help says
    assert "Traceback" not in proc.stderr
    assert "simflow cannot run on a GPU here" in proc.stderr
    assert "pycuda" in proc.stderr.lower()


def test_doctor_reports_each_component():
    proc = simflow("doctor", "--json")
    assert proc.returncode == 0
    found = {f["component"]: f for f in json.loads(proc.stdout)}
    assert "GPU (PyCUDA)" in found and "GPGPU-Sim" in found and "docker" in found
    assert "CUDA 11.x (for GPGPU-Sim)" in found and "log parser" in found
    for f in found.values():
        assert f["found"] or f["how_to_get"], f


def test_doctor_says_where_it_looked_for_the_simulator(tmp_path):
    """A GPGPUSIM_ROOT that names no build is reported, with every place simflow looks (a usual place is not
    used instead of the one named)."""
    proc = simflow("doctor", "--json", "--no-probe", env={"GPGPUSIM_ROOT": str(tmp_path / "none"),
                                                          "XDG_CONFIG_HOME": str(tmp_path)})
    findings = {f["component"]: f for f in json.loads(proc.stdout)}
    sim, search = findings["GPGPU-Sim"], findings["GPGPU-Sim search"]
    assert not sim["found"] and "(from GPGPUSIM_ROOT) cannot be used: no such folder" in sim["detail"]
    assert f"GPGPUSIM_ROOT={tmp_path / 'none'}: no such folder" in search["detail"]
    assert f"{tmp_path}/simflow/config.toml: no such file" in search["detail"] and "usual place=/opt/gpgpu-sim" in \
        search["detail"] and "used: " not in search["detail"]


@pytest.fixture(scope="module")
def compile_cache(tmp_path_factory):
    """One compile cache for the check tests: the second check compiles nothing again."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.nvcc
def test_check_is_the_main_job(compile_cache):
    proc = simflow("check", "--json", env={"SIMFLOW_CACHE": str(compile_cache)}, timeout=900)  # each variant, nvcc
    report = json.loads(proc.stdout)
    ran = [name for name, b in report["backends"].items() if b["available"] and name != "gpu-ncu"]
    assert proc.returncode == (0 if ran else 3), proc.stderr  # 3: no backend could run them
    rows = {r["variant"]: r for r in report["variants"]}
    assert set(rows) == set(VARIANTS)
    # batch3x3 has 4 output channels: WMMA (fragments of 16) refuses it, naming the limit
    for name in ("wmma", "wmma_nhwc"):
        assert rows.pop(name)["render"].startswith("refused: output channels M for WMMA fragments")
    assert rows.pop("wgmma_nchw")["render"].startswith("refused: layers wgmma_nchw takes")  # 1x1 layers only
    for name in ("wgmma_nhwc", "wgmma_halo"):
        for col, text in rows.pop(name).items():  # sm_90a: CUDA 12 and newer only
            if col.startswith("nvcc 11."):
                assert text.startswith("skipped: CUDA 11.")
            elif col.startswith("nvcc "):
                assert text.startswith("ok,")
    for row in rows.values():
        compiled = [v for k, v in row.items() if k.startswith("nvcc ")]
        assert compiled and all(v.startswith("ok,") for v in compiled)
    assert "gpu" in report["backends"]
    if not report["backends"]["gpu"]["available"]:
        assert report["backends"]["gpu"]["how_to_get"]


@pytest.mark.nvcc
def test_check_says_each_result_once_within_the_terminal(compile_cache, tmp_path):
    proc = simflow("check", "--results", str(tmp_path), env={"SIMFLOW_CACHE": str(compile_cache), "COLUMNS": "120"},
                   timeout=900)
    lines = proc.stdout.splitlines()
    assert max(map(len, lines)) <= 120, max(lines, key=len)
    rows = [line.split()[0] for line in lines if line and line.split()[0] in VARIANTS]
    assert sorted(rows) == sorted(VARIANTS)  # each variant once: no summary table repeats the rows
    assert "not rendered for this problem [1]" in proc.stdout and "[1] refused: output channels M" in proc.stdout
    assert " 34.0 " not in proc.stdout and "render" not in lines[1]
    assert lines[-1].startswith(f"{len(VARIANTS)} variants rendered and compiled")
    assert proc.returncode in (0, 3) and ("no backend could run them" in lines[-1]) == (proc.returncode == 3)


def test_the_check_table_fits_any_width_and_says_long_results_once():
    from simflow.run.check import CheckReport
    from simflow.terminal import CheckTable

    report = CheckReport(get_problem("batch3x3"), columns=["nvcc 13.0 sm_90", "nvcc 11.8 sm_90", "gpgpusim"],
                         backends={"gpgpusim": {"available": True, "detail": "at /opt", "how_to_get": ""},
                                   "gpu": {"available": False, "detail": "no PyCUDA", "how_to_get": "x " * 300}})
    why = "refused (GPGPU-Sim runs sm_70 code, and this kernel needs ldmatrix and mma.sync with fp16 inputs) " * 2
    for limit in (60, 80, 120, 200):
        out: list[str] = []
        report.rows = []
        printer = CheckTable(out.append, limit)
        printer(report, None)
        for variant in ("global", "mma_nhwc", "mma_nchw"):
            row = {"variant": variant, "lines": 34, "nvcc 13.0 sm_90": "ok, 28 regs, 0 B spilled",
                   "nvcc 11.8 sm_90": "ok, 25 regs, 0 B spilled", "gpgpusim": why if "mma" in variant else
                   "passed, 6693 cycles, IPC 111.1"}
            report.rows.append(row)
            printer(report, row)
        text = "\n".join(out) + "\n" + printer.summary(report)
        assert max(map(len, text.splitlines())) <= limit, (limit, text)
        number = re.search(r"\[(\d+)\] refused \(GPGPU-Sim", text).group(1)  # the refusal, said once as a note
        assert "\n".join(out).count(f"[{number}]") == 2 and text.count(f"[{number}] refused (GPGPU-Sim") == 1
        assert "0 B spilled" not in text and "how to get it: x x" in text


@pytest.mark.gpu
def test_check_runs_on_the_gpu(tmp_path):
    proc = simflow("check", "--json", env={"SIMFLOW_CACHE": str(tmp_path)})
    rows = json.loads(proc.stdout)["variants"]
    rendered = [r for r in rows if not r.get("render", "").startswith("refused")]  # wmma, wgmma_nchw refuse batch3x3
    assert rendered and all(r["gpu"].startswith("passed") for r in rendered)
    assert all("refused: " in r["render"] for r in rows if r not in rendered)


def test_variants_json_says_what_the_simulator_accepts(capsys):
    assert main(["variants", "--json"]) == 0
    data = {v["variant"]: v["backends"] for v in json.loads(capsys.readouterr().out)}
    assert data["shared"]["gpgpusim"]["accepts_defaults"] and data["shared"]["gpu"]["accepts_defaults"]
    # fp16 WMMA: whether a build runs it is its probe's answer, named here
    assert data["wmma"]["gpgpusim"]["needs_wmma_forms"] == ["wmma_m16n16k16_row_row_f32_shared"]
    assert ("precision", "tf32") in {(r["param"], r["value"]) for r in data["wmma"]["gpgpusim"]["refuses"]}
    assert not data["mma_nhwc"]["gpgpusim"]["accepts_defaults"] and "mma.sync" in data["mma_nhwc"]["gpgpusim"]["reason"]
    refused = {(r["param"], r["value"]) for r in data["implicit_gemm"]["gpgpusim"]["refuses"]}
    assert ("precision", "fp16") in refused and ("streams", "2") in refused


def test_a_negative_shape_is_refused_by_name():
    proc = simflow("render", "global", "--shape", "-4,3,8,10,10,3")
    assert proc.returncode == 1 and "B must be a positive integer, got -4" in proc.stderr
    assert "expected one argument" not in proc.stderr


# a missing image where an engine answers; where none does (or no client), that is said instead: either way
# before anything is said to simulate
@pytest.mark.parametrize("option,said", [
    ("--config", ("unknown simulator config 'NOSUCH'",)),
    ("--docker", ("no image 'NOSUCH'", "engine is not running", "needs the docker command")),
])
def test_mistakes_are_refused_before_anything_is_said_to_run(tmp_path, option, said):
    proc = simflow("sim", "global", "--problem", "batch3x3", option, "NOSUCH", "--results", str(tmp_path),
                   env={"SIMFLOW_ENGINE": "docker"})
    assert proc.returncode == 1 and any(text in proc.stderr for text in said), proc.stderr
    assert "simulating" not in proc.stderr and "simflow: running" not in proc.stderr and "Traceback" not in proc.stderr


def test_parse_keeps_its_exit_status_when_the_reader_goes_away():
    """`simflow parse ABORTED_LOG | head -1` still exits 2: the log did not complete."""
    aborted = ROOT / "tests" / "data" / "gpgpusim-dev_bad-config_assert-abort.log.gz"
    many = [str(ROOT / "examples" / "accelsim-fork_qv100_batch3x3_global.log.gz")] * 30  # more than a pipe holds
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m simflow parse {aborted} {' '.join(many)} | head -1; "
                                         "echo status=${PIPESTATUS[0]}"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.stdout.strip().endswith("status=2") and "Traceback" not in proc.stderr, proc.stdout + proc.stderr


LOG = ROOT / "tests" / "data" / "gpgpusim-dev_qv100_global-then-shared.log.gz"


def test_parse_reads_standard_input_and_writes_standard_output():
    proc = subprocess.run(f"zcat {LOG} | {sys.executable} -m simflow parse - --format csv -o -", shell=True,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("launch_uid,kernel,complete") and len(lines) == 3 and "34.0" not in proc.stdout
    older = simflow("parse", str(LOG), "--csv", "-")  # the older spelling: standard output too, never a file '-'
    assert older.returncode == 0 and older.stdout == proc.stdout
    assert not (ROOT / "-").exists() and not Path("-").exists()


@pytest.mark.parametrize("command", [["variants"], ["problems"], ["parse", str(LOG)], ["parse", "--catalogue"],
                                     ["doctor", "--no-probe"]])
def test_one_output_option_for_every_table(command, tmp_path):
    """--json is --format json; markdown and csv carry the same rows; -o FILE holds what stdout would."""
    as_json = simflow(*command, "--json")
    assert json.loads(as_json.stdout) == json.loads(simflow(*command, "--format", "json").stdout)
    assert simflow(*command, "-f", "markdown").stdout.count("\n| ") >= 2
    assert simflow(*command, "-f", "csv", "-o", str(tmp_path / "out.csv")).stdout == ""
    assert (tmp_path / "out.csv").read_text() == simflow(*command, "-f", "csv").stdout


def test_a_table_fits_the_terminal_and_names_what_it_left_out(tmp_path):
    wide = simflow("parse", str(LOG), "--all")
    assert max(map(len, wide.stdout.splitlines())) > 80  # a pipe: every column, as it is
    fits = simflow("parse", str(LOG), "--all", env={"COLUMNS": "80"})  # demangled, both kernels fit in 80
    assert max(map(len, fits.stdout.splitlines())) <= 80 and "left out" not in fits.stdout
    assert "conv2d_global#1" in fits.stdout and "conv2d_shared#2" in fits.stdout and "_Z13" not in fits.stdout
    narrow = simflow("parse", str(LOG), "--all", env={"COLUMNS": "60"})
    lines = narrow.stdout.splitlines()
    assert max(map(len, lines)) <= 60 and "left out to fit 60 characters" in narrow.stdout
    assert "conv2d_global#1" in narrow.stdout  # the first column stays
    saved = tmp_path / "table.txt"  # -o FILE keeps every column, whatever the terminal's width
    assert simflow("parse", str(LOG), "--all", "-o", str(saved), env={"COLUMNS": "80"}).returncode == 0
    assert saved.read_text() == wide.stdout and "left out" not in saved.read_text()


def test_every_help_has_examples_exit_codes_and_words_for_each_option():
    import argparse
    import shlex

    from simflow.cli import EXAMPLES, build_parser

    parser = build_parser()
    assert "quick starts:" in parser.format_help() and "exit status: 0" in parser.format_help()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(EXAMPLES)
    for name, command in sub.choices.items():
        text = command.format_help()
        assert "examples:" in text and "exit status: 0" in text, name
        assert "Each subcommand is a function" not in text
        silent = [a.option_strings or a.dest for a in command._actions if not a.help]
        assert not silent, (name, silent)
        for example in EXAMPLES[name]:  # each example is a command simflow takes as written
            words = shlex.split(example.split("| ")[-1])
            assert words[0] == "simflow" and words[1] == name, example
            parser.parse_args(words[1:])
