"""diff and compare tables, their formats, and the commands around the store."""

import csv
import dataclasses
import io
import json
import math
import shutil
from pathlib import Path

import pytest
from conftest import simflow
from runs import gpu_record, sim_record

from simflow.analysis.compare import comparable, compare, diff, mark, regressions
from simflow.errors import UserError
from simflow.results.store import Store
from simflow.tables import render


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
    assert list(only["metric"]) == ["status", "gpu_sim_cycle", "sim_wall_s"]  # the status first, always
    assert list(only["mark"]) == ["same", "worse", "same"]
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

    bigger = dataclasses.replace(runs["shared"], job=dataclasses.replace(runs["shared"].job,
                                                                    problem=runs["shared"].problem.with_batch(8)))
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
    assert rows[0]["metric"] == "status" and rows[0]["A"] == rows[0]["B"] == "passed"
    assert rows[1]["metric"] == "gpu_sim_cycle" and float(rows[1]["B"]) == 7277
    data = json.loads(render(frame, "json", "t"))
    assert data["title"] == "t" and data["rows"][2]["A"] is None  # NaN -> null
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
    assert "max_icnt2sh_latency" not in proc.stderr  # 6 -> 7 cycles: +17 %, within a latency's floor
    import simflow.api as sf

    frame = sf.diff("variant=global", "variant=shared", results=tmp_path)  # the CLI's defaults
    cli = json.loads(simflow("diff", "variant=global", "variant=shared", "--json", env=env).stdout)["rows"]
    assert dict(zip(frame["metric"], frame["mark"], strict=True)) == {r["metric"]: r["mark"] for r in cli}
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
    assert proc.returncode == 0 and [record.run_id, "stored"] in [line.split() for line in proc.stdout.splitlines()]
    proc = simflow("import", record.artifacts["run_dir"], env=env)
    assert [record.run_id, "stored", "already"] in [line.split() for line in proc.stdout.splitlines()]
    with Store(tmp_path) as store:
        assert store.ids() == [record.run_id]


# ---- like with like (the fault table of the trust issue) -------------------------------------------

def _variant_of(record, **changes):
    import dataclasses

    return dataclasses.replace(record, run_id=record.run_id + "-" + "-".join(f"{k}" for k in changes), **changes)


@pytest.fixture
def mixed_store(tmp_path):
    """Passed global and shared runs, an earlier timed-out run of shared and wrong_result global, an
    SM7_QV100_small run, and GPU runs of global (tile 16 and 32) and shared."""
    g, sh = sim_record(tmp_path, "global"), sim_record(tmp_path, "shared")
    earlier = "2026-01-01T00:00:00.000000Z"  # failed attempts before the passes: nothing is newly failing
    late = _variant_of(sh, status="timed_out", reason="the simulator ran past the timeout (1 s)", metrics={},
                       created=earlier)
    wrong = sim_record(tmp_path, "global", wrong=True)
    wrong.created = earlier
    small = _variant_of(sh, environment={**sh.environment, "config": "SM7_QV100_small", "config_key": "small"},
                        job=dataclasses.replace(sh.job, config="SM7_QV100_small", config_name="SM7_QV100_small",
                                                config_key="small"))
    with Store(tmp_path) as store:
        for r in (g, sh, late, wrong, small, gpu_record("g16", "global", 0.020),
                  gpu_record("g32", "global", 0.030, {"tile": 32}), gpu_record("s16", "shared", 0.016)):
            store.add(r)
        yield store, tmp_path


def test_compare_uses_passed_runs_one_backend_and_config_per_table(mixed_store):
    from simflow.analysis.compare import comparison

    store, _ = mixed_store
    with pytest.raises(UserError, match="baseline 'global' matches several groups: variant=global,tile=16; "
                                        "variant=global,tile=32"):
        comparison(store.runs(), ["variant"], None, "global")  # two GPU global runs differ in tile
    result = comparison(store.runs(), ["variant"], None, "variant=global,tile=16")
    titles = [t.title for t in result.tables]
    assert len(titles) == 3 and sum("config SM7_QV100_small" in t for t in titles) == 1
    assert sum(t.startswith("gpu on") for t in titles) == 1
    assert "2 run(s) that did not pass (1 timed_out, 1 wrong_result; --all-statuses shows them)" in result.left_out
    sim = next(t for t in result.tables if t.title.endswith("config SM7_QV100"))
    assert set(sim.frame["status"]) == {"passed"} and sim.frame.loc[1, "speedup"] == pytest.approx(6693 / 7277)
    gpu = next(t for t in result.tables if t.title.startswith("gpu"))
    assert list(gpu.frame["group"]) == ["variant=global,tile=16", "variant=global,tile=32", "variant=shared,tile=16"]
    with pytest.raises(UserError, match="unknown --by key colour; valid keys: variant, backend, config"):
        comparison(store.runs(), ["colour"])
    with pytest.raises(UserError, match="no metric cycles in the selected runs; they have: "):
        comparison(store.runs(), ["variant"], ["cycles"])
    with pytest.raises(UserError, match="no passed run matches: 1 run"):
        comparison([r for r in store.runs() if r.status == "timed_out"], ["variant"])


def test_readme_examples_work_as_written(mixed_store):
    store, results = mixed_store
    env = {"SIMFLOW_RESULTS": str(results)}
    proc = simflow("compare", "config=SM7_QV100", "--by", "variant,tile", "--baseline", "global", "-f", "markdown",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    assert "| variant=global,tile=16 |" in proc.stdout and "baseline variant=global,tile=16" in proc.stdout
    assert "left out: 2 run(s) that did not pass" in proc.stderr
    proc = simflow("diff", "variant=global,backend=gpgpusim", "variant=shared,backend=gpgpusim,config=SM7_QV100",
                   env=env)
    assert proc.returncode == 0, proc.stderr
    fresh = results / "fresh"  # the README's own runs: a global and a shared simulation, shared twice
    with Store(fresh) as two:
        two.add(sim_record(fresh, "global"))
        two.add(sim_record(fresh, "shared"))
        two.add(sim_record(fresh, "shared"))  # a repeat: the newest passed one is used
    proc = simflow("diff", "variant=global", "variant=shared", env={"SIMFLOW_RESULTS": str(fresh)})
    assert proc.returncode == 0 and "gpu_sim_cycle" in proc.stdout, proc.stderr


def test_diff_marks_a_run_that_stopped_passing_as_worse(tmp_path):
    good = sim_record(tmp_path, "global")
    broken = _variant_of(good, status="compile_error", reason="nvcc failed", metrics={})
    with Store(tmp_path) as store:
        store.add(good)
        store.add(broken)
    env = {"SIMFLOW_RESULTS": str(tmp_path)}
    proc = simflow("diff", good.run_id, broken.run_id, "--fail-on-regression", env=env)
    assert proc.returncode == 4 and "status: passed -> compile_error" in proc.stderr
    assert proc.stdout.splitlines()[3].split()[:3] == ["status", "passed", "compile_error"]  # title, head, rule


def test_compare_counts_a_newly_failing_job_as_a_regression(tmp_path):
    """The newest run of global failed where an older one passed: the old pass must not stand for it (asv's
    "newly failing"); an interrupted newest run is no failure."""
    from simflow.analysis.compare import comparison

    first, shared = sim_record(tmp_path, "global"), sim_record(tmp_path, "shared")
    crashed = _variant_of(first, status="crashed", reason="the simulator died", metrics={})
    stopped = _variant_of(shared, status="interrupted", reason="Ctrl-C", metrics={})
    with Store(tmp_path) as store:
        for run in (first, shared, crashed, stopped):
            store.add(run)
        runs = store.runs()
    result = comparison(runs, ["variant"])
    (table,) = result.tables
    assert list(table.frame["group"]) == ["variant=shared"]  # the stale pass of global is not shown
    (failing,) = result.newly_failing
    assert failing.startswith("global[") and failing.endswith(f"on batch3x3: run {crashed.run_id} crashed")
    assert "newly failing" in result.left_out and result.regressions(0.02)[0].startswith("newly failing: global[")
    proc = simflow("compare", "--fail-on-regression", env={"SIMFLOW_RESULTS": str(tmp_path)})
    assert proc.returncode == 4 and "newly failing: global[" in proc.stderr, proc.stderr


def test_a_change_counts_only_past_the_threshold_and_its_units_floor():
    assert mark("max_icnt2sh_latency", 6, 7, 0.02, "cycles") == "same"  # +17 %, 1 cycle: noise
    assert mark("gpu_sim_cycle", 6693, 7277, 0.02, "cycles") == "worse"
    assert mark("gpu_sim_cycle", 6693, 6696, 0.0, "cycles") == "same"  # past 0 %, inside 4 cycles
    assert mark("L1D_total_cache_miss_rate", 0.160, 0.163, 0.0, "") == "same"  # a rate: half a point
    assert mark("L1D_total_cache_miss_rate", 0.160, 0.449, 0.02, "") == "worse"
    assert mark("bad_elements", 0, 1, 0.02, "") == "worse"  # a count has no floor: one wrong element counts


def test_a_run_folder_copied_elsewhere_is_imported_where_it_now_lies(tmp_path):
    """A run kept as its result.json and log in another folder (a repository's results, another machine): its
    record names the folder it was imported from, so the log (and the simulated clock it echoes) is read there."""
    from simflow.analysis.fidelity import simulated_mhz

    made = tmp_path / "made"
    record = sim_record(made, "shared")
    kept = tmp_path / "kept" / record.run_id
    kept.mkdir(parents=True)
    for name in ("result.json", "sim.log.gz"):
        shutil.copy(Path(record.artifacts["run_dir"]) / name, kept / name)
    shutil.rmtree(made)  # the machine it was made on is gone
    env = {"SIMFLOW_RESULTS": str(tmp_path / "store")}
    proc = simflow("import", str(kept), env=env)
    assert proc.returncode == 0, proc.stderr
    with Store(tmp_path / "store") as store:
        (stored,) = store.runs()
    assert stored.artifacts["run_dir"] == str(kept.resolve())
    assert stored.artifacts["log"] == str(kept.resolve() / "sim.log.gz")
    assert stored.artifacts["kernel_source"] == str(kept.resolve() / "kernel.cu")  # named there, not copied
    assert simulated_mhz(stored) == 1132.0
