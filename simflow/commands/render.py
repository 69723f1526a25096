"""`simflow render`: print a variant's rendered CUDA source."""

from __future__ import annotations

import argparse
import sys

from ..results.folders import write_text
from .common import (
    _params,
    _problem,
    _problem_args,
    _variant_args,
    _variants_dir_arg,
    command,
)


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

