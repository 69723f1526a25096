"""`simflow image`: build the simflow image (CUDA 11.8, simflow) around your own GPGPU-Sim build."""

from __future__ import annotations

import argparse

from .common import (
    command,
)


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

