"""`simflow image build`: the simflow image around the user's own GPGPU-Sim build.

simflow stages a build context in a temporary folder and runs the engine on it:

    Dockerfile          simflow's (docker/Dockerfile): Debian's CUDA 11.8, then the two folders below
    simflow/            simflow's package, its templates and simulator overlays inside it
    gpgpu-sim/          the runtime files of the simulator build: setup_environment, version, configs/ and
                        the built library folder (lib/gcc-*/cuda-*/release), copied as they are

Nothing is compiled: the simulator is the user's build, as it is on the host. The build uses no Python
package index and never pulls an image (the base must be in the engine already), and its last step runs
`simflow doctor --require gpgpusim` inside, so an image whose simulator cannot run there is not made.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import resources
from ..errors import UserError
from . import container
from .simulator import Simulator, find_simulator, simulator_at

DEFAULT_TAG = "simflow-gpgpusim"
DEFAULT_BASE = "debian:bookworm-slim"
BUILD_TIMEOUT_S = 3 * 3600
BASE_HELP = ("make it locally, e.g. 'debootstrap --variant=minbase bookworm /tmp/rootfs && tar -C /tmp/rootfs -c . | "
             "{engine} import - {base}' (docs/containers.md)")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def stage(sim: Simulator, folder: Path) -> None:
    """Write the build context into `folder` (empty)."""
    shutil.copy2(resources.docker_dir() / "Dockerfile", folder / "Dockerfile")
    package = folder / "simflow"
    shutil.copytree(resources.PACKAGE_DIR, package, ignore=_IGNORE)
    for source in (resources.templates_dir(), resources.configs_dir(), resources.docker_dir()):
        target = package / source.name
        if not target.exists():  # a source checkout keeps them beside the package, a wheel inside it
            shutil.copytree(source, target, ignore=_IGNORE)
    tree = folder / "gpgpu-sim"
    tree.mkdir()
    for name in ("setup_environment", "version"):
        if (sim.root / name).is_file():
            shutil.copy2(sim.root / name, tree / name)
    shutil.copytree(sim.root / "configs", tree / "configs", symlinks=True)
    library = tree / sim.library_dir.relative_to(sim.root)
    shutil.copytree(sim.library_dir, library, symlinks=True)


def build(simulator: str | None = None, tag: str = DEFAULT_TAG, engine_name: str | None = None,
          base: str = DEFAULT_BASE, network: str = "host", engine_options: tuple[str, ...] = (),
          log=sys.stderr) -> str:
    """Build the image; returns its tag. `network` is the build's network (it reaches Debian's mirror);
    `engine_options` go to the engine's build command as they are."""
    sim = simulator_at(Path(simulator)) if simulator else find_simulator()
    engine_cmd = container.engine(engine_name)
    if not container.has_image(base, engine_cmd, timeout_s=120):
        raise UserError(f"the base image {base!r} is not in the local {engine_cmd} engine and simflow pulls "
                        "nothing; " + BASE_HELP.format(engine=engine_cmd, base=base))
    with tempfile.TemporaryDirectory(prefix="simflow-image-") as tmp:
        context = Path(tmp)
        stage(sim, context)
        cmd = [engine_cmd, "build", "--network", network, "--build-arg", f"BASE={base}", "-t", tag,
               *engine_options, str(context)]
        print(f"building {tag} with GPGPU-Sim from {sim.root} ({sim.library_dir.relative_to(sim.root)}): "
              + " ".join(cmd), file=log, flush=True)
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S)
    if proc.returncode != 0:
        raise UserError(f"{engine_cmd} build failed (exit {proc.returncode}); its output is above. If the last "
                        "step says the simulator needs system libraries the image lacks, build the simulator on "
                        "the image's Debian release (bookworm) and run 'simflow image build' again")
    return tag
