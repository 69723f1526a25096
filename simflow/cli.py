"""The `simflow` command line: the parser, built from the subcommands' registry (simflow.commands: each one's
arguments and its handler, which turns them into calls of simflow.api); main() maps the error types to the exit
codes below."""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, settings
from .commands import COMMANDS
from .errors import MissingTool, ToolError, UserError

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
    "calibrate": ["simflow calibrate", "simflow calibrate --from gpgpusim_configs/H200.measured.json -d /tmp",
                  "simflow calibrate --check H200"],
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="simflow", description=DESCRIPTION, epilog=EXIT_CODES, formatter_class=_Prose)
    parser.add_argument("--version", action="version", version=f"simflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in EXAMPLES:  # the help's order; every command has its examples (tests/test_cli.py)
        handler, options, arguments = COMMANDS[name]
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
    from .processes import sigterm_as_ctrl_c

    try:  # the settings before the parser (its choices name the backends): a mistake in simflow.toml is said
        settings.current()
    except UserError as exc:
        print(f"simflow: error: {exc}", file=sys.stderr)
        return 1
    args = build_parser().parse_args(_attached(sys.argv[1:] if argv is None else argv))
    to_file = getattr(args, "output", None) not in (None, "-") and getattr(args, "command", "") != "report"
    settings.with_(to_file=to_file, results=getattr(args, "results", None) or settings.current().results)
    sigterm_as_ctrl_c()
    try:
        from . import api

        api.use_stats(*getattr(args, "stats", []))
        if hasattr(args, "variants") or hasattr(args, "variant") or settings.current().variants:
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
