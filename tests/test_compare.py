"""diff and compare tables, their formats, and the commands around the store."""

import csv
import io
import json
import math

import pytest
from runs import gpu_record, sim_record
from test_cli import simflow

from simflow.compare import comparable, compare, diff, mark, regressions, render
from simflow.errors import UserError
from simflow.store import Store


@pytest.fixture
def stored(tmp_path):
    records = {"global": sim_record(tmp_path, "global"), "shared": sim_record(tmp_path, "shared")}
    with Store(tmp_path) as store:
        for r in records.values():
            store.add(r)
        yield store, {k: next(s for s in store.runs() if s.id == r.run_id) for k, r in records.items()}


def test_marks_follow_each_metrics_better_direction():
    assert mark("gpu_sim_cycle", 100, 90, 0.02) == "better"
    assert mark("gpu_ipc", 100, 90, 0.02) == "worse"
    assert mark("gpu_ipc", 100, 101, 0.02) == "same"
    assert mark("conv2d_x.time_ms", 1.0, 1.5, 0.02) == "worse"
    assert mark("gpu_tot_issued_cta", 16, 32, 0.02) == "changed"
    assert mark("gpu_occupancy", math.nan, 10, 0.02) == "n/a"


def test_diff_of_global_and_shared_from_real_logs(stored):
    _, runs = stored
    frame = diff(runs["global"], runs["shared"]).set_index("metric")
    assert frame.loc["gpu_sim_cycle", ["A", "B", "delta"]].tolist() == [6693, 7277, 584]
    assert frame.loc["gpu_sim_cycle", "mark"] == "worse" and frame.loc["gpu_sim_cycle", "better"] == "lower"
    assert frame.loc["L1D_total_cache_accesses", "mark"] == "better"
    assert frame.loc["L1D_total_cache_accesses", "ratio"] == pytest.approx(2304 / 6080)
    assert frame.loc["gpu_occupancy", "mark"] == "n/a"
    assert "sim_wall_s" not in frame.index  # bookkeeping is left out unless asked for
    assert regressions(frame.reset_index())
    only = diff(runs["global"], runs["shared"], ["gpu_sim_cycle", "sim_wall_s"])
    assert list(only["metric"]) == ["gpu_sim_cycle", "sim_wall_s"] and list(only["mark"]) == ["worse", "same"]
    with pytest.raises(UserError, match="no metric nope in either run"):
        diff(runs["global"], runs["shared"], ["nope"])


def test_not_comparable_says_why(stored, tmp_path):
    _, runs = stored
    assert comparable(runs["global"], runs["shared"]) == ""
    other = gpu_record("x", "global", 1.0)
    with Store(tmp_path / "other") as s2:
        s2.add(other)
        gpu_run = s2.runs()[0]
    assert comparable(runs["global"], gpu_run) == "backend differs (gpgpusim vs gpu)"
    import dataclasses

    bigger = dataclasses.replace(runs["shared"], problem=runs["shared"].problem.with_batch(8))
    assert comparable(runs["global"], bigger).startswith("problem differs")
    small = dataclasses.replace(runs["shared"], config="SM7_QV100_small", config_key="other")
    assert comparable(runs["global"], small) == "simulator config differs (SM7_QV100 vs SM7_QV100_small)"
    moved = dataclasses.replace(runs["shared"], config_hash="0123")
    assert "different config files" in comparable(runs["global"], moved)


def test_compare_groups_newest_run_and_baseline(stored):
    store, runs = stored
    store.add(sim_record(store.root, "shared"))  # a newer shared run: the group shows it
    frame, base = compare(store.runs(), ["variant"], ["gpu_sim_cycle", "gpgpu_n_shmem_insn"], "shared")
    assert base == "variant=shared" and list(frame["group"]) == ["variant=global", "variant=shared"]
    assert frame.loc[1, "run"] != runs["shared"].id
    assert frame.loc[0, "speedup"] == pytest.approx(7277 / 6693)
    assert frame.loc[0, "gpu_sim_cycle /base"] == pytest.approx(6693 / 7277)
    assert regressions(frame) == []
    frame, _ = compare(store.runs(), ["variant"], ["gpu_sim_cycle"])
    assert regressions(frame) == ["variant=shared: speedup 0.920"]
    with pytest.raises(UserError, match="baseline 'im2col' is not one of the groups"):
        compare(store.runs(), ["variant"], None, "im2col")
    with pytest.raises(UserError, match="no stored run matches"):
        compare([], ["variant"])


def test_formats(stored):
    _, runs = stored
    frame = diff(runs["global"], runs["shared"], ["gpu_sim_cycle", "gpu_occupancy"])
    md = render(frame, "markdown", "A vs B")
    assert md.splitlines()[2].startswith("| metric | unit | A | B |")
    assert "| gpu_sim_cycle | cycles | 6693 | 7277 |" in md
    rows = list(csv.DictReader(io.StringIO(render(frame, "csv"))))
    assert rows[0]["metric"] == "gpu_sim_cycle" and float(rows[0]["B"]) == 7277
    data = json.loads(render(frame, "json", "t"))
    assert data["title"] == "t" and data["rows"][1]["A"] is None  # NaN -> null
    page = render(frame, "html", "<A & B>")
    assert "<caption>&lt;A &amp; B&gt;</caption>" in page and '<td class="worse">worse</td>' in page
    assert "gpu_sim_cycle" in render(frame, "table")
    with pytest.raises(UserError, match="valid formats: table, markdown, csv, json, html"):
        render(frame, "xlsx")


def test_commands_on_a_results_folder(stored, tmp_path):
    store, runs = stored
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    out = simflow("runs", "variant=shared", env=env)
    assert out.returncode == 0 and runs["shared"].id in out.stdout and runs["global"].id not in out.stdout
    shown = json.loads(simflow("show", "variant=global", "--json", env=env).stdout)
    assert shown["id"] == runs["global"].id and shown["metrics"]["gpu_sim_cycle"] == 6693
    proc = simflow("diff", runs["global"].id, "variant=shared", "--metrics", "gpu_sim_cycle", "-f", "csv", env=env)
    assert proc.returncode == 0 and "gpu_sim_cycle,cycles,6693.0,7277.0" in proc.stdout
    proc = simflow("diff", "variant=global", "variant=shared", "--fail-on-regression", env=env)
    assert proc.returncode == 4 and "regression(s): " in proc.stderr and "gpu_sim_cycle: 6693 -> 7277" in proc.stderr
    proc = simflow("compare", "--by", "variant", "-f", "markdown", "-o", str(tmp_path / "c.md"), env=env)
    assert proc.returncode == 0 and "| variant=shared |" in (tmp_path / "c.md").read_text()
    proc = simflow("show", "nope", env=env)
    assert proc.returncode == 1 and "no run 'nope'" in proc.stderr and "Traceback" not in proc.stderr


def test_not_comparable_runs_are_refused_unless_forced(tmp_path):
    with Store(tmp_path) as store:
        store.add(sim_record(tmp_path, "global"))
        store.add(gpu_record("g1", "global", 1.0))
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    proc = simflow("diff", "backend=gpgpusim", "backend=gpu", env=env)
    assert proc.returncode == 1 and "not comparable: backend differs (gpgpusim vs gpu); --force" in proc.stderr
    proc = simflow("diff", "backend=gpgpusim", "backend=gpu", "--force", "--metrics", "regs", env=env)
    assert proc.returncode == 0 and "[not comparable: backend differs" in proc.stdout


def test_import_stores_run_folders_once(tmp_path):
    record = sim_record(tmp_path, "shared")  # a run whose store write failed: only its folder exists
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    proc = simflow("import", record.artifacts["run_dir"], env=env)
    assert proc.returncode == 0 and f"{record.run_id}: stored" in proc.stdout
    proc = simflow("import", record.artifacts["run_dir"], env=env)
    assert "stored already" in proc.stdout
    with Store(tmp_path) as store:
        assert store.ids() == [record.run_id]
