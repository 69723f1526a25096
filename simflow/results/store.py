"""The results store: every run a record in one SQLite file, beside the run folders (run_folders.py).

<results>/simflow.db holds the records; <results>/runs/<run id>/ the kept files (rendered
source, simulator log, result.json). A record is written in one transaction after the run has
finished, so a crash leaves no half record; WAL mode and a busy timeout let several processes
write at once. The schema has a version; `MIGRATIONS` brings an older file up to date and a
file from a newer simflow is refused.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..kernels.problems import Problem
from ..resources import results_dir
from .record import RunResult, from_stored, migrate, to_stored

DB_NAME = "simflow.db"
BUSY_TIMEOUT_S = 60

MIGRATIONS: list[str] = [
    # 1: runs, long-form metrics, kept files
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        created TEXT NOT NULL,
        variant TEXT NOT NULL,
        params TEXT NOT NULL,            -- JSON, sorted keys
        fingerprint TEXT NOT NULL,       -- of the rendered kernel source
        problem TEXT NOT NULL,           -- preset name, or 'custom'
        shape TEXT NOT NULL,             -- JSON {B, C, M, H, W, K, pad}
        backend TEXT NOT NULL,           -- gpu | gpgpusim
        runner TEXT NOT NULL,            -- native | docker:<image>
        config TEXT NOT NULL,            -- simulator config name ('' on a GPU)
        config_key TEXT NOT NULL,        -- hash of base + options: part of the cache key
        config_hash TEXT NOT NULL,       -- hash of the config files the simulator read
        status TEXT NOT NULL,
        reason TEXT NOT NULL,
        seed INTEGER NOT NULL,
        environment TEXT NOT NULL,       -- JSON
        kernels TEXT NOT NULL,           -- JSON list, launch order
        simflow_version TEXT NOT NULL
    );
    CREATE INDEX runs_cache ON runs (fingerprint, shape, backend, config_key);
    CREATE INDEX runs_variant ON runs (variant, created);
    CREATE TABLE metrics (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kernel TEXT NOT NULL,            -- '' for the run, else the kernel ('<name>#<uid>' if repeated)
        name TEXT NOT NULL,
        value REAL,                      -- NULL: not a number (the simulator printed -nan)
        unit TEXT NOT NULL,
        PRIMARY KEY (run_id, kernel, name)
    );
    CREATE TABLE artifacts (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,              -- run_dir, kernel_source, log, ...
        path TEXT NOT NULL,
        PRIMARY KEY (run_id, kind)
    );
    """,
    # 2: sampled simulation: a run whose metrics are estimates keeps how (JSON, '' for a whole run)
    """
    ALTER TABLE runs ADD COLUMN estimate TEXT NOT NULL DEFAULT ''
    """,
    # 3: the job each run made (JSON, simflow.job.Job; '' for runs stored before: the columns are their job)
    """
    ALTER TABLE runs ADD COLUMN job TEXT NOT NULL DEFAULT ''
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(UserError):
    """The database cannot be used (locked, disk full, newer schema); says what to do."""


def shape_key(problem: Problem) -> str:
    """The shape as the store keys it: the problem's fields but its name (Problem.as_dict leaves out a
    stride of 1, so records made before stride read the same)."""
    return json.dumps({k: v for k, v in problem.as_dict().items() if k != "name"}, sort_keys=True)


def problem_key(problem: Problem) -> str | None:
    """What two runs must share to be compared: the shape, or for an imported log its problem= label; None when
    the problem is unknown (a log imported without a label), which nothing else shares."""
    if not problem.known:
        return None
    return json.dumps({"label": problem.name}) if problem.imported else shape_key(problem)


@dataclass
class StoredRun(RunResult):
    """A run as the store keeps it: the result itself, plus how it ran and what it was stored with."""

    runner: str = "native"  # native | docker:<image>
    config: str = ""  # simulator config name ('' on a GPU)
    config_key: str = ""  # hash of base + options: part of the cache key
    config_hash: str = ""  # hash of the config files the simulator read
    simflow_version: str = ""
    stored: bool = True  # False: an unfinished run's record in its folder, not in the database (Store.unfinished)

    @property
    def id(self) -> str:
        return self.run_id

    @property
    def params(self) -> dict:
        """The job's parameters as the store lists them, by name (its params column); an unfinished run's as
        its result.json has them, in the variant's order."""
        return dict(sorted(self.job.params.items())) if self.stored else dict(self.job.params)

    def value(self, key: str) -> str:
        """A selector field as text: variant, backend, problem, config, status, or a parameter."""
        from ..kernels.variants import show_value

        if key in self.params:
            return show_value(self.params[key])
        if key == "problem":
            return self.problem.name
        if key == "id":
            return self.id
        if key in ("variant", "backend", "config", "status", "runner", "fingerprint", "config_hash"):
            return str(getattr(self, key))
        if key == "batch":
            return str(self.problem.B)
        return self.environment.get(key, "")

    def label(self, keys: Iterable[str]) -> str:
        """KEY=VALUE,... with each key once (an imported log's labels can repeat variant, config or problem)."""
        return ",".join(f"{k}={self.value(k)}" for k in dict.fromkeys(keys))

    def as_dict(self) -> dict:
        """The record as `runs --json` and `show --json` print it: the result's fields (its run id as
        `id`) and the store's."""
        out = self.to_dict()
        out = {"id": out.pop("run_id"), **out}
        return out


class Store:
    """The SQLite results database of one results folder."""

    def __init__(self, root: Path | None = None, read_only: bool = False) -> None:
        """read_only: for commands that only read. Nothing is created (a missing folder is an error, a folder
        without a database reads as empty) and a database on a read-only mount can still be read."""
        self.root = (root or results_dir()).resolve()
        self.path = self.root / DB_NAME
        self.read_only = read_only
        self.conn = None
        if read_only:
            self._open_read_only()
            return
        existed = self.path.exists()
        if existed and self.path.is_file() and self.path.stat().st_size == 0 and self._kept_runs():
            raise StoreError(f"results database {self.path} is empty (0 bytes), but {self.root / 'runs'} keeps "
                             f"{self._kept_runs()} run folder(s) it would no longer list: {self._recovery()}")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self._migrate()
        except sqlite3.Error as exc:
            self._forget_new(existed)
            raise self._error(exc, "open") from None
        except OSError as exc:
            self._forget_new(existed)
            raise StoreError(f"cannot use {self.root} as a results folder: {exc.strerror or exc}; "
                             "name a writable folder with --results or SIMFLOW_RESULTS") from None

    def _forget_new(self, existed: bool) -> None:
        """A database this open created and could not finish (a full disk) is removed, not left at 0 bytes."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if not existed:
            for path in (self.path, self.path.with_name(DB_NAME + "-wal"), self.path.with_name(DB_NAME + "-shm")):
                try:
                    path.unlink(missing_ok=True)
                except OSError:  # e.g. the results "folder" is a file: nothing was made
                    pass

    def _open_read_only(self) -> None:
        if not self.root.exists():  # a mistyped --results must not read as "nothing stored"
            raise StoreError(f"no results folder {self.root}: nothing was stored there; check --results or "
                             "SIMFLOW_RESULTS (runs are stored where simflow run, sim, sweep or import-log put them)")
        if self.path.is_dir() or not self.root.is_dir():
            raise StoreError(f"{self.root} is not a results folder (a file, or {DB_NAME} is a folder)")
        if not self.path.is_file():
            return  # nothing stored yet: reads as empty, creates nothing
        last = None
        # mode=ro first; on a read-only mount a WAL database cannot make its -shm file: immutable=1 reads it
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(f"{self.path.as_uri()}?{flags}", uri=True, timeout=BUSY_TIMEOUT_S,
                                       isolation_level=None)
                self._check_version(conn)
                self.conn = conn
                return
            except sqlite3.Error as exc:
                last = exc
        raise self._error(last, "read")

    def _check_version(self, conn) -> None:
        has_meta = conn.execute("SELECT name FROM sqlite_master WHERE name = 'meta'").fetchone()
        version = self._parse_version(conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'").fetchone()) if has_meta else 0
        if version > SCHEMA_VERSION:
            raise self._newer(version)
        if version < 1 and self.path.stat().st_size == 0 and self._kept_runs():
            raise StoreError(f"results database {self.path} is empty (0 bytes), but {self.root / 'runs'} keeps "
                             f"{self._kept_runs()} run folder(s): {self._recovery()}")
        if version < 1:
            raise StoreError(f"results database {self.path} has schema version {version}; open it once with a "
                             "command that writes (e.g. simflow import) to bring it up to date")
        # an older layout reads as it is (a read-only reader cannot migrate): its runs are all whole runs

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            why = f"it is locked by another process (waited {BUSY_TIMEOUT_S} s); try again when that one is done"
        elif "full" in text or "disk I/O" in text:
            why = "the disk is full or failing; free space and try again (nothing stored before was changed)"
        elif "malformed" in text or "not a database" in text:
            why = f"the file is damaged or not a simflow results database; {self._recovery()}"
        elif "readonly" in text or "read-only" in text or (not self.read_only and self._read_only_folder()):
            why = "the folder or file is read-only; name a writable one with --results or SIMFLOW_RESULTS"
        elif "unable to open" in text:
            why = "the file cannot be opened (missing folder, or no permission)"
        else:
            why = text
        return StoreError(f"results database {self.path}: cannot {doing}: {why} ({text})")

    def _kept_runs(self) -> int:
        """Run folders kept beside the database (each with its result.json, so it can be stored again)."""
        try:
            return sum(1 for _ in (self.root / "runs").glob("*/result.json"))
        except OSError:
            return 0

    def _recovery(self) -> str:
        """What brings the runs back when the database file is lost: the run folders hold every record."""
        return (f"move it aside (mv {self.path} {self.path}.damaged) and 'simflow import {self.root / 'runs'}/*' "
                f"stores the {self._kept_runs()} run(s) kept in {self.root / 'runs'} again; or name another "
                "--results folder")

    def _read_only_folder(self) -> bool:
        try:
            return bool(os.statvfs(self.root).f_flag & os.ST_RDONLY) or not os.access(self.root, os.W_OK)
        except OSError:
            return False

    def _parse_version(self, row) -> int:
        if not row:
            return 0
        try:
            return int(row[0])
        except (TypeError, ValueError):
            raise StoreError(f"results database {self.path} has schema version {row[0]!r}, not a number: it was "
                             f"not written by simflow, or is damaged; {self._recovery()}") from None

    def _newer(self, version: int) -> StoreError:
        return StoreError(f"results database {self.path} has schema version {version}, made by a newer "
                          f"simflow; this simflow reads up to version {SCHEMA_VERSION}: upgrade simflow "
                          "(pip install -U simflow) or use another --results folder")

    def _version(self) -> int:
        self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        return self._parse_version(self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone())

    def _rollback(self) -> None:
        """ROLLBACK, when SQLite has not already rolled back by itself (after a full disk, say)."""
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _migrate(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._version()
            if version > SCHEMA_VERSION:
                raise self._newer(version)
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number].split(";"):
                    if statement.strip():
                        self.conn.execute(statement)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(number + 1),))
            self.conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    @property
    def schema_version(self) -> int:
        if self.read_only:
            return SCHEMA_VERSION if self.conn is not None else 0
        return self._version()

    # ---- writing ----------------------------------------------------------------------------

    def add(self, result: RunResult) -> str:
        """Store a finished run in one transaction; returns its id."""
        from .. import __version__

        if not result.run_id:
            raise ValueError("a stored run needs a run id (new_run_folder gives one)")
        if result.settled().status == "running":
            raise StoreError(f"run {result.run_id} is still running ({result.reason}); it is stored when it ends")
        job, env = result.job, result.environment  # the job's columns come from the job, the run's from the run
        row = (result.run_id, result.created, job.variant, json.dumps(dict(job.params), sort_keys=True),
               result.fingerprint, job.problem.name, shape_key(job.problem), job.backend, job.runner, job.config_name,
               job.config_key, env.get("config_hash", ""), result.status, result.reason, job.seed,
               json.dumps(env, sort_keys=True), json.dumps(result.kernels), __version__,
               json.dumps(result.estimate, sort_keys=True) if result.estimate else "",
               json.dumps(job.as_dict()))  # the parameters in the variant's order, as the job has them
        metrics = [(result.run_id, kernel, name, None if to_stored(v) is None else float(v),
                    result.units.get(f"{kernel}.{name}" if kernel else name, ""))
                   for kernel, values in result.split_metrics().items() for name, v in values.items()]
        artifacts = [(result.run_id, kind, path) for kind, path in result.artifacts.items()]
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute(f"INSERT INTO runs VALUES ({','.join('?' * len(row))})", row)
                self.conn.executemany("INSERT INTO metrics VALUES (?,?,?,?,?)", metrics)
                self.conn.executemany("INSERT INTO artifacts VALUES (?,?,?)", artifacts)
                self.conn.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.IntegrityError:
            raise StoreError(f"run {result.run_id} is stored already") from None
        except sqlite3.Error as exc:
            raise self._error(exc, f"store run {result.run_id}") from None
        return result.run_id

    # ---- reading ----------------------------------------------------------------------------

    def runs(self, where: str = "", args: tuple = ()) -> list[StoredRun]:
        """Runs (oldest first) with their metrics and artifacts; without `where`, the unfinished ones too."""
        if self.conn is None:
            return [] if where else self.unfinished()
        try:
            rows = self.conn.execute(f"SELECT * FROM runs {where} ORDER BY created, id", args).fetchall()
            found = {r[0]: self._row(r) for r in rows}
            if found:
                marks = ",".join("?" * len(found))
                for run_id, kernel, name, value, unit in self.conn.execute(
                        f"SELECT * FROM metrics WHERE run_id IN ({marks}) ORDER BY run_id, kernel, name", tuple(found)):
                    key = f"{kernel}.{name}" if kernel else name
                    found[run_id].metrics[key] = from_stored(value)
                    if unit:
                        found[run_id].units[key] = unit
                for run_id, kind, path in self.conn.execute(
                        f"SELECT * FROM artifacts WHERE run_id IN ({marks})", tuple(found)):
                    found[run_id].artifacts[kind] = path
        except sqlite3.Error as exc:
            raise self._error(exc, "read runs") from None
        for run in found.values():  # a results folder moved here from elsewhere: its runs' files are in it
            made, here = run.artifacts.get("run_dir"), self.root / "runs" / run.id
            if made and not Path(made).is_dir() and here.is_dir():
                run.moved_to(here)
        if where:
            return list(found.values())
        return sorted([*found.values(), *self.unfinished(set(found))], key=lambda r: (r.created, r.id))

    def unfinished(self, stored: set[str] | None = None) -> list[StoredRun]:
        """Unfinished runs whose record is in their folder but not in the database: in flight (a run's record is
        written at its start), or interrupted: its process was killed outright (RunResult.settled), or it was a
        sweep's worker that kept its run as interrupted when the sweep was killed before storing it."""
        folders = self.root / "runs"
        if not folders.is_dir():
            return []
        stored = set(self.ids()) if stored is None else stored
        out = []
        for folder in sorted(folders.iterdir()):
            path = folder / "result.json"
            if folder.name in stored or not path.is_file():
                continue
            try:
                data = json.loads(path.read_text())
                if data.get("status") not in ("running", "interrupted"):
                    continue  # a finished run kept out of the store (--no-store): the user's choice
                result = RunResult.from_dict(data).settled()
            except (OSError, ValueError, KeyError, TypeError):
                continue
            job = result.job
            out.append(StoredRun(**{f.name: getattr(result, f.name) for f in fields(RunResult)}, stored=False,
                                 runner=job.runner, config=job.config_name, config_key=job.config_key))
        return out

    @staticmethod
    def _row(r) -> StoredRun:
        environment = json.loads(r[15])
        if len(r) > 19 and r[19]:
            job = Job.from_dict(json.loads(r[19]))
        else:  # an older layout, without the job: the one its columns describe, as a format-1 result.json's
            job = Job.from_dict(migrate({"variant": r[2], "params": json.loads(r[3]), "backend": r[7], "seed": r[14],
                                         "problem": {"name": r[5], **json.loads(r[6])},
                                         "environment": environment})["job"])
        return StoredRun(run_id=r[0], created=r[1], job=job, fingerprint=r[4], runner=r[8], config=r[9],
                         config_key=r[10], config_hash=r[11], status=r[12], reason=r[13], environment=environment,
                         kernels=json.loads(r[16]), simflow_version=r[17],
                         estimate=json.loads(r[18]) if len(r) > 18 and r[18] else {})  # older layouts: shorter


    def ids(self) -> list[str]:
        if self.conn is None:
            return []
        try:
            return [r[0] for r in self.conn.execute("SELECT id FROM runs ORDER BY created, id")]
        except sqlite3.Error as exc:
            raise self._error(exc, "read runs") from None

    def cached(self, fingerprint: str, problem: Problem, backend: str, config_key: str,
               failed_too: bool = True, sample: str = "") -> str | None:
        """The newest stored run of this exact kernel, problem, backend and config, if any (one the user
        interrupted never counts; one that failed counts unless failed_too is False). A sampled estimate
        never answers for a whole run, and answers for another only with the same sample spec."""
        sql = ("SELECT id, status FROM runs WHERE fingerprint=? AND shape=? AND backend=? AND config_key=? AND "
               + ("CASE WHEN estimate='' THEN NULL ELSE json_extract(estimate, '$.spec') END = ?" if sample
                  else "estimate=''"))
        args = (fingerprint, shape_key(problem), backend, config_key, *([sample] if sample else []))
        try:
            rows = self.conn.execute(sql + " ORDER BY created DESC", args).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "read runs") from None
        for run_id, status in rows:
            if status == "passed" or (failed_too and status != "interrupted"):  # a stopped run is run again
                return run_id
        return None
