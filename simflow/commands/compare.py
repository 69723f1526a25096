"""`simflow compare`: many runs side by side, one row per group, against a baseline."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from .common import (
    _emit,
    _filters_arg,
    _format_args,
    _metric_list,
    _results,
    _stats_arg,
    _threshold_arg,
    command,
)


def _compare_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    _filters_arg(p)
    p.add_argument("--by", default="variant", help="group key(s), comma-separated (variant, tile, config, ...)")
    p.add_argument("--metrics", help="comma-separated metric names (default: the backend's main ones)")
    p.add_argument("--baseline", help="the group the others are divided by (default: the first)")
    _threshold_arg(p)
    p.add_argument("--all-statuses", action="store_true", help="also runs that did not pass (default: passed only)")
    p.add_argument("--force", action="store_true", help="one table even across backends, configs and problems")
    _format_args(p)


@command("compare", _compare_args, help="many runs side by side, one row per group, against a baseline")
def cmd_compare(args) -> int:
    from .. import api

    result = api.comparison(*args.filters, by=args.by.split(","), metrics=_metric_list(args), baseline=args.baseline,
                            all_statuses=args.all_statuses, force=args.force, results=_results(args))

    text = terminal.comparison_text(result, args.format, args.by, args.baseline)
    _emit(text, args.output)
    for line in (result.split, result.left_out, *(f"simflow: note: {d}" for d in result.disagree)):
        if line:
            print(line, file=sys.stderr)
    worse = result.regressions(args.threshold / 100)
    if args.fail_on_regression and worse:
        print(f"simflow: {len(worse)} group(s) slower than the baseline: " + "; ".join(worse), file=sys.stderr)
        return 4
    return 0

