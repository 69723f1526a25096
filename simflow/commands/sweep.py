"""`simflow sweep`: run a TOML sweep (variants x params x problems x backends x configs)."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from .common import (
    _at_least,
    _out,
    _output_args,
    _results,
    _results_arg,
    _stats_arg,
    _variants_dir_arg,
    command,
)


def _sweep_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    _stats_arg(p)
    p.add_argument("file", help="the sweep's TOML file (docs/results.md, 'Sweeps')")
    p.add_argument("--workers", "-j", type=_at_least(1), help="parallel runs (default: the number of cores)")
    p.add_argument("--executor", default="local", choices=["local", "dask", "slurm", "pbs"],
                   help="local processes (default), a Dask scheduler, or Slurm / PBS jobs through dask-jobqueue")
    p.add_argument("--scheduler", help="a Dask scheduler address (with --executor dask)")
    p.add_argument("--retry-failed", action="store_true", help="run again jobs whose stored run did not pass")
    p.add_argument("--dry-run", action="store_true", help="list the jobs and what the store already has")
    _results_arg(p)
    _output_args(p)


@command("sweep", _sweep_args, help="run a TOML sweep (variants x params x problems x backends x configs)")
def cmd_sweep(args) -> int:
    from .. import api

    done = api.sweep(args.file, workers=args.workers, executor=args.executor, scheduler=args.scheduler,
                     retry_failed=args.retry_failed, dry_run=args.dry_run, quiet=args.format != "table",
                     results=_results(args))
    if args.dry_run:
        rows = terminal.sweep_plan_rows(done.sweep, done.plan)
        _out(args, rows, rows, terminal.sweep_plan_text(done.sweep, done.plan))
        return 0
    if done.sampled is not None:
        data, text = terminal.sampled_sweep(done.sweep, done.sampled, done.wall_s)
        _out(args, data, data["estimates"], text)
        if any(o.interrupted for o in done.sampled):
            print("simflow: sweep interrupted; the runs in flight are stored as 'interrupted', the estimates made are "
                  "stored; run the sweep again to resume", file=sys.stderr)
            return 130
        return 0 if all(o.result for o in done.sampled) else 2
    report = done.report
    _out(args, report.as_dict(), terminal.sweep_rows(report), terminal.sweep_text(report))
    if report.interrupted:
        print(f"simflow: sweep interrupted; the runs in flight are stored as 'interrupted', {len(report.stored)} "
              "run(s) recorded; run the sweep again to resume", file=sys.stderr)
        return 130
    return 0 if not report.failed and not report.errors else 2

