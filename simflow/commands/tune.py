"""`simflow tune`: search variants' parameters for the fastest passing configuration of a layer."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from ..errors import UserError
from ..kernels.problems import suite
from ..registry import backend_class, backend_names
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


def _tune_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    p.add_argument("names", nargs="*", metavar="VARIANT", help="the variants whose spaces are searched")
    p.add_argument("--all", action="store_true", help="every variant with a configuration in --precision")
    _problem_args(p)
    p.add_argument("--suite", help="tune every layer of a suite, one after another (simflow problems --suite)")
    p.add_argument("--backend", default="gpu", choices=backend_names(),
                   help="where each configuration is timed (default gpu; a backend that times runs)")
    p.add_argument("--config", default="", help="simulator config (for a backend that takes one)")
    p.add_argument("--precision", default="float32", choices=["float32", "tf32", "float16", "bfloat16"],
                   help="the least precise arithmetic allowed: configurations computing in it or a finer one compete "
                        "(tf32 admits float32, float16 both, bfloat16 tf32 and float32 but not float16, whose range is "
                        "smaller; default float32)")
    p.add_argument("--strategy", default="tpe", choices=["tpe", "random", "exhaustive"],
                   help="Optuna's TPE (default) or random sampling, or the whole grid in order")
    p.add_argument("--runs", type=_at_least(1), help="stop after this many configurations (per layer)")
    p.add_argument("--time", type=float, help="stop after this many seconds (per layer)")
    p.add_argument("--seed", type=int, default=0, help="the optimiser's and the inputs' seed")
    p.add_argument("--workers", "-j", type=_at_least(1), default=1,
                   help="configurations run at once (default 1); a simulator backend only: GPU timings are taken "
                        "one at a time")
    _results_arg(p)
    _output_args(p)


@command("tune", _tune_args, help="search variants' parameters for the fastest passing configuration of a layer")
def cmd_tune(args) -> int:
    from .. import api

    if not backend_class(args.backend).speed_metric:
        timed = [n for n in backend_names() if backend_class(n).speed_metric]
        raise UserError(f"tune compares times, and backend {args.backend} times nothing; use one of: "
                        f"{', '.join(timed)}")

    live = args.format == "table" and sys.stderr.isatty()  # progress on a terminal only

    def say(text: str, trial=None, state=None) -> None:
        if live:
            print(terminal.trial_text(trial, state) if trial else text, file=sys.stderr)

    if args.output and args.format == "table":
        raise UserError("tune prints its table as it goes; -o takes --format markdown, csv or json")
    layers = suite(args.suite) if args.suite else [_problem(args)]
    done = api.tune(layers, args.names, every=args.all, batch=args.batch, backend=args.backend, config=args.config,
                    precision=args.precision, strategy=args.strategy, runs=args.runs, time_s=args.time,
                    seed=args.seed, results=_results(args), workers=args.workers, progress=say,
                    layer_done=(lambda result: print(terminal.tune_text(result))) if args.format == "table" else None)
    if args.format != "table":
        rows = [{"layer": r.problem.name, **{k: v for k, v in t.items() if k != "params"},
                 "params": terminal.params_text(t["params"])} for r in done for t in r.as_dict()["trials"]]
        _out(args, [r.as_dict() for r in done] if len(done) > 1 else done[0].as_dict(), rows)
    return 0 if all(r.best for r in done) else 2

