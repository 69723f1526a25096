"""The `simflow` command line: each subcommand's arguments (a function), then its handler under @command, which
turns them into calls of simflow.api; main() maps the error types to the exit codes below."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__, terminal
from .backends import backend_class, backend_names
from .errors import MissingTool, ToolError, UserError
from .job import DEFAULT_REPEATS, DEFAULT_TIMEOUT_S, DEFAULT_WARMUP
from .kernels.problems import DEFAULT_PROBLEM, PRESETS, SUITES, Problem, get_problem, suite
from .results.folders import replace_with, write_text

COMMANDS: dict = {}  # name -> (handler, add_parser options, function adding its arguments), in help order

EXIT_CODES = ("exit status: 0 done (a run passed), 1 a mistake in the command or a file it names (the message says "
              "what to change), 2 a run did not pass, 3 an external tool failed or is missing, 4 a regression "
              "(--fail-on-regression), 130 interrupted (what ran is kept)")
DESCRIPTION = """simflow: why one CUDA convolution kernel is faster than another. Each variant is a Jinja2 template;
the rendered source runs on a GPU (PyCUDA) or under the GPGPU-Sim cycle simulator, and the
results are stored, compared and explained.

quick starts:
  simflow parse LOG.gz                       # a log's stats, a kernel a column
  simflow import-log -l problem=P *.log.gz && simflow report -d report/
  simflow sim shared --problem batch3x3      # simulate (here? simflow doctor)
  simflow run shared --problem fmnist-conv1  # build, check and time on the GPU
  simflow explain variant=global variant=shared    # why B takes more cycles

'simflow COMMAND --help' shows a command's options and examples."""
EXAMPLES = {
    "variants": ["simflow variants", "simflow variants -f markdown -o variants.md"],
    "problems": ["simflow problems", "simflow problems --suite resnet50"],
    "render": ["simflow render shared --param tile=8 --problem fmnist-conv2", "simflow render global -o k.cu"],
    "run": ["simflow run shared_weights -P unroll=both --problem fmnist-conv1 --batch 10000",
            "simflow run global --shape 8,3,16,64,64,5,2 --json", "simflow run --best --problem fmnist-conv1"],
    "sim": ["simflow sim shared --problem batch3x3", "simflow sim global --problem fmnist-conv1 --batch 1",
            "simflow sim regtile --shape 256,3,8,32,32,5,2 --sample", "simflow sim shared --docker simflow-gpgpusim"],
    "profile": ["simflow profile shared --problem batch3x3"],
    "sim-exec": ["simflow sim-exec simflow-results/runs/RUN_ID"],
    "calibrate": ["simflow calibrate", "simflow calibrate --from gpgpusim_configs/H200.measured.json -d /tmp"],
    "correlate": ["simflow correlate", "simflow correlate variant=shared --metrics gpu_sim_cycle -f markdown"],
    "runs": ["simflow runs", "simflow runs variant=shared backend=gpgpusim --last 5"],
    "show": ["simflow show variant=shared", "simflow show 20261126-0213 --all"],
    "diff": ["simflow diff variant=global variant=shared", "simflow diff RUN_A RUN_B --fail-on-regression"],
    "explain": ["simflow explain variant=global variant=shared", "simflow explain A B --kernel conv2d_x -f markdown"],
    "compare": ["simflow compare --by variant --baseline global",
                "simflow compare config=SM7_QV100 --by variant,tile -f markdown -o compare.md"],
    "import": ["simflow import simflow-results/runs/RUN_ID"],
    "import-log": ["simflow import-log bfs.log.gz --label app=bfs --label problem=graph1M",
                   "zcat run.log.gz | simflow import-log -l problem=N4K4 -"],
    "sweep": ["simflow sweep my-sweep.toml --dry-run", "simflow sweep my-sweep.toml -j 2 --executor dask"],
    "tune": ["simflow tune shared regtile --problem fmnist-conv1 --runs 20",
             "simflow tune --all --backend gpgpusim --problem batch3x3 -j 2"],
    "report": ["simflow report -d report/", "simflow report config=SM7_QV100 --by variant --baseline global -d r/"],
    "doctor": ["simflow doctor", "simflow doctor --require gpgpusim"],
    "image": ["simflow image build", "simflow image build --simulator /opt/gpgpu-sim --tag simflow-gpgpusim"],
    "check": ["simflow check", "simflow check --problem fmnist-conv1 --json"],
    "parse": ["simflow parse run.log.gz", "zcat run.log.gz | simflow parse - --format csv -o -",
              "simflow parse a.log b.log --aggregate", "simflow parse --catalogue"],
}


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
        parser.add_argument("--precision", default="float32", choices=["float32", "tf32", "float16"],
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
    from .kernels.variants import parse_param_args

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
    from .analysis.compare import DEFAULT_THRESHOLD

    parser.add_argument("--threshold", type=float, default=100 * DEFAULT_THRESHOLD, metavar="PCT",
                        help=f"%% change within which two values count as the same (default "
                             f"{100 * DEFAULT_THRESHOLD:g}; a change within its unit's floor, such as 4 cycles of a "
                             "latency, is the same too)")


def _stats_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stats", action="append", default=[], metavar="FILE",
                        help="a TOML file of your own simulator stats (repeatable; also SIMFLOW_STATS, "
                             "files separated by ':'); docs/stats.md")


def _variants_args(p: argparse.ArgumentParser) -> None:
    _variants_dir_arg(p)
    _output_args(p, "each variant, its parameters and what each backend accepts")


@command("variants", _variants_args, help="list the kernel variants and their parameters")
def cmd_variants(args) -> int:
    from . import api

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
    from . import api

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
    from . import api

    kernel = api.render(args.variant, _problem(args), params=_params(args))
    if args.output:
        write_text(args.output, kernel.source)
        print(f"wrote {args.output} (fingerprint {kernel.fingerprint()})", file=sys.stderr)
    else:
        sys.stdout.write(kernel.source)
    return 0


def _results(args) -> Path:
    from .resources import results_dir

    return Path(args.results) if getattr(args, "results", None) else results_dir()


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
    from . import api

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


def _say(text: str) -> None:
    print(f"simflow: {text}", file=sys.stderr)


def _exit_code(result) -> int:
    """0 passed, 2 the run did not pass, 130 the user stopped it (its record is stored all the same)."""
    if result.status == "interrupted":
        print(f"simflow: interrupted; run {result.run_id} is kept as 'interrupted' in "
              f"{result.artifacts.get('run_dir', 'its run folder')}", file=sys.stderr)
        return 130
    return 0 if result.passed else 2


def _sim_exec_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a run folder simflow prepared (it holds run.json)")


@command("sim-exec", _sim_exec_args, help="execute a prepared simulator run folder here (what --docker runs)")
def cmd_sim_exec(args) -> int:
    from .backends.gpgpusim import execute

    folder = Path(args.folder)
    if not (folder / "run.json").is_file():
        raise UserError(f"{folder} is not a prepared simflow run folder (no run.json)")
    facts = execute(folder)
    print(json.dumps(facts, indent=2))
    return 1 if "setup_error" in facts else 0


def _store(args, read_only: bool = False):
    """The results store; commands that only read open it read-only (nothing is created)."""
    from .results.store import Store

    return Store(_results(args), read_only=read_only)


def _correlate_args(p: argparse.ArgumentParser) -> None:
    _filters_arg(p)
    p.add_argument("--metrics", help="comma-separated simulator stat names (default: every aligned one)")
    _format_args(p, regressions=False)


@command("correlate", _correlate_args, help="simulator vs hardware counters over variants run both ways: Pearson, "
                                         "rank agreement, mean relative error")
def cmd_correlate(args) -> int:
    from . import api
    from .tables import render

    table, points = api.correlate(*args.filters, metrics=_metric_list(args), results=_results(args))
    _emit(render(table, args.format, f"simulator vs hardware counters over {points['group'].nunique()} variants"),
          args.output)
    return 0


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="the config's name (default: the GPU's, e.g. H200)")
    p.add_argument("--dir", "-d", default=".", help="where NAME.toml and NAME.measured.json go (default: here)")
    p.add_argument("--again", action="store_true", help="measure anew (default: reuse this GPU's cached figures)")
    p.add_argument("--from", dest="measured", metavar="JSON",
                   help="make the config from recorded measurements (a NAME.measured.json): no GPU needed")


@command("calibrate", _calibrate_args, help="measure the GPU in hand and write a simulator config for it "
                                             "(simflow sim --config NAME.toml)")
def cmd_calibrate(args) -> int:
    from . import api

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


def _runs_args(p: argparse.ArgumentParser) -> None:
    _filters_arg(p)
    p.add_argument("--last", type=_at_least(1), help="only the newest N")
    p.add_argument("--parts", action="store_true", help="also the probes and samples of sampled runs (parts of them)")
    _results_arg(p)
    _output_args(p)


@command("runs", _runs_args, help="list stored runs (filters: KEY=VALUE, e.g. variant=shared tile=16)")
def cmd_runs(args) -> int:
    from . import api

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
    from . import api

    run = api.find_run(args.run, results=_results(args))
    _out(args, run.as_dict(), terminal.result_rows(run), terminal.show_text(run, args.all))
    return 0


def _emit(text: str, output: str | None) -> None:
    """Standard output, or FILE written atomically ('-' is standard output)."""
    if output and output != "-":
        write_text(output, text if text.endswith("\n") else text + "\n")
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _out(args, data, rows: list[dict], text: str | None = None, title: str = "") -> None:
    """What a command prints, in its --format: `data` as JSON, `rows` as markdown or CSV (and as the fitted table
    unless `text` is the table form), to -o."""
    from .tables import render

    if args.format == "json":
        body = json.dumps(data, indent=2)
    elif args.format in ("markdown", "csv", "html"):
        import pandas as pd

        body = render(pd.DataFrame(rows), args.format, title)
    else:
        body = text if text is not None else ((title + "\n") if title else "") + terminal.table(rows)
    _emit(body, args.output)


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
    from . import api
    from .analysis.compare import regressions
    from .tables import render

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
    from . import api
    from .analysis.explain import format_explanation

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
    from . import api

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
    from . import api

    outcomes, where = api.import_runs(*args.paths, results=_results(args))
    rows = [{"id": run_id, "outcome": "stored" if stored else "stored already"} for run_id, stored in outcomes]
    _out(args, rows, rows)
    print(f"{sum(stored for _, stored in outcomes)} run(s) stored in {where}", file=sys.stderr)
    return 0


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
    from . import api
    from .results.store import StoredRun
    from .sim.log_import import parse_labels

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
    from . import api

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
    from . import api

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
    from . import api

    folder = args.dir or args.output
    if not folder:
        raise UserError("simflow report needs the folder to write into: --dir DIR (-d DIR)")
    for path in api.report(*args.filters, output=folder, by=args.by.split(","), metrics=_metric_list(args),
                           baseline=args.baseline, all_statuses=args.all_statuses, results=_results(args)):
        print(path)
    return 0


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
    from . import api

    findings, absent = api.doctor(probe_builds=not args.no_probe, refresh=args.reprobe, require=args.require)
    data = [f.as_dict() for f in findings]
    _out(args, data, data, terminal.findings_text(findings))
    if absent:
        print(f"simflow: missing: required but absent: {', '.join(absent)} (see above)", file=sys.stderr)
        return 3
    return 0


def _image_args(p: argparse.ArgumentParser) -> None:
    from .sim.image import DEFAULT_BASE, DEFAULT_TAG

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
    from . import api

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
    from . import api

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
    from . import api
    from .sim.catalogue import iter_catalogue

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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simflow", description=DESCRIPTION, epilog=EXIT_CODES, formatter_class=_Prose)
    parser.add_argument("--version", action="version", version=f"simflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (handler, options, arguments) in COMMANDS.items():
        examples = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])
        epilog = options.pop("epilog", EXIT_CODES)
        p = sub.add_parser(name, description=options["help"], epilog=f"{examples}\n\n{epilog}", formatter_class=_Prose,
                           **options)
        arguments(p)
        p.set_defaults(func=handler)
    return parser


class _Prose(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs wrapped to the terminal at word boundaries; an indented line (an example, a
    quick start) is kept as it is, so it can be copied."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for paragraph in text.split("\n\n"):
            lines = paragraph.splitlines()
            prose = [line for line in lines if not line.startswith("  ")]
            if len(prose) == len(lines):
                out.append(textwrap.fill(" ".join(line.strip() for line in lines), width, initial_indent=indent,
                                         subsequent_indent=indent + "  ", break_long_words=False,
                                         break_on_hyphens=False))
            else:  # a heading line and indented examples: verbatim
                out.append("\n".join(indent + line for line in lines))
        return "\n\n".join(out)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake exits 1 like every other mistake in a command (2 means 'did not pass')."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def _attached(argv: list[str]) -> list[str]:
    """`--shape -4,3,...` as `--shape=-4,3,...`: argparse would take the value for an option and say only 'expected
    one argument'; attached, it reaches the shape's own check, which says what is wrong with it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] == "--shape" and arg[:2].startswith("-") and arg[1:2].isdigit():
            out[-1] = f"--shape={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    from .run.orphans import sigterm_as_ctrl_c

    args = build_parser().parse_args(_attached(sys.argv[1:] if argv is None else argv))
    from . import tables

    tables.TO_FILE = getattr(args, "output", None) not in (None, "-") and getattr(args, "command", "") != "report"
    sigterm_as_ctrl_c()
    try:
        from . import api

        api.use_stats(*getattr(args, "stats", []))
        if hasattr(args, "variants") or hasattr(args, "variant") or os.environ.get("SIMFLOW_VARIANTS"):
            from .kernels.variants import check_user_variants, use_variant_dirs  # the kernels load only here

            if args.variants if hasattr(args, "variants") else None:
                use_variant_dirs(args.variants)
            check_user_variants()
        return args.func(args)
    except MissingTool as exc:
        print(f"simflow: missing: {exc}", file=sys.stderr)
        return 3
    except UserError as exc:
        print(f"simflow: error: {exc}", file=sys.stderr)
        return 1
    except ToolError as exc:
        print(f"simflow: tool failed: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("simflow: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. '| head'): not an error in itself; the exit status is what the command
        # had decided before it printed (parse: 2 for a log that is not complete). Point stdout at /dev/null so
        # the interpreter's final flush does not raise again.

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return getattr(args, "exit_code", 0)
    except OSError as exc:  # a file simflow was asked to read or write: missing folder, full disk, read-only
        where = f": {exc.filename}" if exc.filename else ""
        print(f"simflow: error: {exc.strerror or exc}{where}; nothing stored before was changed", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
