"""`simflow sim-exec`: execute a prepared simulator run folder here (what --docker runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import UserError
from .common import (
    command,
)


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

