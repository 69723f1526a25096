"""`simflow problems`: list the problem presets, or a suite of layers (--suite)."""

from __future__ import annotations

import argparse

from .. import terminal
from ..kernels.problems import SUITES
from .common import (
    _out,
    _output_args,
    command,
)


def _problems_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="list a suite's layers instead of the presets: " + ", ".join(SUITES))
    _output_args(p)


@command("problems", _problems_args, help="list the problem presets, or a suite of layers (--suite)")
def cmd_problems(args) -> int:
    from .. import api

    rows, gflop = api.problems(args.suite)
    _out(args, rows, rows, terminal.problems_text(rows, args.suite, gflop))
    return 0

