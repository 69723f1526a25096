"""`simflow variants`: list the kernel variants and their parameters."""

from __future__ import annotations

import argparse

from .. import terminal
from .common import (
    _out,
    _output_args,
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

