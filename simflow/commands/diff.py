"""`simflow diff`: two runs metric by metric: delta, ratio, better/worse/same."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from .common import (
    _emit,
    _format_args,
    _metric_list,
    _results,
    _stats_arg,
    _threshold_arg,
    command,
)


def _diff_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    p.add_argument("a", help="run id or selector (the reference)")
    p.add_argument("b", help="run id or selector")
    p.add_argument("--metrics", help="comma-separated metric names (default: every metric both have)")
    _threshold_arg(p)
    p.add_argument("--force", action="store_true", help="show the table even when the runs are not comparable")
    _format_args(p)


@command("diff", _diff_args, help="two runs metric by metric: delta, ratio, better/worse/same")
def cmd_diff(args) -> int:
    from .. import api
    from ..analysis.compare import regressions
    from ..tables import render

    frame = api.diff(args.a, args.b, metrics=_metric_list(args), threshold=args.threshold / 100, force=args.force,
                     results=_results(args))
    title = terminal.diff_title(*frame.attrs["runs"], frame.attrs["not_comparable"])
    _emit(terminal.diff_text(frame, title, args.threshold / 100) if args.format == "table"
          else render(frame, args.format, title), args.output)
    worse = regressions(frame)
    if args.fail_on_regression and worse:
        print(f"simflow: {len(worse)} regression(s): " + "; ".join(worse), file=sys.stderr)
        return 4
    return 0

