"""A damaged results database (issue 57): every case says the recovery that works (move it aside, then
`simflow import <folder>/runs/*`), and following that advice brings every run back."""

import os
import shlex
import sqlite3
from pathlib import Path

import pytest
from conftest import ROOT, simflow

from simflow.results.store import Store

LOGS = [ROOT / "examples" / f"accelsim-fork_qv100_batch3x3_{v}.log.gz" for v in ("global", "shared")]


def _damage(db, how):
    if how == "zero bytes":
        db.write_bytes(b"")
    elif how == "random bytes":
        db.write_bytes(os.urandom(8192))
    elif how == "version not a number":
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE meta SET value = 'x' WHERE key = 'schema_version'")


@pytest.mark.parametrize("how", ["zero bytes", "random bytes", "version not a number"])
@pytest.mark.parametrize("command", ["runs", "import-log"])
def test_the_advice_names_the_recovery_and_the_recovery_works(tmp_path, how, command):
    results = tmp_path / "results"
    for log in LOGS:
        out = simflow("import-log", str(log), "--results", str(results), "-l", "problem=batch3x3")
        assert out.returncode == 0, out.stderr
    db = results / "simflow.db"
    for extra in ("simflow.db-wal", "simflow.db-shm"):
        (results / extra).unlink(missing_ok=True)
    _damage(db, how)
    args = ["runs"] if command == "runs" else ["import-log", str(LOGS[0]), "-l", "problem=batch3x3", "--again"]
    out = simflow(*args, "--results", str(results))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert f"mv {db} {db}.damaged" in out.stderr and f"simflow import {results / 'runs'}/*" in out.stderr, out.stderr
    assert "2 run(s)" in out.stderr
    os.rename(db, f"{db}.damaged")  # the advice, as a user follows it
    runs = sorted(str(p) for p in (results / "runs").iterdir())
    assert simflow("import", *runs, "--results", str(results)).returncode == 0
    listed = simflow("runs", "--json", "--results", str(results))
    assert listed.returncode == 0 and listed.stdout.count('"status": "passed"') == 2, shlex.join(runs)


def test_partial_run_folders_each_say_whether_and_how_they_import(tmp_path):
    """A full disk leaves partial run folders (issue 57): every folder is tried; a simulator run whose result.json
    is missing is recovered from its log; the others say why not and what to do; the good ones are stored."""
    import shutil

    from runs import sim_record

    good = sim_record(tmp_path / "made", "global")
    lost = sim_record(tmp_path / "made", "shared")
    good_dir, lost_dir = Path(good.artifacts["run_dir"]), Path(lost.artifacts["run_dir"])
    (lost_dir / "result.json").unlink()  # the disk filled as it was written
    empty = tmp_path / "made" / "runs" / "20261129-000000-global-000000"
    empty.mkdir()
    (empty / "job.json").write_text("{}")  # killed at its start
    cut = tmp_path / "made" / "runs" / "cut"
    shutil.copytree(good_dir, cut)
    (cut / "result.json").write_text((good_dir / "result.json").read_text()[:100])
    results = tmp_path / "results"
    out = simflow("import", str(good_dir), str(lost_dir), str(empty), str(cut), "--results", str(results))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "2 run(s) stored" in out.stderr and "2 not importable" in out.stderr
    assert f"{empty}: not importable: {empty} has no result.json and no simulator log" in out.stderr
    assert "run the job again" in out.stderr and "not JSON text" in out.stderr and "move it aside" in out.stderr
    listed = {line.split()[0]: line.split(None, 1)[1].strip() for line in out.stdout.splitlines()[2:]}
    assert listed[good.run_id] == "stored" and listed[lost.run_id] == "recovered"
    with Store(results) as store:
        recovered = store.runs("WHERE id = ?", (lost.run_id,))[0]
    assert recovered.status == "passed" and recovered.metrics["gpu_sim_cycle"] == lost.metrics["gpu_sim_cycle"]
