"""Subcommands that make runs: variants, problems, render, run, sim, profile, sim-exec, calibrate, sweep, tune,
check, doctor, image."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import __version__, terminal
from ..backends import backend_class, backend_names
from ..errors import UserError
from ..job import DEFAULT_REPEATS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from ..kernels.problems import SUITES, suite
from ..results.folders import write_text
from .common import (
    _at_least,
    _exit_code,
    _out,
    _output_args,
    _params,
    _problem,
    _problem_args,
    _results,
    _results_arg,
    _say,
    _stats_arg,
    _storing_args,
    _variant_args,
    _variants_dir_arg,
    command,
)


def _variants_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    _output_args(p, "each variant, its parameters and what each backend accepts")


@command("variants", _variants_args, help="list the kernel variants and their parameters")
def cmd_variants(args) -> int:
    from .. import api

    data = api.variants()
    rows = [{"variant": v["variant"], "param": p["name"], "choices": "|".join(p["choices"]), "default": p["default"],
             "host_side": p["host"], "help": p["help"]} for v in data for p in v["params"]]
    _out(args, data, rows, terminal.variants_text(data))
    return 0


def _problems_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", help="list a suite's layers instead of the presets: " + ", ".join(SUITES))
    _output_args(p)


@command("problems", _problems_args, help="list the problem presets, or a suite of layers (--suite)")
def cmd_problems(args) -> int:
    from .. import api

    rows, gflop = api.problems(args.suite)
    _out(args, rows, rows, terminal.problems_text(rows, args.suite, gflop))
    return 0


def _render_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    _variant_args(p)
    _problem_args(p)
    p.add_argument("-o", "--output", help="write the source to this file")


@command("render", _render_args, help="print a variant's rendered CUDA source")
def cmd_render(args) -> int:
    from .. import api

    kernel = api.render(args.variant, _problem(args), params=_params(args))
    if args.output:
        write_text(args.output, kernel.source)
        print(f"wrote {args.output} (fingerprint {kernel.fingerprint()})", file=sys.stderr)
    else:
        sys.stdout.write(kernel.source)
    return 0


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

    problem = _problem(args)
    cls = backend_class(args.backend)
    for given, needs, what in ((args.config or args.docker or args.engine, cls.takes_config, "a simulator config"),
                               (args.sample is not None, cls.sampling, "sampled simulation")):
        if given and not needs:
            able = ", ".join(n for n in backend_names() if getattr(backend_class(n),
                                                                    "takes_config" if "config" in what else "sampling"))
            raise UserError(f"--config, --docker, --engine and --sample are for backends with {what} ({able}); "
                            f"backend {args.backend} takes none")
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


def _sim_exec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a run folder simflow prepared (it holds run.json)")


@command("sim-exec", _sim_exec_args, help="execute a prepared simulator run folder here (what --docker runs)")
def cmd_sim_exec(args) -> int:
    from ..backends.gpgpusim import execute

    folder = Path(args.folder)
    if not (folder / "run.json").is_file():
        raise UserError(f"{folder} is not a prepared simflow run folder (no run.json)")
    facts = execute(folder)
    print(json.dumps(facts, indent=2))
    return 1 if "setup_error" in facts else 0


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="the config's name (default: the GPU's, e.g. H200)")
    p.add_argument("--dir", "-d", default=".", help="where NAME.toml and NAME.measured.json go (default: here)")
    p.add_argument("--again", action="store_true", help="measure anew (default: reuse this GPU's cached figures)")
    p.add_argument("--from", dest="measured", metavar="JSON",
                   help="make the config from recorded measurements (a NAME.measured.json): no GPU needed")


@command("calibrate", _calibrate_args, help="measure the GPU in hand and write a simulator config for it "
                                             "(simflow sim --config NAME.toml)")
def cmd_calibrate(args) -> int:
    from .. import api

    done = api.calibrate(name=args.name, output=args.dir, again=args.again, measured=args.measured, progress=_say)
    f = done.figures
    how = "recorded measurements" if args.measured else ("cached measurements (--again measures anew)"
                                                         if done.reused else f"measured in {f.get('seconds', 0):g} s")
    print(f"{f['gpu']}: {f['sms']} SMs at {f['clock_mhz']:.0f} MHz; latencies L1 {f['l1_latency_cycles']:.0f}, "
          f"shared {f['shared_latency_cycles']:.0f}, L2 {f['l2_latency_cycles']:.0f}, DRAM "
          f"{f['dram_latency_cycles']:.0f} cycles; L2 {f['l2_bandwidth_gbs']:.0f} GB/s, DRAM "
          f"{f['dram_bandwidth_gbs']:.0f} GB/s ({how})")
    print(done.config)
    print(done.measured)
    return 0


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
        return 0 if all(o.result for o in done.sampled) else 2
    report = done.report
    _out(args, report.as_dict(), terminal.sweep_rows(report), terminal.sweep_text(report))
    if report.interrupted:
        print(f"simflow: sweep interrupted; the runs in flight are stored as 'interrupted', {len(report.stored)} "
              "run(s) recorded; run the sweep again to resume", file=sys.stderr)
        return 130
    return 0 if not report.failed and not report.errors else 2


def _tune_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    p.add_argument("names", nargs="*", metavar="VARIANT", help="the variants whose spaces are searched")
    p.add_argument("--all", action="store_true", help="every variant with a configuration in --precision")
    _problem_args(p)
    p.add_argument("--suite", help="tune every layer of a suite, one after another (simflow problems --suite)")
    p.add_argument("--backend", default="gpu", choices=backend_names(),
                   help="where each configuration is timed (default gpu; a backend that times runs)")
    p.add_argument("--config", default="", help="simulator config (for a backend that takes one)")
    p.add_argument("--precision", default="float32", choices=["float32", "tf32", "float16"],
                   help="the least precise arithmetic allowed: configurations computing in it or a finer one compete "
                        "(tf32 admits float32, float16 both; default float32)")
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


def _doctor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-probe", action="store_true",
                   help="do not run the probe programs on the simulator builds found (they run once per build, "
                        "about a minute, and are cached)")
    p.add_argument("--reprobe", action="store_true", help="run the probes again even where cached")
    p.add_argument("--require", action="append", default=[], choices=backend_names(),
                   help="exit 3 unless this backend can run here (repeatable; the image build uses it)")
    _output_args(p)


@command("doctor", _doctor_args, help="what simflow can use here, what is missing and how to get it")
def cmd_doctor(args) -> int:
    from .. import api

    findings, absent = api.doctor(probe_builds=not args.no_probe, refresh=args.reprobe, require=args.require)
    data = [f.as_dict() for f in findings]
    _out(args, data, data, terminal.findings_text(findings))
    if absent:
        print(f"simflow: missing: required but absent: {', '.join(absent)} (see above)", file=sys.stderr)
        return 3
    return 0


def _image_args(p: argparse.ArgumentParser) -> None:
    from ..sim.image import DEFAULT_BASE, DEFAULT_TAG

    p.add_argument("action", choices=["build"], help="build: the simflow image around your GPGPU-Sim build")
    p.add_argument("--simulator", metavar="DIR", help="the GPGPU-Sim build to package (default: the one simflow "
                                                      "finds, as 'simflow doctor' shows)")
    p.add_argument("--tag", "-t", default=DEFAULT_TAG, help=f"the image's name (default {DEFAULT_TAG})")
    p.add_argument("--engine", choices=["docker", "podman"], help="container engine (default: $SIMFLOW_ENGINE, "
                                                                  "else docker, else podman)")
    p.add_argument("--base", default=DEFAULT_BASE, help=f"the Debian 12 base image, already in the engine "
                                                        f"(default {DEFAULT_BASE}; nothing is pulled)")
    p.add_argument("--network", default="host", help="the build's network, which must reach Debian's mirror "
                                                     "(default host)")
    p.add_argument("--engine-option", action="append", default=[], metavar="OPT",
                   help="passed to the engine's build command as it is (repeatable), e.g. --engine-option=--no-cache")


@command("image", _image_args, help="build the simflow image (CUDA 11.8, simflow) around your own GPGPU-Sim build")
def cmd_image(args) -> int:
    from .. import api

    tag = api.image(args.simulator, tag=args.tag, engine=args.engine, base=args.base, network=args.network,
                    engine_options=tuple(args.engine_option))
    print(f"built {tag}: simflow sim VARIANT --docker {tag}")
    return 0


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

