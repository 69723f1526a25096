"""Every hint simflow prints works (issue 56): each `simflow COMMAND --option ...` that a message, a page or a
help text names (quoted in the source: '...', `...` or "...") is a command simflow has, with options it takes.
The hints that matter most are also run (test_like_with_like, test_store_recovery, test_exit_codes)."""

import re
from pathlib import Path

import pytest

from simflow.cli import build_parser
from simflow.commands import COMMANDS

SOURCE = Path(__file__).resolve().parents[1] / "simflow"
# a hint ends at its quote, or where the sentence goes on (";", ")", ","): "... -l problem=NAME; --force ..."
HINT = re.compile(r"""(['`"])simflow ([a-z][a-z-]*)([^'`"\n;),]*)""")
PROSE = ("from", "config", "instrumentation", "cannot")  # "simflow from Python", "simflow config NAME: ..."


def _hints():
    found = []
    for path in sorted([*SOURCE.rglob("*.py"), *SOURCE.rglob("*.j2"), *SOURCE.rglob("*.html")]):
        for match in HINT.finditer(path.read_text()):
            if match.group(2) not in PROSE:
                options = re.findall(r"(?<![\w{-])(--?[a-z][a-z-]*)", match.group(3))
                found.append((f"{path.relative_to(SOURCE.parent)}: {match.group(0)[:70]}", match.group(2), options))
    return found


HINTS = _hints()


def _options(command: str) -> set[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    return {s for action in sub._actions for s in action.option_strings}


def test_the_source_has_hints_to_check():
    assert len(HINTS) > 50 and {"report", "import", "sim", "compare"} <= {c for _, c, _ in HINTS}


@pytest.mark.parametrize("where,command,options", HINTS, ids=[h[0] for h in HINTS])
def test_a_hint_names_a_command_and_options_it_has(where, command, options):
    assert command in COMMANDS, f"{where}: no command {command!r}"
    missing = [o for o in options if o not in _options(command)]
    assert not missing, f"{where}: simflow {command} has no {', '.join(missing)}"


# options of the tools simflow runs (docker/podman, ncu, nvidia-smi, nvcc, timeout, debootstrap), not its own
TOOLS = {"--build-arg", "--env", "--filter", "--init", "--pull", "--rm", "--ulimit", "--user", "--volume", "--workdir",
         "--clock-control", "--kernel-name", "--launch-count", "--page", "--print-units", "--query-metrics",
         "--query-gpu", "--cudart", "--kill-after", "--variant"}


def test_a_bare_option_a_message_names_is_one_simflow_or_its_tools_take():
    """'--all-statuses shows them': an option named without its command must still be one some command takes."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices.values()
    known = {s for sub in [parser, *commands] for action in sub._actions for s in action.option_strings}
    unknown = sorted({f"{path.relative_to(SOURCE.parent)}: {option}"
                      for path in [*SOURCE.rglob("*.py"), *SOURCE.rglob("*.html")]
                      for option in re.findall(r"(?<![\w{/=.-])(--[a-z][a-z0-9-]*)", path.read_text())
                      if option not in known | TOOLS})
    assert not unknown, unknown
