"""`simflow run`, `simflow sim` and `simflow profile`: one variant on a backend (the GPU, the simulator, the GPU under
Nsight Compute)."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from ..errors import UserError
from ..job import RUN_OPTIONS
from ..registry import backend_names
from .common import (
    _at_least,
    _exit_code,
    _out,
    _output_args,
    _params,
    _problem,
    _problem_args,
    _results,
    _say,
    _stats_arg,
    _storing_args,
    _variant_args,
    _variants_dir_arg,
    command,
)


def _option_args(p: argparse.ArgumentParser, defaults: dict) -> None:
    """The run options (simflow.job.RUN_OPTIONS) as flags; unset ones keep the job's defaults."""
    for option in RUN_OPTIONS:
        flag, default = "--" + option.flag.replace("_", "-"), defaults.get(option.field)
        if option.kind is bool:
            p.add_argument(flag, dest=option.api, action="store_true", help=option.help)
        elif option.kind is str:
            p.add_argument(flag, dest=option.api, choices=option.choices or None, metavar=option.metavar,
                           default=default, help=option.help)
        else:  # a whole number out of bounds is a usage error; other numbers are checked where the job is made
            kind = _at_least(int(option.least)) if option.kind is int and option.least is not None else option.kind
            p.add_argument(flag, dest=option.api, type=kind, default=default,
                           metavar=option.metavar or option.flag.upper(), help=option.help)


def _run_args(p: argparse.ArgumentParser, backend: str = "gpu") -> None:
    """One set of arguments for every backend; `sim` and `profile` are `run` with another default backend."""
    _variants_dir_arg(p)
    _stats_arg(p)
    _variant_args(p, best=True)
    _problem_args(p)
    p.add_argument("--backend", default=backend, choices=backend_names(),
                   help=f"where it runs (default {backend}): gpu (PyCUDA), gpgpusim (the simulator), gpu-ncu "
                        "(Nsight Compute counters under the simulator's names)")
    _option_args(p, {"timeout_s": 1800} if backend == "gpu-ncu" else {})
    p.add_argument("--config", "-c", default="",
                   help="simulator config: a name from gpgpusim_configs/ or the path of an overlay .toml "
                        "(default: the backend's)")
    p.add_argument("--sample", nargs="?", const="default", metavar="W1,W2,W3[;scale=K]",
                   help="estimate the whole layer from three simulated batches of about W1 < W2 < W3 waves of "
                        "thread blocks (default: the variant's own, 1,2,3 for most, 2,3,5 for regtile), with an "
                        "error bound per metric; the record is marked "
                        "sampled. The samples run on the GPU cut to 1/K of its SMs and memory channels, K chosen "
                        "for the layer unless given (scale=1: the whole GPU)")
    p.add_argument("--workers", "-j", type=_at_least(1),
                   help="with --sample: simulations at once (default: the number of cores)")
    _storing_args(p)
    _output_args(p, "one object: status, metrics, log, ...")


@command("run", _run_args, help="build, run, check and measure a variant on a backend (--backend; default the GPU)")
def cmd_run(args) -> int:
    from .. import api

    problem = _problem(args)  # a config, image or sample a backend does not take: refused by api.run (Job.make)
    if args.sample is not None and args.no_store:
        raise UserError("--sample stores its sample runs and the estimate (they are its cache); drop --no-store")
    options = {o.api: getattr(args, o.api) for o in RUN_OPTIONS}
    options = {k: v for k, v in options.items() if v is not None and v is not False}  # unset: the job's default
    result = api.run(args.variant, problem, backend=args.backend, params=_params(args), best=args.best,
                     precision=args.precision, config=args.config, sample=args.sample, workers=args.workers, **options,
                     results=_results(args), store=not args.no_store,
                     progress=_say if args.format == "table" else None,
                     watch=terminal.LiveSimulation if args.format == "table" and sys.stderr.isatty() else None,
                     on_store_error=lambda text: print(f"simflow: warning: {text}", file=sys.stderr))
    _out(args, {**result.to_dict(), "log": result.artifacts.get("log")}, terminal.result_rows(result),
         terminal.run_text(result))
    return _exit_code(result)


@command("sim", lambda p: _run_args(p, "gpgpusim"),
         help="simflow run --backend gpgpusim: simulate a variant under GPGPU-Sim, check it and show its stats")
def cmd_sim(args) -> int:
    return cmd_run(args)


@command("profile", lambda p: _run_args(p, "gpu-ncu"),
         help="simflow run --backend gpu-ncu: hardware counters of a variant on the GPU (Nsight Compute), under "
              "the simulator's stat names")
def cmd_profile(args) -> int:
    return cmd_run(args)

