"""`simflow check`: render, compile and run every variant on every backend present."""

from __future__ import annotations

import argparse

from .. import __version__, terminal
from .common import (
    _at_least,
    _out,
    _output_args,
    _problem,
    _problem_args,
    _results,
    _results_arg,
    _variants_dir_arg,
    command,
)


def _check_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    _problem_args(p)
    p.add_argument("--seed", type=int, default=0, help="the inputs' seed (default 0)")
    p.add_argument("--repeats", type=_at_least(1), default=10, help="timed launches per variant on a GPU (default 10)")
    _results_arg(p)
    _output_args(p, "the toolkits, the backends and a row per variant")


@command("check", _check_args, help="render, compile and run every variant on every backend present",
         epilog="exit status: 0 every variant passed on some backend, 2 one failed, 3 no backend could run them "
                "(each absent one is named, with how to get it)")
def cmd_check(args) -> int:
    from .. import api

    problem = _problem(args)
    printer = terminal.CheckTable() if args.format == "table" and args.output in (None, "-") else None
    if printer:
        print(f"simflow {__version__}: checking every variant on {problem.describe()}")
    report = api.check(problem, seed=args.seed, repeats=args.repeats, results=_results(args), progress=printer)
    if printer:
        print(printer.summary(report))
    else:
        _out(args, report.as_dict(), report.rows)
    return 2 if report.failed else 0 if report.ran else 3

