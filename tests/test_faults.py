"""I/O faults and bad files give clear errors with the README's exit codes, and lose nothing stored."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import simflow
from runs import sim_record

from simflow.results.store import Store

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "examples" / "accelsim-fork_qv100_batch3x3_global.log.gz"


def clean(proc, code=1):
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    with Store(folder) as store:
        store.add(sim_record(folder, "global"))
        store.add(sim_record(folder, "shared"))
    return folder


def test_outputs_into_missing_folders_or_onto_directories(tmp_path, results):
    env = {"SIMFLOW_RESULTS": str(results)}
    err = clean(simflow("render", "global", "-o", str(tmp_path / "no" / "k.cu")))
    assert "No such file or directory" in err and "no/k.cu" in err
    err = clean(simflow("render", "global", "-o", str(tmp_path)))
    assert "Is a directory" in err
    err = clean(simflow("compare", "--by", "variant", "-o", str(tmp_path / "no" / "c.md"), env=env))
    assert "No such file or directory" in err
    log = ROOT / "examples" / "accelsim-fork_qv100_batch3x3_global.log.gz"
    err = clean(simflow("parse", str(log), "--csv", str(tmp_path / "no" / "k.csv")))
    assert "No such file or directory" in err or "non-existent directory" in err


def test_results_that_are_a_file_or_read_only(tmp_path, results):
    afile = tmp_path / "file"
    afile.write_text("x")
    err = clean(simflow("import", str(results / "runs"), "--results", str(afile)))
    assert "cannot use" in err and "results folder" in err
    err = clean(simflow("runs", "--results", str(afile)))
    assert "is not a results folder" in err
    if os.geteuid() == 0:
        pytest.skip("root writes through read-only permissions; the read-only mount is tested below")
    results.chmod(0o555)
    try:
        err = clean(simflow("import", *map(str, (results / "runs").iterdir()), "--results", str(results)))
        assert "read-only" in err or "stored already" in err
    finally:
        results.chmod(0o755)


def test_read_only_commands_create_nothing(tmp_path):
    """...and a results folder that does not exist (a typo) is an error, never an empty listing."""
    empty = tmp_path / "nothing-here"
    for args in (["runs"], ["compare", "--by", "variant"], ["show", "x"], ["diff", "a", "b"], ["explain", "a", "b"],
                 ["report", "-d", str(tmp_path / "report")]):
        proc = simflow(*args, "--results", str(empty))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert f"no results folder {empty}: nothing was stored there" in proc.stderr, (args, proc.stderr)
    assert not empty.exists()
    cwd_store = subprocess.run([sys.executable, "-m", "simflow", "runs"], cwd=tmp_path, capture_output=True,
                               text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": ""})
    assert cwd_store.returncode == 1 and "no results folder" in cwd_store.stderr
    assert not (tmp_path / "simflow-results").exists()
    (tmp_path / "simflow-results").mkdir()  # a folder with nothing stored yet reads as empty
    cwd_store = subprocess.run([sys.executable, "-m", "simflow", "runs"], cwd=tmp_path, capture_output=True,
                               text=True, env={**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": ""})
    assert cwd_store.returncode == 0 and not (tmp_path / "simflow-results" / "simflow.db").exists()


def test_import_of_what_is_not_a_result(tmp_path, results):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe not json")
    err = clean(simflow("import", str(bad), "--results", str(results)))
    assert "is not a simflow result.json (not JSON text" in err
    bad.write_text(json.dumps({"status": "passed"}))
    err = clean(simflow("import", str(bad), "--results", str(results)))
    assert "is not a simflow result.json (KeyError" in err


def test_a_damaged_or_foreign_database(tmp_path, results):
    db = results / "simflow.db"
    with sqlite3.connect(db) as conn:  # fold the WAL in, so the pages below are the whole database
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    page = 4096
    assert len(data) >= 3 * page
    data[page + 100: 2 * page] = os.urandom(page - 100)  # a middle page overwritten
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "simflow.db").write_bytes(bytes(data))
    for args in (["runs"], ["compare", "--by", "variant"]):
        err = clean(simflow(*args, "--results", str(damaged)))
        assert "simflow.db" in err and ("damaged" in err or "not a simflow results database" in err)
    version = tmp_path / "version"
    version.mkdir()
    shutil.copy(db, version / "simflow.db")
    with sqlite3.connect(version / "simflow.db") as conn:
        conn.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    for args in (["runs"], ["import", str(next((results / "runs").iterdir()))]):
        err = clean(simflow(*args, "--results", str(version)))
        assert "schema version 'two', not a number" in err


def test_broken_pipe_is_quiet(results):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(results)}
    proc = subprocess.run(f"{sys.executable} -m simflow parse --catalogue | head -1", shell=True, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_usage_mistakes_exit_1():
    err = clean(simflow("render"))
    assert "the following arguments are required: variant" in err
    err = clean(simflow("sim"))  # the variant is optional with --best (simflow tune)
    assert "name a variant (one of: global," in err and "or --best" in err
    err = clean(simflow("compare", "--no-such-flag"))
    assert "unrecognized arguments" in err
    err = clean(simflow("run", "global", "--repeats", "0"))
    assert "argument --repeats: must be 1 or more, got 0" in err
    err = clean(simflow("sweep", "x.toml", "-j", "two"))
    assert "argument --workers/-j: 'two' is not a whole number" in err


def _unshare_ok() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "--mount", "--map-root-user", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _unshare_ok(), reason="needs unshare (util-linux) with user and mount namespaces")
def test_a_full_disk_and_a_read_only_mount(tmp_path, results):
    """In a private mount namespace: a 1 MiB tmpfs filled up, and the results folder mounted read-only."""
    full = tmp_path / "full"
    full.mkdir()
    run = next((results / "runs").iterdir())
    script = f"""
set -u
mount -t tmpfs -o size=1m simflow-test {full}
cp {results}/simflow.db {full}/ && mkdir {full}/runs {full}/empty
head -c 9000 /dev/urandom | base64 > {full}/old.cu && md5sum < {full}/old.cu > {tmp_path}/old.md5
dd if=/dev/zero of={full}/filler bs=64k 2>/dev/null
dd if=/dev/zero of={full}/filler2 bs=1k 2>/dev/null
py="{sys.executable} -m simflow"
exec 2>&1
echo "== render"; $py render global -o {full}/k.cu; echo "rc=$?"
echo "== render over"; $py render global -o {full}/old.cu; echo "rc=$?"
md5sum < {full}/old.cu | cmp - {tmp_path}/old.md5 && echo unchanged
echo "== import-log"; $py import-log {LOG} --results {full}/empty; echo "rc=$?"
ls -A {full}/empty {full}/empty/runs/* 2>&1
echo "== left"; find {full} -name '*.tmp*'; echo end
echo "== import"; $py import {run} --results {full}; echo "rc=$?"
echo "== runs"; $py runs --results {full} | tail -n +3 | wc -l
mount --bind -o ro {results} {results}
echo "== ro runs"; $py runs --results {results} | tail -n +3 | wc -l; echo "rc=$?"
echo "== ro import"; $py import {run} --results {results}; echo "rc=$?"
"""
    proc = subprocess.run(["unshare", "--mount", "--map-root-user", "bash", "-c", script], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out
    sections = dict(part.split("\n", 1) for part in out.split("== ")[1:])
    assert "No space left on device" in sections["render"] and "rc=1" in sections["render"]
    over = sections["render over"]  # an existing file is never changed by a failed write, and the message names it
    assert f"No space left on device: {full}/old.cu" in over and "rc=1" in over and "unchanged" in over, over
    logged = sections["import-log"]
    assert "rc=1" in logged and str(LOG) not in logged.split("rc=1")[0] and f"{full}/empty" in logged, logged
    assert "simflow.db" not in logged.split("rc=1")[1], logged  # no 0-byte database left behind
    assert sections["left"].split() == ["end"], sections["left"]  # nothing temporary left
    imported = sections["import"]
    assert "rc=0" in imported and "stored already" in imported or (
        "rc=1" in imported and "disk is full" in imported), imported
    assert sections["runs"].strip().splitlines()[-1].strip() == "2", out  # both runs still there
    assert sections["ro runs"].splitlines()[0].strip() == "2", out
    assert "stored already" in sections["ro import"] or "read-only" in sections["ro import"], out


def test_a_repeated_sigterm_is_one_interruption():
    """Linux may send a killed sweep's workers their death signal twice: the second must not cut short the keeping
    of the interrupted run (it lost the record), while a signal after REPEAT_S interrupts again."""
    script = """
import os, signal, time
from simflow import processes
processes.sigterm_as_ctrl_c()
caught = 0
for pause in (0, processes.REPEAT_S + 0.5):
    time.sleep(pause)
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    except KeyboardInterrupt:
        caught += 1
        os.kill(os.getpid(), signal.SIGTERM)  # the same death signal again, while the run is being kept
        time.sleep(0.2)
print(caught)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (proc.returncode, proc.stdout.strip()) == (0, "2"), proc.stderr
