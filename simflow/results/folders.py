"""Run folders: every run's files under <results>/runs/<run id>/, and the atomic writes that keep them.

A folder holds what a run needs and leaves (rendered source, inputs, program, log, result.json);
a reader sees a file whole or not at all.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ..resources import results_dir
from .record import RunResult


def new_run_folder(variant: str, root: Path | None = None) -> tuple[str, Path]:
    """A fresh folder <results>/runs/<time>-<variant>-<random> and its name, the run id."""
    runs = (root or results_dir()).resolve() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    while True:
        run_id = f"{stamp}-{variant}-{os.urandom(3).hex()}"
        try:
            (runs / run_id).mkdir()
            return run_id, runs / run_id
        except FileExistsError:
            continue


def replace_with(path: str | Path, write: Callable[[Path], object]) -> None:
    """Make `path` by `write(tmp)` into a temporary file beside it, then rename: a reader sees the old file or the
    new one, an existing file is never changed by a failed write (a full disk), nothing temporary is left, and
    the error names `path`, not the temporary file or an input. Only a regular file (or none) is replaced so: a
    symlink's target is written, not the link; a device, FIFO or socket (-o /dev/null, as root too) is written in
    place and never renamed over; an existing file keeps its mode."""
    path = Path(path)
    if path.is_symlink():
        path = path.resolve()
    if path.exists() and not path.is_file():
        try:
            write(path)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        return
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> None:
    replace_with(path, lambda tmp: tmp.write_text(text))


def write_json(path: Path, data: dict) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")


def write_csv(path: Path, rows: list[dict]) -> None:
    """Rows of one shape as CSV, atomically (the columns are the first row's keys)."""
    import csv

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else [])
            writer.writeheader()
            writer.writerows(rows)

    replace_with(path, write)


def keep_result(result: RunResult, folder: Path) -> None:
    """result.json in the run folder, atomically."""
    result.artifacts.setdefault("result", str(folder / "result.json"))
    write_json(folder / "result.json", result.to_dict())
