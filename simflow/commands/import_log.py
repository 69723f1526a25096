"""`simflow import-log`: store GPGPU-Sim logs from any application as gpgpusim runs."""

from __future__ import annotations

import argparse
import sys

from .common import (
    _out,
    _output_args,
    _results,
    _results_arg,
    _stats_arg,
    command,
)


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

