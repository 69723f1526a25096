"""`simflow runs`: list stored runs (filters: KEY=VALUE, e.g. variant=shared tile=16)."""

from __future__ import annotations

import argparse

from .. import terminal
from .common import (
    _at_least,
    _filters_arg,
    _out,
    _output_args,
    _results,
    _results_arg,
    command,
)


def _runs_args(p: argparse.ArgumentParser) -> None:
    _filters_arg(p)
    p.add_argument("--last", type=_at_least(1), help="only the newest N")
    p.add_argument("--parts", action="store_true", help="also the probes and samples of sampled runs (parts of them)")
    _results_arg(p)
    _output_args(p)


@command("runs", _runs_args, help="list stored runs (filters: KEY=VALUE, e.g. variant=shared tile=16)")
def cmd_runs(args) -> int:
    from .. import api

    runs = api.find_runs(*args.filters, results=_results(args), last=args.last, parts=args.parts)
    rows = terminal.runs_rows(runs)
    _out(args, [r.as_dict() for r in runs], rows, terminal.table(rows, priority=("status", "figure", "variant")))
    return 0

