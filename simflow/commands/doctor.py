"""`simflow doctor`: what simflow can use here, what is missing and how to get it."""

from __future__ import annotations

import argparse
import sys

from .. import terminal
from ..registry import backend_names
from .common import (
    _out,
    _output_args,
    command,
)


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

