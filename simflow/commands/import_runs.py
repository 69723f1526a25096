"""`simflow import`: store runs from their result.json (a run folder or the file)."""

from __future__ import annotations

import argparse
import sys

from .common import (
    _out,
    _output_args,
    _results,
    _results_arg,
    command,
)


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="a run folder, or its result.json")
    _results_arg(p)
    _output_args(p)


@command("import", _import_args, help="store runs from their result.json (a run folder or the file)")
def cmd_import(args) -> int:
    from .. import api

    outcomes, where = api.import_runs(*args.paths, results=_results(args))
    rows = [{"id": run_id, "outcome": outcome} for run_id, outcome in outcomes]
    _out(args, rows, rows)
    stored = sum(outcome in ("stored", "recovered") for _, outcome in outcomes)
    failed = [(run_id, outcome) for run_id, outcome in outcomes if outcome.startswith("not importable")]
    for run_id, outcome in failed:
        print(f"simflow: {run_id}: {outcome}", file=sys.stderr)
    print(f"{stored} run(s) stored in {where}" + (f"; {len(failed)} not importable (above)" if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0

