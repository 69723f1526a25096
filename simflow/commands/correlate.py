"""`simflow correlate`: simulator vs hardware counters over variants run both ways: Pearson, rank agreement, mean
relative error."""

from __future__ import annotations

import argparse

from .common import (
    _emit,
    _filters_arg,
    _format_args,
    _metric_list,
    _results,
    command,
)


def _correlate_args(p: argparse.ArgumentParser) -> None:
    _filters_arg(p)
    p.add_argument("--metrics", help="comma-separated simulator stat names (default: every aligned one)")
    _format_args(p, regressions=False)


@command("correlate", _correlate_args, help="simulator vs hardware counters over variants run both ways: Pearson, "
                                         "rank agreement, mean relative error")
def cmd_correlate(args) -> int:
    from .. import api
    from ..tables import render

    table, points = api.correlate(*args.filters, metrics=_metric_list(args), results=_results(args))
    _emit(render(table, args.format, f"simulator vs hardware counters over {points['group'].nunique()} variants"),
          args.output)
    return 0

