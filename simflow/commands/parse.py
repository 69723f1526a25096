"""`simflow parse`: per-kernel stats from GPGPU-Sim logs (plain or .gz)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import terminal
from ..errors import UserError
from ..results.folders import replace_with
from .common import (
    _out,
    _output_args,
    _stats_arg,
    command,
)


def _parse_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    p.add_argument("logs", nargs="*", metavar="LOG", help="the simulator's stdout+stderr (plain or .gz; '-': standard "
                                                          "input); several logs give one table, a row per kernel per "
                                                          "log")
    _output_args(p, "run facts and one record per kernel launch (several logs: {\"logs\": [...]})")
    p.add_argument("--csv", metavar="FILE", help=argparse.SUPPRESS)  # before --format: the same as -f csv -o FILE
    p.add_argument("--all", action="store_true", help="every stat of the catalogue, not the summary")
    p.add_argument("--aggregate", action="store_true",
                   help="one row per kernel name: launches' counts summed, rates weighted by cycles")
    p.add_argument("--catalogue", action="store_true", help="list the stats simflow reads, their kind and unit")


@command("parse", _parse_args, help="per-kernel stats from GPGPU-Sim logs (plain or .gz)")
def cmd_parse(args) -> int:
    from .. import api
    from ..sim.catalogue import iter_catalogue

    if args.catalogue:
        rows = list(iter_catalogue())
        _out(args, rows, rows)
        return 0
    if not args.logs:
        raise UserError("simflow parse needs a LOG file ('-' for standard input), or --catalogue")
    if args.csv == "-":  # the older --csv FILE, given standard output: --format csv
        args.format, args.csv = "csv", None
    rows, logs = api.parse_rows(*args.logs, aggregate=args.aggregate)  # no pandas unless a format needs it
    code = 0 if all(facts["status"] == "complete" for facts in logs) else 2
    args.exit_code = code  # what a reader that goes away early (| head) still gets
    for line in terminal.parse_notes(rows, logs):
        print(line, file=sys.stderr)
    shown = rows if len(logs) > 1 else [{k: v for k, v in r.items() if k != "log"} for r in rows]
    if args.csv:  # the older spelling of --format csv -o FILE, kept beside a table or JSON on standard output
        from ..tables import csv_text

        replace_with(args.csv, lambda tmp: Path(tmp).write_text(csv_text(shown)))
    _out(args, lambda: json.loads(terminal.parse_json(rows, logs)), shown,
         lambda: terminal.parse_text(rows, logs, args.all))
    return code

