"""Running a prepared simulator run folder in the simflow image, with Docker or Podman.

The container gets the run folder at /simflow/run and the host's compile cache at /simflow/cache
(so a standalone program built once is not rebuilt by every throw-away container), runs as the
caller's user with no network, never pulls an image, and is stopped and removed on Ctrl-C,
SIGTERM or timeout. Its engine client dies with simflow (which stops the container), and each
container is labelled with its owner, so the next container run removes any whose owner was killed
outright. Inside, `simflow sim-exec` applies the run's timeout itself, so a container
whose host process was killed outright still ends by then.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .. import processes
from ..errors import UserError
from ..resources import cache_dir
from ..settings import current

ENGINES = ("docker", "podman")
OWNER_LABEL = "simflow.owner"  # host:pid:start time of the simflow process that started the container
RUN_DIR = "/simflow/run"
CACHE_DIR = "/simflow/cache"
STOP_GRACE_S = 10  # SIGTERM, then SIGKILL after this many seconds
IMAGE_HELP = ("build it around your GPGPU-Sim build with 'simflow image build --tag {image}' (docs/containers.md; "
              "without a registry, make the debian:bookworm-slim base locally as it says)")


def engine(name: str | None = None) -> str:
    """The container engine's command: NAME, $SIMFLOW_ENGINE, else docker if on PATH, else podman."""
    chosen = name or current().engine or next((e for e in ENGINES if shutil.which(e)), "docker")
    if chosen not in ENGINES:
        raise UserError(f"unknown container engine {chosen!r}; valid engines: {', '.join(ENGINES)}")
    if shutil.which(chosen) is None:
        raise UserError(f"--docker needs the {chosen} command, which is not on PATH; install Docker Engine "
                        "(docs.docker.com/engine/install) or Podman, or run the simulator natively "
                        "(docs/simulator.md)")
    return chosen


CATATONIT = ("/usr/libexec/podman/catatonit", "/usr/bin/catatonit", "/usr/local/bin/catatonit")


def init_problem(engine_cmd: str) -> str:
    """Why this engine cannot run `--init` ('' when it can): Podman needs catatonit, which Debian's podman
    package only recommends."""
    if engine_cmd != "podman" or any(Path(p).is_file() for p in CATATONIT) or shutil.which("catatonit"):
        return ""
    return ("podman runs simflow's container with --init, which needs catatonit; Debian's podman only recommends "
            "it: apt-get install catatonit (or set init_path in containers.conf)")


def engine_options() -> list[str]:
    """Extra options for the engine's run command, from SIMFLOW_ENGINE_OPTIONS (split as a shell would)."""
    import shlex

    return shlex.split(current().engine_options)


def check_image(image: str, engine_cmd: str) -> None:
    """Refuse, before any work, an image this engine does not have (simflow never pulls one), and an engine that
    cannot run it as simflow does."""
    if why := init_problem(engine_cmd):
        raise UserError(why)
    if not has_image(image, engine_cmd):
        raise UserError(f"no image {image!r} in the local {engine_cmd} engine (simflow never pulls one); "
                        + IMAGE_HELP.format(image=image))


def engine_help(engine_cmd: str) -> str:
    """How to start an engine that is not running."""
    if engine_cmd == "podman":
        return ("podman needs no daemon: check 'podman info' (on macOS or Windows, 'podman machine start')")
    return ("start it: 'sudo systemctl start docker' where systemd runs; without systemd (a container, WSL, a CI "
            "machine) 'sudo dockerd > /var/log/dockerd.log 2>&1 &' (docs/containers.md, 'Starting the engine')")


def has_image(image: str, engine_cmd: str, timeout_s: float = 60) -> bool:
    """Whether the engine has the image; an engine that does not answer (not running, no permission) is a
    UserError that says so and how to start it, never taken for a missing image."""
    try:
        proc = subprocess.run([engine_cmd, "image", "inspect", "--format", "{{.Id}}", image],
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"the {engine_cmd} engine did not answer within {timeout_s:g} s: it is not running or "
                        f"is stuck; {engine_help(engine_cmd)}; or run the simulator natively") from None
    if proc.returncode == 0:
        return True
    said = (proc.stderr or proc.stdout).strip().splitlines()
    last = said[-1] if said else f"exit code {proc.returncode}"
    if any(words in last.lower() for words in ("no such image", "image not known", "not found")):
        return False
    if "permission denied" in last.lower():
        raise UserError(f"the {engine_cmd} engine refused this user ({last}); add the user to the docker group "
                        "(sudo usermod -aG docker $USER, then log in again) or run as root")
    raise UserError(f"the {engine_cmd} engine is not running ({last}); {engine_help(engine_cmd)}; or run the "
                    "simulator natively")


def host_cache() -> Path:
    """The host folder mounted as the container's compile cache."""
    folder = cache_dir() / "container"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_command(engine_cmd: str, image: str, folder: Path, name: str, cache: Path, uid: int | None = None,
                gid: int | None = None) -> list[str]:
    """The exact `docker run` (or `podman run`) that executes a prepared run folder."""
    uid = os.getuid() if uid is None else uid
    gid = os.getgid() if gid is None else gid
    return [
        engine_cmd, "run", "--rm", "--init", "--pull", "never", "--name", name,
        "--label", f"{OWNER_LABEL}={processes.owner()}",
        "--user", f"{uid}:{gid}",  # files in the run folder and the cache stay the caller's
        "--network", "none",
        "--volume", f"{folder.resolve()}:{RUN_DIR}",
        "--volume", f"{cache.resolve()}:{CACHE_DIR}",
        "--workdir", RUN_DIR,
        "--env", "HOME=/tmp", "--env", f"SIMFLOW_CACHE={CACHE_DIR}",
        *engine_options(),  # SIMFLOW_ENGINE_OPTIONS, e.g. "--ulimit nofile=1024:1024" for a rootless podman
        image, "simflow", "sim-exec", RUN_DIR,
    ]


def reap(engine_cmd: str) -> list[str]:
    """Remove simflow's containers whose owner died without stopping them (kill -9); returns their names."""
    try:
        proc = subprocess.run([engine_cmd, "ps", "--all", "--filter", f"label={OWNER_LABEL}", "--format",
                               f'{{{{.Names}}}} {{{{.Label "{OWNER_LABEL}"}}}}'], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    gone = [line.split()[0] for line in proc.stdout.splitlines()
            if len(line.split()) == 2 and not processes.owner_alive(line.split()[1])]
    for name in gone:
        subprocess.run([engine_cmd, "rm", "--force", name], capture_output=True, timeout=60)
    return gone


def stop(engine_cmd: str, name: str) -> None:
    """Stop the container (SIGTERM, SIGKILL after a grace) and make sure it is gone."""
    subprocess.run([engine_cmd, "stop", "--time", str(STOP_GRACE_S), name], capture_output=True,
                   timeout=STOP_GRACE_S + 60)
    subprocess.run([engine_cmd, "rm", "--force", name], capture_output=True, timeout=60)


def run(cmd: list[str], name: str, log: Path, timeout_s: float) -> int | None:
    """Run the container, its output into `log`; the exit code, or None when it ran past `timeout_s`.
    Ctrl-C or SIGTERM (as KeyboardInterrupt) stops the container before it is raised again."""
    engine_cmd = cmd[0]
    with open(log, "wb") as out:
        # The engine's client does not see the terminal's Ctrl-C (its own session), and gets SIGTERM when simflow
        # dies, which it passes to the container: a killed simflow does not leave a container simulating.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=processes.die_with_parent_hook())
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            stop(engine_cmd, name)
            proc.wait()
            return None
        except KeyboardInterrupt:
            stop(engine_cmd, name)
            proc.wait()
            raise
