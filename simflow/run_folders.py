"""Run folders: every run's files under <results>/runs/<run id>/, and the atomic writes that keep them.

A folder holds what a run needs and leaves (rendered source, inputs, program, log, result.json);
a reader sees a file whole or not at all.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from .resources import results_dir
from .results import RunResult


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


def write_json(path: Path, data: dict) -> None:
    """Atomically: a reader sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def write_csv(path: Path, rows: list[dict]) -> None:
    """Rows of one shape as CSV, atomically (the columns are the first row's keys)."""
    import csv

    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


def keep_result(result: RunResult, folder: Path) -> None:
    """result.json in the run folder, atomically."""
    result.artifacts.setdefault("result", str(folder / "result.json"))
    write_json(folder / "result.json", result.to_dict())
