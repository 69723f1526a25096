"""What the terminal shows first (issue 56): columns kept by priority, kernel names demangled (raw in JSON),
diff sorted by significance with a summary line and colour only on a terminal, ratios to 4 significant
digits with units in the headers. Real logs: simflow's kernels (examples/, tests/data)."""

import json
from pathlib import Path

import pytest
from conftest import ROOT, simflow
from runs import gpu_record, sim_record

from simflow import settings, terminal
from simflow.results.store import Store
from simflow.tables import demangle, table

DATA = Path(__file__).parent / "data"
TWO = DATA / "gpgpusim-dev_qv100_global-then-shared.log.gz"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    folder = tmp_path_factory.mktemp("terminal")
    with Store(folder) as store:
        for variant in ("global", "shared"):
            store.add(sim_record(folder, variant))
    return {"SIMFLOW_RESULTS": str(folder)}


def test_kernel_names_are_demangled_for_a_person_and_kept_raw_in_json():
    assert demangle("_Z13conv2d_globalPKfS0_Pfiiii") == "conv2d_global"
    assert demangle("_ZN5outer5innerEPf") == "outer::inner" and demangle("conv2d_shared") == "conv2d_shared"
    assert demangle("_Z") == "_Z" and demangle("_Z99short") == "_Z99short"  # not a name it can read: as it is
    narrow = simflow("parse", str(TWO), env={"COLUMNS": "80"})
    assert "conv2d_global#1" in narrow.stdout and "conv2d_shared#2" in narrow.stdout  # both kernels at 80
    assert max(map(len, narrow.stdout.splitlines())) <= 80
    raw = json.loads(simflow("parse", str(TWO), "--json").stdout)
    assert [k["kernel"] for k in raw["per_kernel"]] == ["_Z13conv2d_globalPKfS0_Pfiiii",
                                                        "_Z13conv2d_sharedPKfS0_Pfiiii"]


def test_show_of_a_two_kernel_run_shows_every_kernel_at_80_columns(tmp_path):
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    assert simflow("import-log", str(TWO), "-l", "problem=N4K4", env=env).returncode == 0
    shown = simflow("show", "problem=N4K4", env={**env, "COLUMNS": "80"})
    assert shown.returncode == 0 and "conv2d_global" in shown.stdout and "conv2d_shared" in shown.stdout


def test_a_narrow_terminal_keeps_a_runs_value_and_unit_before_its_kernels(monkeypatch):
    """A several-kernel GPU run records its kernels' registers before its time: the whole's column still comes
    first, and a narrow terminal leaves out kernels' columns (named), never the value or its unit."""
    result = gpu_record("20261130-000000-implicit_gemm_async-abcdef", "implicit_gemm_async", 0.025, {"split": 2})
    names = result.kernels
    assert len(names) == 3
    metrics = {f"{k}.registers": 40 for k in names} | result.metrics | {f"{k}.time_ms": 0.005 for k in names}
    result.metrics.clear()
    result.metrics.update(metrics)
    result.units.update({f"{k}.time_ms": "ms" for k in names})
    monkeypatch.setenv("COLUMNS", "60")
    settings.reset()
    text = terminal.metrics_table(result, ("time_ms", "registers"))
    head, row = text.splitlines()[0].split(), text.splitlines()[2].split()
    assert head[:2] == ["metric", "value"] and "unit" in head and row[:2] == ["time_ms", "0.025"] and "ms" in row
    assert "left out to fit 60 characters" in text and names[-1] in text.split("left out")[1].replace("\n", " ")


def test_columns_are_kept_by_priority_not_greedily():
    rows = [{"id": "20261129-000000-global-abcdef", "params": "tile=16,unroll=none,restrict=off" * 2,
             "status": "passed", "figure": "6693 gpu_sim_cycle"}]
    greedy = table(rows, limit=70)
    ranked = table(rows, limit=70, priority=("status", "figure"))
    assert "figure" not in greedy.splitlines()[0] and "params" in greedy.splitlines()[0]
    head = ranked.splitlines()[0]
    assert "params" not in head and head.index("status") < head.index("figure")
    long_id = [{"id": "20261129-072509-accelsim-fork_qv100_batch3x3_global-08da59", "x": "y"}]
    assert long_id[0]["id"] in table(long_id, limit=40)  # an id is never broken over lines


def test_runs_keeps_status_and_figure(stored):
    proc = simflow("runs", env={**stored, "COLUMNS": "100"})
    head = proc.stdout.splitlines()[0]
    assert "id" in head and "status" in head and "figure" in head


def test_diff_puts_the_regressions_first_and_ends_with_a_summary(stored):
    proc = simflow("diff", "variant=global", "variant=shared", env={**stored, "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("metric"))  # under the title, however wrapped
    body = [line for line in lines[top + 2:-1] if line.strip() and not line.startswith("(")]
    marks = [line.split()[-1] for line in body if line.split()[-1] in terminal.MARK_ORDER]
    assert marks[0] == "same" and body[0].startswith("status")  # the status row first
    assert marks[1:] == sorted(marks[1:], key=terminal.MARK_ORDER.get)  # worse, better, changed, ..., same
    assert body[1].startswith("gpgpu_n_shmem_bkconflict")  # 0 -> 1152: the largest change, from a zero
    head = lines[top]
    assert all(c in head for c in ("mark", "change_%", "delta")) and "\x1b[" not in proc.stdout  # piped: no colour
    assert lines[-1].startswith("15 worse, 6 better past 2 %")


def test_diff_colours_only_on_a_terminal_and_never_with_no_color(stored, monkeypatch):
    import sys

    import simflow.api as sf

    frame = sf.diff("variant=global", "variant=shared", results=stored["SIMFLOW_RESULTS"])
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    settings.use(settings.Settings())  # a terminal, not writing to a file, NO_COLOR not set
    assert "\x1b[31mworse\x1b[0m" in terminal.diff_text(frame, "t", 0.02)
    settings.use(settings.Settings.from_environment({"NO_COLOR": "1"}))
    assert "\x1b[" not in terminal.diff_text(frame, "t", 0.02)


def test_compare_ratios_have_four_significant_digits_and_units(stored):
    proc = simflow("compare", "--metrics", "gpu_sim_cycle,gpu_ipc", env={**stored, "COLUMNS": "200"})
    head, _, *rows = proc.stdout.splitlines()[1:]
    assert "gpu_sim_cycle (cycles)" in head and "gpu_ipc (thread insn/cycle)" in head
    assert "0.9197" in proc.stdout and "0.919747" not in proc.stdout


def test_problems_shows_a_small_layers_flops():
    rows = json.loads(simflow("problems", "--json").stdout)
    assert next(r for r in rows if r["preset"] == "batch3x3")["GFLOP"] == pytest.approx(7.373e-05)


def test_readme_quick_start_one_runs_with_its_labels():
    readme = (ROOT / "README.md").read_text()
    assert "simflow import-log -l problem=batch3x3 examples/" in readme


@pytest.mark.parametrize("argv", [["variants"], ["doctor", "--no-probe"], ["--help"], ["run", "--help"],
                                  ["compare", "--help"], ["calibrate", "--help"]])
def test_prose_wraps_to_the_terminal_at_word_boundaries(argv):
    proc = simflow(*argv, env={"COLUMNS": "80"})
    assert proc.returncode in (0, 3), proc.stderr
    lines = proc.stdout.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    words = {w for line in simflow(*argv).stdout.split() for w in [line]}  # every word whole, wrapped or not
    assert {w for w in proc.stdout.split()} <= words | {"how", "to", "get", "it:"}


def test_doctor_says_each_finding_once():
    from simflow.backends.base import Finding

    text = terminal.findings_text([
        Finding("GPU (PyCUDA)", False, "PyCUDA is not importable", "install PyCUDA: pip install 'simflow[gpu]'"),
        Finding("Nsight Compute", False, "PyCUDA is not importable", "install PyCUDA: pip install 'simflow[gpu]'"),
        Finding("GPGPU-Sim", False, "not found.", "build it; GPGPU-Sim needs a CUDA 11.x toolkit."),
        Finding("CUDA 11", False, "none found", "GPGPU-Sim needs a CUDA 11.x toolkit."),
    ])
    assert text.count("pip install") == 1 and text.count("needs a CUDA 11.x toolkit") == 1
    assert "Nsight Compute: (as for GPU (PyCUDA))" in text and "(as for GPGPU-Sim)" in text
    doctor = simflow("doctor", "--no-probe").stdout
    assert doctor.count("pip install 'simflow[gpu]'") <= 1 and "[--] pycuda:" not in doctor


@pytest.mark.chromium
@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_compare_html_is_a_styled_page_that_never_scrolls_sideways(stored, tmp_path, width):
    from browser import measure

    page = tmp_path / "compare.html"
    proc = simflow("compare", "-f", "html", "-o", str(page), env=stored)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    assert "<style>" in text and 'class="table-wrap"' in text and "td.worse" in text  # the report's styles
    seen = measure(page, width)
    assert seen["scrollWidth"] <= seen["width"]  # a wide table scrolls in its box, the page does not


def test_a_sampled_runs_probe_and_samples_are_its_parts_not_runs(tmp_path):
    import dataclasses

    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    with Store(tmp_path) as store:
        probe, sample = (store.add(sim_record(tmp_path, "global")) for _ in range(2))
        whole = sim_record(tmp_path, "global")
        store.add(dataclasses.replace(whole, estimate={"spec": "waves=1,2,3", "batches": [4], "fraction": 0.5,
                                                       "scale": 1, "probe": probe, "runs": [sample]}))
    listed = [r["id"] for r in json.loads(simflow("runs", "--json", env=env).stdout)]
    assert listed == [whole.run_id]
    assert len(json.loads(simflow("runs", "--parts", "--json", env=env).stdout)) == 3
    assert [r["id"] for r in json.loads(simflow("runs", f"id={probe}", "--json", env=env).stdout)] == [probe]
    compare = simflow("compare", "--json", env=env)
    assert compare.returncode == 0 and "did not pass" not in compare.stderr and '"tables"' not in compare.stdout
