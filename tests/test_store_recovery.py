"""A damaged results database (issue 57): every case says the recovery that works (move it aside, then
`simflow import <folder>/runs/*`), and following that advice brings every run back."""

import os
import shlex
import sqlite3

import pytest
from conftest import ROOT, simflow

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
