"""`simflow import-log`: any GPGPU-Sim log, from any application, stored as a `gpgpusim` run.

One record per log, with the per-kernel metrics `simflow sim` stores (kernel names from the log)
and the run's totals. The user's labels (`app=`, `variant=`, `config=`, anything) become the run's
parameters, so filters, `compare --by` and reports use them. The log is copied (gzip) into the
run's folder, so the record keeps it whatever happens to the original.

Nothing was checked against a reference: a complete log is stored as `passed` with a reason that
says so; an incomplete, aborted or mixed log keeps the parser's status and reason.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
from pathlib import Path

from ..errors import UserError
from ..job import Job
from ..kernels.problems import UNLABELLED, Problem
from ..kernels.values import Params
from ..results.folders import keep_result, new_run_folder, replace_with
from ..results.record import RunResult, utc_timestamp
from .config import INSTRUMENTATION
from .log import parse_file

# Options that only change what the simulator prints, left out of a log's config identity.
PRINT_ONLY = {*INSTRUMENTATION, "gpgpu_runtime_stat", "visualizer_enabled", "visualizer_outputfile",
              "visualizer_zlevel", "trace_sampling_core", "trace_sampling_memory_partition"}
STATUS_OF_LOG = {"complete": "passed", "stopped_at_limit": "stopped_at_limit", "aborted": "aborted",
                 "incomplete": "crashed", "mixed": "crashed", "not_simulated": "crashed", "empty": "crashed"}


def parse_labels(texts: list[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for text in texts:
        key, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not key or not value:
            raise UserError(f"--label takes KEY=VALUE (e.g. app=bfs or config=SM7_QV100), got {text!r}")
        labels[key] = value
    return labels


def config_identity(options: dict[str, str]) -> str:
    """What the simulator modelled, from the option dump it printed: two logs with the same options
    (print-only ones aside) ran the same config."""
    text = "\n".join(f"{k}={v}" for k, v in sorted(options.items()) if k not in PRINT_ONLY)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_changes(log_a: str | Path, log_b: str | Path, most: int = 8) -> str:
    """The modelled options two logs differ in, as '-name A -> B' (print-only ones aside); '' if none."""
    from .log_text import read_options

    a, b = read_options(log_a), read_options(log_b)
    missing = "(not set)"
    changes = [f"-{name} {a.get(name, missing)} -> {b.get(name, missing)}" for name in sorted(set(a) | set(b))
               if name not in PRINT_ONLY and a.get(name) != b.get(name)]
    more = f" and {len(changes) - most} more" if len(changes) > most else ""
    return ", ".join(changes[:most]) + more


def log_digest(path: Path) -> str:
    """An imported run's fingerprint: the hash of the log's bytes (as given: plain or gzip)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def stored_already(store, path: Path):
    """The stored run imported from a log with these bytes, or None."""
    found = [run for run in store.runs("WHERE fingerprint = ? AND backend = 'gpgpusim'", (log_digest(path),))
             if "imported_from" in run.environment]
    return found[-1] if found else None


def import_log(path: Path, labels: dict[str, str], config: str | None = None,
               results: Path | None = None, name: str = "") -> RunResult:
    """Store one log as a gpgpusim run; `name` is what it is called where it is not a file's (standard input)."""
    from .log_record import add_log, keep_intervals

    if not path.is_file():
        raise UserError(f"no such log file: {path}")
    log = parse_file(path)
    labels = dict(labels)
    stem = (name or path.name).removesuffix(".gz").removesuffix(".log")
    labels.setdefault("app", stem)
    variant = labels.get("variant", labels["app"])
    config_name = config or labels.get("config") or "as-logged"
    labels.setdefault("config", config_name)
    run_id, folder = new_run_folder(variant, results)
    problem = Problem.of_log(labels.get("problem", UNLABELLED))
    # the job another application's run stands for: its labels are the parameters, the config as named or logged
    job = Job(variant, Params(labels), problem, "gpgpusim", config=config_name, config_name=config_name,
              config_key=config_identity(log.options) if log.options else "")
    result = RunResult.of(job, STATUS_OF_LOG.get(log.status, "crashed"), log_digest(path),
                          kernels=list(dict.fromkeys(k.kernel for k in log.kernels)), run_id=run_id,
                          created=utc_timestamp())
    result.reason = ("imported log: the simulation completed; no output was checked (simflow did not make it)"
                     if log.status == "complete" else log.reason)
    result.environment.update(config=config_name, imported_from=name or str(path.resolve()))
    add_log(result, log)
    keep_intervals(result, log, folder)
    kept = folder / "sim.log.gz"
    _keep_gzipped(path, kept)
    result.artifacts.update(run_dir=str(folder), log=str(kept))
    if log.notes:
        result.environment["parse_notes"] = "; ".join(log.notes)[:2000]
    keep_result(result, folder)
    return result


def _keep_gzipped(source: Path, target: Path) -> None:
    """A copy of the log as gzip (copied as is when it is gzip already), written atomically."""
    with open(source, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"

    def write(tmp: Path) -> None:
        if gzipped:
            shutil.copyfile(source, tmp)
        else:
            with open(source, "rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)

    replace_with(target, write)
