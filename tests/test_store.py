"""The SQLite results store: records round-trip, atomic writes, concurrent writers, schema versions,
clear errors; selecting runs."""

import json
import math
import multiprocessing
import sqlite3

import pytest
from runs import gpu_record, sim_record

from simflow.errors import UserError
from simflow.results import store as store_module
from simflow.results.selectors import resolve_one, select
from simflow.results.store import Store, StoreError


def test_a_sim_run_round_trips(tmp_path):
    result = sim_record(tmp_path)
    with Store(tmp_path) as store:
        store.add(result)
        (run,) = store.runs()
    assert run.id == result.run_id and run.status == "passed" and run.backend == "gpgpusim"
    assert run.params == result.params and run.problem == result.problem and run.fingerprint == result.fingerprint
    assert run.config == "SM7_QV100" and run.config_hash == "d36264132f3a29ca" and run.runner == "native"
    assert run.metrics["gpu_sim_cycle"] == 6693 and run.units["gpu_sim_cycle"] == "cycles"
    assert math.isnan(run.metrics["gpu_occupancy"])  # the fork prints -nan: stored as NULL, read as NaN
    assert set(run.metrics) == set(result.metrics)
    assert run.artifacts["log"].endswith("sim.log.gz") and run.environment["simulator_version"] == "4.2.0"


def test_metrics_are_long_form_with_the_kernel(tmp_path):
    result = gpu_record("r1", "global", 1.0)
    result.kernels = ["conv2d_a", "conv2d_b"]
    result.metrics = {"time_ms": 1.0, "conv2d_a.registers": 30, "conv2d_b.registers": 40}
    with Store(tmp_path) as store:
        store.add(result)
        rows = store.conn.execute("SELECT kernel, name, value FROM metrics ORDER BY kernel, name").fetchall()
        assert rows == [("", "time_ms", 1.0), ("conv2d_a", "registers", 30.0), ("conv2d_b", "registers", 40.0)]
        assert store.runs()[0].metrics == result.metrics


def test_a_failure_inside_the_write_leaves_no_half_record(tmp_path):
    with Store(tmp_path) as store:
        store.add(gpu_record("kept", "global", 1.0))
        bad = gpu_record("half", "shared", 2.0)
        bad.artifacts = {"log": {"not": "a path"}}  # sqlite refuses it after runs and metrics were inserted
        with pytest.raises((StoreError, sqlite3.Error)):
            store.add(bad)
        assert store.ids() == ["kept"]
        assert store.conn.execute("SELECT COUNT(*) FROM metrics WHERE run_id='half'").fetchone() == (0,)
        with pytest.raises(StoreError, match="stored already"):
            store.add(gpu_record("kept", "global", 1.0))


def _writer(args):
    root, worker = args
    with Store(root) as store:
        for i in range(25):
            store.add(gpu_record(f"w{worker}-{i:02d}", "global", 1.0 + i))
    return worker


def test_several_processes_writing_at_once_lose_nothing(tmp_path):
    Store(tmp_path).close()
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        assert sorted(pool.map(_writer, [(tmp_path, w) for w in range(4)])) == [0, 1, 2, 3]
    with Store(tmp_path) as store:
        assert len(store.ids()) == 100
        assert store.conn.execute("SELECT COUNT(*) FROM metrics").fetchone() == (300,)


def test_a_newer_schema_is_refused(tmp_path):
    with Store(tmp_path) as store:
        store.add(gpu_record("r1", "global", 1.0))
        store.conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(StoreError, match=f"schema version 99, made by a newer simflow; this simflow reads up to "
                                         f"version {store_module.SCHEMA_VERSION}: upgrade simflow"):
        Store(tmp_path)


def test_an_older_schema_is_migrated_and_keeps_its_runs(tmp_path, monkeypatch):
    with Store(tmp_path) as store:
        store.add(gpu_record("r1", "global", 1.0))
    version = store_module.SCHEMA_VERSION + 1
    monkeypatch.setattr(store_module, "MIGRATIONS", [*store_module.MIGRATIONS, "ALTER TABLE runs ADD COLUMN note TEXT"])
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", version)
    with Store(tmp_path) as store:
        assert store.schema_version == version and store.ids() == ["r1"]
        assert "note" in [c[1] for c in store.conn.execute("PRAGMA table_info(runs)")]


def test_a_version_1_database_gains_the_estimate_column_and_its_runs_read_as_whole_runs(tmp_path):
    """Databases made before sampled simulation (schema 1) open, migrate, and keep answering the cache."""
    old = gpu_record("r1", "global", 1.0)
    with Store(tmp_path) as store:
        store.add(old)
        store.conn.execute("ALTER TABLE runs DROP COLUMN job")  # the layout version 1 wrote
        store.conn.execute("ALTER TABLE runs DROP COLUMN estimate")
        store.conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    with Store(tmp_path, read_only=True) as store:  # a reader reads the old layout as it is
        assert [r.estimate for r in store.runs()] == [{}]
    with Store(tmp_path) as store:
        assert store.schema_version == store_module.SCHEMA_VERSION
        (run,) = store.runs()
        assert run.estimate == {} and not run.sampled
        assert store.cached(old.fingerprint, old.problem, old.backend, "") == "r1"


def test_a_locked_database_says_so_and_damages_nothing(tmp_path, monkeypatch):
    with Store(tmp_path) as store:
        store.add(gpu_record("r1", "global", 1.0))
    holder = sqlite3.connect(tmp_path / "simflow.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_S", 0.2)
    try:
        with pytest.raises(StoreError, match="locked by another process"):
            Store(tmp_path).add(gpu_record("r2", "global", 2.0))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store(tmp_path) as store:
        assert store.ids() == ["r1"] and store.runs()[0].metrics["time_ms"] == 1.0


def test_not_a_database(tmp_path):
    (tmp_path / "simflow.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a simflow results database"):
        Store(tmp_path)


def test_cache_lookup(tmp_path):
    good, bad = sim_record(tmp_path, "global"), sim_record(tmp_path, "global", wrong=True)
    assert bad.status == "wrong_result"
    with Store(tmp_path) as store:
        store.add(bad)
        key = (good.fingerprint, good.problem, "gpgpusim", good.job.config_key)
        assert store.cached(*key) == bad.run_id
        assert store.cached(*key, failed_too=False) is None
        store.add(good)
        assert store.cached(*key, failed_too=False) == good.run_id
        assert store.cached(good.fingerprint, good.problem.with_batch(5), "gpgpusim", key[3]) is None
        assert store.cached(good.fingerprint, good.problem, "gpu", "") is None


def test_selecting_and_resolving(tmp_path):
    with Store(tmp_path) as store:
        store.add(gpu_record("20261121-000001-global-aaaaaa", "global", 2.0))
        store.add(gpu_record("20261121-000002-shared-bbbbbb", "shared", 1.0, {"tile": 8}))
        store.add(gpu_record("20261121-000003-shared-cccccc", "shared", 1.5, {"tile": 16}))
        runs = store.runs()
        assert [r.id[-6:] for r in select(runs, ["variant=shared"])] == ["bbbbbb", "cccccc"]
        assert [r.id[-6:] for r in select(runs, ["variant=shared,tile=8"])] == ["bbbbbb"]
        assert select(runs, ["backend=gpu", "restrict=off"]) == runs
        assert resolve_one(store, "20261121-000002").id.endswith("bbbbbb")
        assert resolve_one(store, "variant=shared,tile=16").id.endswith("cccccc")
        with pytest.raises(UserError, match="matches 2 runs; name one"):
            resolve_one(store, "variant=shared")
        with pytest.raises(UserError, match="no run '20261121-000009-shared-cccccd'; close matches: 20261121-000003"):
            resolve_one(store, "20261121-000009-shared-cccccd")
        with pytest.raises(UserError, match="no run matches 'variant=shared,tile=32'; runs that differ in one key"):
            resolve_one(store, "variant=shared,tile=32")
        with pytest.raises(UserError, match="not KEY=VALUE"):
            select(runs, ["variant=shared,tile"])


def test_result_json_reads_back_to_the_same_record(tmp_path):
    import json

    from simflow.results.record import RunResult

    result = sim_record(tmp_path, "shared")
    again = RunResult.from_dict(json.loads((tmp_path / "runs" / result.run_id / "result.json").read_text()))
    assert again.to_dict() == result.to_dict()


def _running_folder(tmp_path, owner: str):
    """A run folder as `simflow sim` leaves it from its start: the running record, a partly written log."""
    from simflow import processes
    from simflow.job import Job
    from simflow.kernels.problems import get_problem
    from simflow.kernels.variants import get_variant
    from simflow.results.folders import keep_result, new_run_folder
    from simflow.results.record import RunResult

    kernel = get_variant("global").render(get_problem("batch3x3"), {})
    run_id, folder = new_run_folder("global", tmp_path)
    (folder / "sim.log").write_text("GPGPU-Sim: partial\n")
    files = {"run_dir": str(folder), "log": str(folder / "sim.log")}
    job = Job.make("global", {}, get_problem("batch3x3").with_batch(1), "gpgpusim", config="SM7_QV100")
    record = RunResult.running(job, kernel, run_id, files, 600)
    record.environment["owner"] = owner or processes.owner()
    keep_result(record, folder)
    return run_id, folder


def test_a_run_whose_process_was_killed_is_listed_as_interrupted_and_importable(tmp_path):
    """kill -9 of `simflow sim` leaves its running record: listed (no database yet) as interrupted, log kept,
    and `import` stores it so."""
    import platform
    import subprocess

    from simflow import processes

    dead = subprocess.Popen(["true"])
    gone = processes.owner(dead.pid)
    dead.wait()  # its pid now names no process (or, reused, another start time)
    run_id, folder = _running_folder(tmp_path, gone)
    with Store(tmp_path, read_only=True) as store:
        (run,) = store.runs()
    assert run.id == run_id and run.status == "interrupted" and not run.stored
    assert "ended before the run did" in run.reason and run.artifacts["log"] == str(folder / "sim.log")
    assert run.config == "SM7_QV100"
    with Store(tmp_path) as store:
        store.add(run)
        (again,) = store.runs()  # stored now: listed once
    assert again.stored and again.status == "interrupted" and again.artifacts["log"] == str(folder / "sim.log")
    # a record of another host cannot be told dead by its pid: past its deadline it is
    run_id, folder = _running_folder(tmp_path, "another-host:1:1")
    with Store(tmp_path) as store:
        assert store.runs()[-1].status == "running" and platform.node() != "another-host"
        with pytest.raises(StoreError, match="still running"):
            store.add(store.runs()[-1])
    data = json.loads((folder / "result.json").read_text())
    data["environment"]["deadline"] = "2026-01-01T00:00:00Z"
    (folder / "result.json").write_text(json.dumps(data))
    with Store(tmp_path) as store:
        assert store.runs()[-1].status == "interrupted"


def test_a_running_record_of_a_live_process_stays_running(tmp_path):
    run_id, _ = _running_folder(tmp_path, "")
    with Store(tmp_path, read_only=True) as store:
        (run,) = store.runs()
    assert run.status == "running" and "running since" in run.reason
    with Store(tmp_path) as store, pytest.raises(StoreError, match=f"run {run_id} is still running"):
        store.add(run)


def test_a_run_is_filed_under_its_job_and_an_old_result_json_reads_through_the_migration(tmp_path):
    """The store's columns are the job's, whatever the environment says; result.json without a format (1) gets the
    job its fields and environment described, and a newer format is refused with what to do."""
    import dataclasses

    from simflow.results.record import FORMAT, RunResult

    result = sim_record(tmp_path, "shared")
    assert result.job.variant == "shared" and result.job.config_name == "SM7_QV100" and result.job.config_key
    misleading = dataclasses.replace(result, run_id="other", environment={**result.environment, "config": "nonsense",
                                                                          "config_key": "x", "docker_image": "img"})
    with Store(tmp_path) as store:
        store.add(misleading)
        (stored,) = store.runs()
    assert (stored.config, stored.config_key, stored.runner) == ("SM7_QV100", result.job.config_key, "native")
    assert stored.job == result.job
    data = result.to_dict()
    assert data["format"] == FORMAT and data["job"]["config_name"] == "SM7_QV100"
    old = {k: v for k, v in data.items() if k not in ("format", "job")}  # what simflow wrote before the job
    old["environment"] = {**old["environment"], "config": "SM7_QV100", "config_key": result.job.config_key}
    again = RunResult.from_dict(old)
    assert (again.job.variant, again.job.params, again.job.problem) == (result.job.variant, result.job.params,
                                                                        result.job.problem)
    assert (again.job.config_name, again.job.config_key) == ("SM7_QV100", result.job.config_key)
    with pytest.raises(ValueError, match="format 99 is newer than this simflow reads"):
        RunResult.from_dict({**data, "format": 99})


def test_a_record_of_a_job_takes_its_identity_from_the_job():
    from simflow.job import Job
    from simflow.kernels.problems import get_problem
    from simflow.results.record import RunResult

    job = Job.make("shared", {"tile": 8}, get_problem("batch3x3"), "gpgpusim", seed=7)
    result = RunResult.of(job, "refused", "f" * 16, reason="why")
    assert (result.variant, result.params, result.problem, result.backend, result.seed, result.job) == (
        job.variant, dict(job.params), job.problem, job.backend, 7, job)
    assert (result.status, result.fingerprint, result.reason) == ("refused", "f" * 16, "why")
    result.params["tile"] = 16
    assert dict(job.params)["tile"] == 8  # a copy of the job's, which stay as they are
    # issue 59: the identity is read from the job, never copied beside it, so the two cannot disagree
    import dataclasses

    other = Job.make("global", {}, get_problem("fmnist-conv1"), "gpu", seed=3)
    moved = dataclasses.replace(result, job=other)
    assert (moved.variant, moved.params, moved.problem, moved.backend, moved.seed) == (
        "global", dict(other.params), other.problem, "gpu", 3)
    with pytest.raises(TypeError):
        dataclasses.replace(result, variant="global")


def test_a_jobs_params_are_an_immutable_mapping_that_survives_json_and_pickle():
    """Issue 59: params were a tuple of pairs, turned into a dict and back at every use; now one mapping."""
    import json
    import pickle

    from simflow.job import Job
    from simflow.kernels.problems import get_problem

    job = Job.make("shared", {"tile": 8}, get_problem("batch3x3"), "gpgpusim")
    params = job.params
    assert params["tile"] == 8 and list(params)[:2] == ["tile", "pad_row"] and dict(params)["unroll"] == "none"
    with pytest.raises(TypeError):
        params["tile"] = 16  # type: ignore[index]
    assert hash(params) == hash(Job.make("shared", {"tile": 8}, get_problem("batch3x3"), "gpgpusim").params)
    assert pickle.loads(pickle.dumps(job)) == job
    assert Job.from_dict(json.loads(json.dumps(job.as_dict()))) == job
    assert params == dict(params) and params != {**params, "tile": 16}


def test_a_results_folder_moved_here_names_its_runs_files_where_they_are_now(tmp_path):
    """A results folder made elsewhere (a GPU machine's, unpacked here): its records name run folders that are not
    here, so each run's files are read from runs/<id> of the folder now holding them; a run folder that is still
    where its record says is left as it is."""
    made = tmp_path / "made"
    with Store(made) as store:
        store.add(sim_record(made, "global"))
    moved = made.rename(tmp_path / "unpacked")
    with Store(moved, read_only=True) as store:
        (run,) = store.runs()
    assert run.artifacts["run_dir"] == str((moved / "runs" / run.id).resolve())
    assert all(str(moved.resolve()) in where for kind, where in run.artifacts.items() if kind != "run_dir")
    assert (moved / "runs" / run.id / "sim.log.gz").is_file() and str(moved.resolve()) in run.artifacts["log"]
