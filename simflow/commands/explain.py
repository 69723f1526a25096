"""`simflow explain`: why B takes more or fewer cycles than A: a ranked, number-backed account."""

from __future__ import annotations

import argparse

from .common import (
    _emit,
    _output_args,
    _results,
    _results_arg,
    _stats_arg,
    command,
)


def _explain_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    p.add_argument("a", help="run id or selector (the reference)")
    p.add_argument("b", help="run id or selector")
    p.add_argument("--force", action="store_true", help="explain even when the runs are not comparable")
    p.add_argument("--kernel", metavar="NAME[,NAME_B]",
                   help="explain one kernel instead of the runs' totals: NAME in both runs, or NAME of A against "
                        "NAME_B of B (give the same run twice to explain two kernels of one process)")
    _output_args(p)
    _results_arg(p)


@command("explain", _explain_args, help="why B takes more or fewer cycles than A: a ranked, number-backed account")
def cmd_explain(args) -> int:
    from .. import api
    from ..analysis.explain import format_explanation

    found = api.explanation(args.a, args.b, force=args.force, kernel=args.kernel, results=_results(args))
    _emit(format_explanation(found, args.format), args.output)
    return 0

