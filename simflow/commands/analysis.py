"""Subcommands that read stored runs and logs: runs, show, diff, explain, compare, correlate, import, import-log,
report, parse."""

from __future__ import annotations

import argparse
import json
import sys

from .. import terminal
from ..errors import UserError
from ..results.folders import replace_with
from .common import (
    _at_least,
    _emit,
    _filters_arg,
    _format_args,
    _metric_list,
    _out,
    _output_args,
    _results,
    _results_arg,
    _stats_arg,
    _threshold_arg,
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


def _runs_args(p: argparse.ArgumentParser) -> None:
    _filters_arg(p)
    p.add_argument("--last", type=_at_least(1), help="only the newest N")
    p.add_argument("--parts", action="store_true", help="also the probes and samples of sampled runs (parts of them)")
    _results_arg(p)
    _output_args(p)


@command("runs", _runs_args, help="list stored runs (filters: KEY=VALUE, e.g. variant=shared tile=16)")
def cmd_runs(args) -> int:
    from .. import api

    runs = api.find_runs(*args.filters, results=_results(args), last=args.last, parts=args.parts)
    rows = terminal.runs_rows(runs)
    _out(args, [r.as_dict() for r in runs], rows, terminal.table(rows, priority=("status", "figure", "variant")))
    return 0


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


def _import_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="a run folder, or its result.json")
    _results_arg(p)
    _output_args(p)


@command("import", _import_args, help="store runs from their result.json (a run folder or the file)")
def cmd_import(args) -> int:
    from .. import api

    outcomes, where = api.import_runs(*args.paths, results=_results(args))
    rows = [{"id": run_id, "outcome": outcome} for run_id, outcome in outcomes]
    _out(args, rows, rows)
    stored = sum(outcome in ("stored", "recovered") for _, outcome in outcomes)
    failed = [(run_id, outcome) for run_id, outcome in outcomes if outcome.startswith("not importable")]
    for run_id, outcome in failed:
        print(f"simflow: {run_id}: {outcome}", file=sys.stderr)
    print(f"{stored} run(s) stored in {where}" + (f"; {len(failed)} not importable (above)" if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0


def _import_log_args(p: argparse.ArgumentParser) -> None:
    _stats_arg(p)
    p.add_argument("logs", nargs="+", metavar="LOG", help="GPGPU-Sim stdout+stderr, plain or .gz ('-': standard "
                                                          "input)")
    p.add_argument("--label", "-l", action="append", default=[], metavar="KEY=VALUE",
                   help="a label for every log given (repeatable): app=, variant=, config=, problem= or any key; "
                        "labels act as parameters in filters, compare --by and reports (default app = file name). "
                        "problem=NAME says what the log ran: runs are compared only with runs of the same problem, "
                        "and a log without it is compared with nothing")
    p.add_argument("--again", action="store_true", help="store a log again although the same log (the same bytes) "
                                                        "is stored already (e.g. under other labels)")
    p.add_argument("--config", help="the config's name (default: the config= label, else 'as-logged'); logs whose "
                                    "printed options differ are never mixed in one comparison table")
    _results_arg(p)
    _output_args(p)


@command("import-log", _import_log_args, help="store GPGPU-Sim logs from any application as gpgpusim runs")
def cmd_import_log(args) -> int:
    from .. import api
    from ..results.store import StoredRun
    from ..sim.log_import import parse_labels

    labels = parse_labels(args.label)
    done = api.import_logs(*args.logs, labels=labels, config=args.config, again=args.again, results=_results(args))
    for name, result in zip(args.logs, done, strict=True):
        if isinstance(result, StoredRun):
            print(f"simflow: {name} is stored already, as run {result.id} (labels "
                  f"{','.join(f'{k}={v}' for k, v in result.params.items())}); nothing stored (--again stores it "
                  "again)", file=sys.stderr)
            continue
        for note in filter(None, result.environment.get("parse_notes", "").split("; ")):
            print(f"simflow: note: {name}: {note}", file=sys.stderr)
    if "problem" not in labels and not all(isinstance(r, StoredRun) for r in done):
        print("simflow: note: no problem= label: what these logs ran is unknown, so compare, diff and explain set "
              "them against no other run (label it: -l problem=NAME)", file=sys.stderr)
    data = [{"id": r.run_id, "log": r.artifacts["log"], "status": r.status, "reason": r.reason,
             "kernels": r.kernels, "labels": r.params, "stored": not isinstance(r, StoredRun)} for r in done]
    rows = [{"id": r.run_id, "log": name, "status": r.status, "kernels": len(r.kernels),
             "stored": "already" if isinstance(r, StoredRun) else "now", "reason": r.reason}
            for name, r in zip(args.logs, done, strict=True)]
    _out(args, data, rows)
    return 0 if all(r.status == "passed" for r in done) else 2


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
        import pandas as pd

        replace_with(args.csv, lambda tmp: pd.DataFrame(shown).to_csv(tmp, index=False))
    _out(args, json.loads(terminal.parse_json(rows, logs)), shown, terminal.parse_text(rows, logs, args.all))
    return code

