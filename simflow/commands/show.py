"""`simflow show`: one stored run: everything it recorded."""

from __future__ import annotations

import argparse

from .. import terminal
from .common import (
    _out,
    _output_args,
    _results,
    _results_arg,
    _stats_arg,
    command,
)


def _show_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    p.add_argument("run", help="a run id (or unique prefix) or a selector such as variant=shared,tile=16")
    p.add_argument("--all", action="store_true", help="every metric (default: the backend's main ones, per kernel)")
    _results_arg(p)
    _output_args(p)


@command("show", _show_args, help="one stored run: everything it recorded")
def cmd_show(args) -> int:
    from .. import api

    run = api.find_run(args.run, results=_results(args))
    _out(args, run.as_dict(), terminal.result_rows(run), terminal.show_text(run, args.all))
    return 0

