"""The `simflow` command line. Each subcommand turns its arguments into a call of a plain function."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import __version__
from .errors import ToolError, UserError
from .gpgpusim_log import SUMMARY
from .problems import PRESET_NOTES, PRESETS, Problem, get_problem
from .variants import VARIANTS, get_variant, parse_param_args, show_value


def _problem_args(parser: argparse.ArgumentParser, default: str | None = "batch3x3") -> None:
    parser.add_argument("--problem", "-p", default=default, help=f"preset: {', '.join(PRESETS)}")
    parser.add_argument("--shape", help="a full shape B,C,M,H,W,K[,pad] instead of a preset")
    parser.add_argument("--batch", "-b", type=int, help="override the batch size B")


def _variant_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help=f"one of: {', '.join(VARIANTS)}")
    parser.add_argument("--param", "-P", action="append", metavar="NAME=VALUE",
                        help="a template parameter (repeatable); 'simflow variants' lists them")


def _problem(args) -> Problem:
    return get_problem(args.problem, shape=args.shape, batch=args.batch)


def _table(rows: list[dict]) -> str:
    import pandas as pd

    if not rows:
        return "(nothing)"
    with pd.option_context("display.max_colwidth", 120, "display.width", 250):
        return pd.DataFrame(rows).fillna("").to_string(index=False)


def cmd_variants(args) -> int:
    data = [
        {"variant": v.name, "summary": v.summary, "precision": v.precision,
         "params": [{"name": p.name, "choices": [show_value(c) for c in p.choices], "default": show_value(p.default),
                     "help": p.help} for p in v.params]}
        for v in VARIANTS.values()
    ]
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    for v in data:
        print(f"{v['variant']}: {v['summary']}")
        for p in v["params"]:
            print(f"    {p['name']} = {'|'.join(p['choices'])} (default {p['default']}): {p['help']}")
    return 0


def cmd_problems(args) -> int:
    rows = [{"preset": name, "B": p.B, "C": p.C, "M": p.M, "HxW": f"{p.H}x{p.W}", "K": p.K, "pad": p.pad,
             "out": f"{p.Hout}x{p.Wout}", "GFLOP": round(p.flops / 1e9, 3),
             "min MB": round(p.min_bytes() / 1e6, 2), "notes": PRESET_NOTES[name]}
            for name, p in PRESETS.items()]
    print(json.dumps(rows, indent=2) if args.json else _table(rows))
    return 0


def cmd_render(args) -> int:
    kernel = get_variant(args.variant).render(_problem(args), parse_param_args(args.param))
    if args.output:
        Path(args.output).write_text(kernel.source)
        print(f"wrote {args.output} (fingerprint {kernel.fingerprint()})", file=sys.stderr)
    else:
        sys.stdout.write(kernel.source)
    return 0


def cmd_run(args) -> int:
    from .backends import RunOptions, backend_class

    problem = _problem(args)
    kernel = get_variant(args.variant).render(problem, parse_param_args(args.param))
    backend = backend_class("gpu")()
    options = RunOptions(seed=args.seed, warmup=args.warmup, repeats=args.repeats)
    result = backend.run(kernel, problem.B, options)
    if args.json:
        print(result.to_json())
    else:
        params = " ".join(f"{k}={show_value(v)}" for k, v in result.params.items())
        print(f"{result.variant} [{params}] on {problem.describe()}, backend gpu: {result.status}")
        if result.reason:
            print(f"reason: {result.reason}")
        rows = [{"metric": k, "value": f"{v:.6g}" if isinstance(v, float) else v, "unit": result.units.get(k, "")}
                for k, v in result.metrics.items()]
        print(_table(rows))
        print(f"environment: {', '.join(f'{k}={v}' for k, v in result.environment.items())}")
    return 0 if result.passed else 2


_SIM_SHOWN = ("regs", "smem", "cta_per_core", *SUMMARY)


def _print_result(result, problem: Problem) -> None:
    params = " ".join(f"{k}={show_value(v)}" for k, v in result.params.items())
    print(f"{result.variant} [{params}] on {problem.describe()}, backend {result.backend}: {result.status}")
    if result.reason:
        print(f"reason: {result.reason}")


def cmd_sim(args) -> int:
    from .backends import RunOptions
    from .backends.gpgpusim import GpgpusimBackend

    problem = _problem(args)
    kernel = get_variant(args.variant).render(problem, parse_param_args(args.param))
    backend = GpgpusimBackend(config=args.config, docker_image=args.docker, timeout_s=args.timeout,
                              results=Path(args.results) if args.results else None)
    if not args.json:
        where = f"in Docker image {args.docker}" if args.docker else "natively"
        print(f"simulating {kernel.variant} on {problem.describe()} under {backend.config.name} {where} ...",
              file=sys.stderr)
    result = backend.run(kernel, problem.B, RunOptions(seed=args.seed))
    if args.json:
        print(json.dumps({**result.to_dict(), "log": result.artifacts.get("log")}, indent=2))
        return 0 if result.passed else 2
    _print_result(result, problem)
    groups = result.split_metrics()
    run_level = groups.pop("", {})
    if not groups and result.kernels:  # one kernel: its stats are the unprefixed ones
        groups = {result.kernels[0]: run_level}
    table = {kern: {n: v for n, v in values.items() if n in _SIM_SHOWN} for kern, values in groups.items()}
    if any(table.values()):
        import pandas as pd

        with pd.option_context("display.width", 200, "display.float_format", "{:.6g}".format):
            print(pd.DataFrame(table).reindex([n for n in _SIM_SHOWN if any(n in t for t in table.values())])
                  .to_string())
    for key in ("sim_wall_s", "rel_error"):
        if key in result.metrics:
            print(f"{key}: {result.metrics[key]:.4g}")
    for key, path in result.artifacts.items():
        if key in ("run_dir", "log"):
            print(f"{key}: {path}")
    return 0 if result.passed else 2


def cmd_sim_exec(args) -> int:
    from .backends.gpgpusim import execute

    folder = Path(args.folder)
    if not (folder / "run.json").is_file():
        raise UserError(f"{folder} is not a prepared simflow run folder (no run.json)")
    facts = execute(folder)
    print(json.dumps(facts, indent=2))
    return 1 if "setup_error" in facts else 0


def cmd_doctor(args) -> int:
    from .doctor import diagnose

    findings = diagnose()
    if args.json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
        return 0
    for f in findings:
        print(f"[{'ok' if f.found else '--'}] {f.component}: {f.detail}")
        if not f.found and f.how_to_get:
            print(f"       how to get it: {f.how_to_get}")
    return 0


def cmd_check(args) -> int:
    from .backends import RunOptions
    from .check import run_check

    problem = _problem(args)
    quiet = args.json
    if not quiet:
        print(f"simflow {__version__}: checking every variant on {problem.describe()}")
    report = run_check(problem, RunOptions(seed=args.seed, repeats=args.repeats),
                       progress=(lambda _m: None) if quiet else print)
    if quiet:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    print("\ntoolkits: " + ("; ".join(report.toolkits) or "none found"))
    print(_table(report.rows))
    print("\nbackends:")
    for name, b in report.backends.items():
        print(f"  {name}: {'present' if b['available'] else 'ABSENT'}: {b['detail']}")
        if not b["available"] and b["how_to_get"]:
            print(f"      how to get it: {b['how_to_get']}")
    failed = [r["variant"] for r in report.rows
              if any(str(v).startswith("FAILED") for v in r.values())]
    return 1 if failed else 0


def cmd_parse(args) -> int:
    from .gpgpusim_log import iter_catalogue, parse_file

    if args.catalogue:
        print(_table(list(iter_catalogue())))
        return 0
    if not args.log:
        raise UserError("simflow parse needs a LOG file (or --catalogue)")
    path = Path(args.log)
    if not path.is_file():
        raise UserError(f"no such log file: {path}")
    log = parse_file(path)
    frame = log.frame()
    if args.csv:
        frame.to_csv(args.csv, index=False)
    if args.json:
        print(json.dumps({**log.run_facts(), "log": str(path),
                          "per_kernel": json.loads(frame.to_json(orient="records"))}, indent=2))
    else:
        facts = log.run_facts()
        print(f"{path}: {facts['status']}" + (f" ({facts['reason']})" if facts["reason"] else ""))
        if log.build:
            print(f"simulator {log.simulator_version} [{log.build}], {len(log.kernels)} kernel launch(es)")
        if len(frame):
            shown = frame.set_index("kernel").T
            if not args.all:
                shown = shown.loc[[r for r in ["launch_uid", "complete", "regs", "cta_per_core", "cta_limited_by",
                                               *SUMMARY] if r in shown.index]]
            print(shown.to_string())
    return 0 if log.ok else 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simflow", description=__doc__)
    parser.add_argument("--version", action="version", version=f"simflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("variants", help="list the kernel variants and their parameters")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_variants)

    p = sub.add_parser("problems", help="list the problem presets")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_problems)

    p = sub.add_parser("render", help="print a variant's rendered CUDA source")
    _variant_args(p)
    _problem_args(p)
    p.add_argument("-o", "--output", help="write the source to this file")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("run", help="build, check and time a variant on the GPU (PyCUDA)")
    _variant_args(p)
    _problem_args(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--json", action="store_true", help="one JSON object: status, metrics, ...")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("sim", help="build a variant for GPGPU-Sim, simulate, verify and show its stats")
    _variant_args(p)
    _problem_args(p)
    p.add_argument("--config", "-c", default="SM7_QV100",
                   help="simulator config: a name from gpgpusim_configs/ or the path of an overlay .toml")
    p.add_argument("--docker", metavar="IMAGE", help="simulate inside this image (built from docker/Dockerfile)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds before the simulator is killed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results", help="results folder (default: $SIMFLOW_RESULTS or ./simflow-results)")
    p.add_argument("--json", action="store_true", help="one JSON object: status, metrics, log, ...")
    p.set_defaults(func=cmd_sim)

    p = sub.add_parser("sim-exec", help="execute a prepared simulator run folder here (what --docker runs)")
    p.add_argument("folder")
    p.set_defaults(func=cmd_sim_exec)

    p = sub.add_parser("parse", help="per-kernel stats from a GPGPU-Sim log (plain or .gz)")
    p.add_argument("log", nargs="?", help="the simulator's stdout+stderr")
    p.add_argument("--json", action="store_true", help="run facts and one record per kernel launch")
    p.add_argument("--csv", metavar="FILE", help="write the per-kernel table as CSV")
    p.add_argument("--all", action="store_true", help="every stat of the catalogue, not the summary")
    p.add_argument("--catalogue", action="store_true", help="list the stats simflow reads, their kind and unit")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("doctor", help="what simflow can use here, what is missing and how to get it")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("check", help="render, compile and run every variant on every backend present")
    _problem_args(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"simflow: error: {exc}", file=sys.stderr)
        return 1
    except ToolError as exc:
        print(f"simflow: tool failed: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
