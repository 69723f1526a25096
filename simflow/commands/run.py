"""`simflow run`, `simflow sim` and `simflow profile`: one variant on a backend (the GPU, the simulator, the GPU under
Nsight Compute)."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from ..errors import UserError
from ..job import DEFAULT_REPEATS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
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


def _run_args(p: argparse.ArgumentParser, backend: str = "gpu") -> None:
    """One set of arguments for every backend; `sim` and `profile` are `run` with another default backend."""
    _variants_dir_arg(p)
    _stats_arg(p)
    _variant_args(p, best=True)
    _problem_args(p)
    p.add_argument("--backend", default=backend, choices=backend_names(),
                   help=f"where it runs (default {backend}): gpu (PyCUDA), gpgpusim (the simulator), gpu-ncu "
                        "(Nsight Compute counters under the simulator's names)")
    p.add_argument("--seed", type=int, default=0, help="the inputs' seed (default 0)")
    p.add_argument("--warmup", type=_at_least(0), default=DEFAULT_WARMUP, help="timed backends: untimed launches")
    p.add_argument("--repeats", type=_at_least(1), default=DEFAULT_REPEATS, help="timed backends: timed launches")
    p.add_argument("--sample-check", action="store_true",
                   help="check a seeded sample of 4096 outputs instead of every one (the default)")
    p.add_argument("--config", "-c", default="",
                   help="simulator config: a name from gpgpusim_configs/ or the path of an overlay .toml "
                        "(default: the backend's)")
    p.add_argument("--docker", metavar="IMAGE", help="simulate inside this image (built by simflow image build)")
    p.add_argument("--engine", choices=["docker", "podman"],
                   help="container engine for --docker (default: $SIMFLOW_ENGINE, else docker, else podman)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S if backend != "gpu-ncu" else 1800,
                   help="seconds before the simulator (or ncu) is stopped")
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
    result = api.run(args.variant, problem, backend=args.backend, params=_params(args),
                     best=args.best, precision=args.precision, seed=args.seed, warmup=args.warmup,
                     repeats=args.repeats, sample_check=args.sample_check, config=args.config, docker=args.docker,
                     engine=args.engine, timeout_s=args.timeout, sample=args.sample, workers=args.workers,
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

