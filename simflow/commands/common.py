"""What the subcommands share: the registry (@command), argument groups, and how results are written."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import terminal
from ..kernels.problems import DEFAULT_PROBLEM, PRESETS, Problem, get_problem
from ..results.folders import write_text

COMMANDS: dict = {}  # name -> (handler, add_parser options, function adding its arguments), in help order


def command(name: str, arguments, **options):
    """A subcommand: its arguments (a function of the subparser) stand above its handler."""
    def register(handler):
        COMMANDS[name] = (handler, options, arguments)
        return handler
    return register


def _at_least(low: int):
    """An argparse type: a whole number >= low (a usage error, exit 1, otherwise)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be {low} or more, got {value}")
        return value
    return parse


def _problem_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--problem", "-p", help=f"preset: {', '.join(PRESETS)} (default {DEFAULT_PROBLEM})")
    parser.add_argument("--shape", help="a full shape B,C,M,H,W,K[,pad[,stride]] instead of a preset")
    parser.add_argument("--batch", "-b", type=_at_least(1), help="override the batch size B")


def _variants_dir_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variants", action="append", metavar="DIR",
                        help="a folder of your own variants, NAME.cu.j2 + NAME.toml (repeatable; also "
                             "SIMFLOW_VARIANTS); docs/variants-of-your-own.md")


def _variant_args(parser: argparse.ArgumentParser, best: bool = False) -> None:
    parser.add_argument("variant", nargs="?" if best else None,
                        help="a variant: 'simflow variants' lists them with their parameters"
                             + (" (with --best: optional)" if best else ""))
    parser.add_argument("--param", "-P", action="append", metavar="NAME=VALUE",
                        help="a template parameter (repeatable); 'simflow variants' lists them")
    if best:
        parser.add_argument("--best", action="store_true",
                            help="the configuration 'simflow tune' found fastest for this layer (of VARIANT if "
                                 "named; --param still overrides)")
        parser.add_argument("--precision", default="float32", choices=["float32", "tf32", "float16", "bfloat16"],
                            help="with --best: the precision it was tuned in (default float32)")


def _results_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", help="results folder (default: $SIMFLOW_RESULTS or ./simflow-results)")


def _storing_args(parser: argparse.ArgumentParser) -> None:
    """For commands that make a run: where it goes, and whether it is stored."""
    _results_arg(parser)
    parser.add_argument("--no-store", action="store_true", help="keep the run folder but do not store the record")


def _format_args(parser: argparse.ArgumentParser, regressions: bool = True) -> None:
    _output_args(parser, html=True)
    if regressions:
        parser.add_argument("--fail-on-regression", action="store_true",
                            help="exit 4 when something got worse (diff) or slower than the baseline (compare)")
    _results_arg(parser)


def _output_args(parser: argparse.ArgumentParser, what: str = "", html: bool = False) -> None:
    """One way for every command that prints a table: --format (--json is --format json) and -o FILE or -o -."""
    formats = ["table", "markdown", "csv", "json", *(["html"] if html else [])]
    parser.add_argument("--format", "-f", default="table", choices=formats,
                        help="table: plain text fitted to the terminal (COLUMNS=N; columns left out are named); "
                             f"{', '.join(formats[1:])}: every column (default table)")
    parser.add_argument("--json", dest="format", action="store_const", const="json",
                        help="the same as --format json" + (f": {what}" if what else ""))
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write to FILE (replaced whole, or left as it was if the write fails); '-' or none: "
                             "standard output")


def _filters_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("filters", nargs="*", metavar="KEY=VALUE",
                        help="only runs matching every one: variant, backend, problem, config, status, id, or a "
                             "parameter or label (tile=16, app=bfs)")


def _params(args) -> dict:
    from ..kernels.variants import parse_param_args

    return parse_param_args(args.param)


def _problem(args) -> Problem:
    name = args.problem if args.problem is not None or args.shape else DEFAULT_PROBLEM
    return get_problem(name, shape=args.shape, batch=args.batch)


def _metric_list(args) -> list[str] | None:
    """--metrics a,b,c as a list (None: the command's default metrics)."""
    return [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None


def _threshold_arg(parser: argparse.ArgumentParser) -> None:
    """One meaning in diff and compare: a change within PCT %% is noise ('same'); past it, better or worse
    (in compare, a group more than PCT %% slower than the baseline is a regression)."""
    from ..analysis.compare import DEFAULT_THRESHOLD

    parser.add_argument("--threshold", type=float, default=100 * DEFAULT_THRESHOLD, metavar="PCT",
                        help=f"%% change within which two values count as the same (default "
                             f"{100 * DEFAULT_THRESHOLD:g}; a change within its unit's floor, such as 4 cycles of a "
                             "latency, is the same too)")


def _stats_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stats", action="append", default=[], metavar="FILE",
                        help="a TOML file of your own simulator stats (repeatable; also SIMFLOW_STATS, "
                             "files separated by ':'); docs/stats.md")


def _results(args) -> Path:
    """The results folder: --results, else SIMFLOW_RESULTS, else ./simflow-results (put in the settings by main)."""
    from ..resources import results_dir

    return results_dir()


def _say(text: str) -> None:
    print(f"simflow: {text}", file=sys.stderr)


def _exit_code(result) -> int:
    """0 passed, 2 the run did not pass, 130 the user stopped it (its record is stored all the same)."""
    if result.status == "interrupted":
        print(f"simflow: interrupted; run {result.run_id} is kept as 'interrupted' in "
              f"{result.artifacts.get('run_dir', 'its run folder')}", file=sys.stderr)
        return 130
    return 0 if result.passed else 2


def _store(args, read_only: bool = False):
    """The results store; commands that only read open it read-only (nothing is created)."""
    from ..results.store import Store

    return Store(_results(args), read_only=read_only)


def _emit(text: str, output: str | None) -> None:
    """Standard output, or FILE written atomically ('-' is standard output)."""
    if output and output != "-":
        write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _out(args, data, rows: list[dict], text: str | None = None, title: str = "") -> None:
    """What a command prints, in its --format: `data` as JSON, `rows` as markdown or CSV (and as the fitted table
    unless `text` is the table form), to -o. `data` and `text` may be functions, called only for their format
    (a large log's JSON and table are not made for its CSV)."""
    from ..tables import csv_text, render

    text = text() if callable(text) and args.format == "table" else (None if callable(text) else text)
    if args.format == "json":
        body = json.dumps(data() if callable(data) else data, indent=2)
    elif args.format == "csv":  # without pandas: `simflow parse` of a 1 GB log stays small
        body = csv_text(rows)
    elif args.format in ("markdown", "html"):
        import pandas as pd

        body = render(pd.DataFrame(rows), args.format, title)
    else:
        body = text if text is not None else ((title + "\n") if title else "") + terminal.table(rows)
    _emit(body, args.output)

