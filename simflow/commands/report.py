"""`simflow report`: an HTML + markdown report with tables and plots of stored runs."""

from __future__ import annotations

import argparse

from ..errors import UserError
from .common import (
    _filters_arg,
    _metric_list,
    _results,
    _results_arg,
    _stats_arg,
    command,
)


def _report_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    _filters_arg(p)
    p.add_argument("--dir", "-d", help="the folder to write index.html, report.md and the figures into")
    p.add_argument("-o", "--output", help=argparse.SUPPRESS)  # the older spelling of --dir
    p.add_argument("--by", default="variant", help="group key(s), comma-separated")
    p.add_argument("--metrics", help="comma-separated metric names")
    p.add_argument("--baseline", help="the group the others are compared with")
    p.add_argument("--all-statuses", action="store_true",
                   help="also runs that did not pass, in the tables and listed with their reasons")
    _results_arg(p)


@command("report", _report_args, help="an HTML + markdown report with tables and plots of stored runs")
def cmd_report(args) -> int:
    from .. import api

    folder = args.dir or args.output
    if not folder:
        raise UserError("simflow report needs the folder to write into: --dir DIR (-d DIR)")
    for path in api.report(*args.filters, output=folder, by=args.by.split(","), metrics=_metric_list(args),
                           baseline=args.baseline, all_statuses=args.all_statuses, results=_results(args)):
        print(path)
    return 0

