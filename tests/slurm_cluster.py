"""A one-node Slurm cluster on this machine, for the tests of the dask-jobqueue path (marker slurm).

Debian's slurm-wlm and munge (`apt-get install slurm-wlm munge`): munged with a fresh key, slurmctld
and slurmd from a slurm.conf in a temporary folder, on free ports, every file and socket in that
folder, so nothing of the machine's own configuration is read or changed. The daemons are stopped
and their jobs cancelled when the context ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")


def missing() -> str:
    """Why a one-node cluster cannot start here ('' when it can)."""
    absent = [name for name in DAEMONS if shutil.which(name) is None]
    if absent:
        return f"no Slurm here (missing {', '.join(absent)}): apt-get install slurm-wlm munge"
    if os.geteuid() != 0:
        return "the one-node Slurm cluster runs its daemons as root"
    return ""


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _wait(predicate, what: str, folder: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    logs = "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in folder.glob("*.log"))
    raise RuntimeError(f"one-node Slurm: {what} did not come up in {timeout:g} s{logs}")


@contextlib.contextmanager
def one_node_cluster(folder: Path, cpus: int | None = None):
    """Start munged, slurmctld and slurmd; yield the environment (SLURM_CONF) that sbatch and squeue need."""
    folder.mkdir(parents=True, exist_ok=True)
    host = socket.gethostname().split(".")[0]
    cpus = cpus or os.cpu_count() or 1
    munge = folder / "munge"
    munge.mkdir(mode=0o700, exist_ok=True)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for sub in ("state", "spool"):
        (folder / sub).mkdir(exist_ok=True)
    ctld_port, d_port = _free_ports(2)
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=simflowtest", f"SlurmctldHost={host}", f"SlurmctldPort={ctld_port}", f"SlurmdPort={d_port}",
        "AuthType=auth/munge", f"AuthInfo=socket={munge / 'sock'}", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={folder / 'state'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "MpiDefault=none", "ReturnToService=2", "SchedulerType=sched/backfill",
        "JobCompType=jobcomp/none", "AccountingStorageType=accounting_storage/none",
        f"NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN",
        f"PartitionName=simflow Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = []
    try:
        procs.append(subprocess.Popen(
            ["munged", "--foreground", "--force", f"--key-file={key}", f"--socket={munge / 'sock'}",
             f"--pid-file={munge / 'pid'}", f"--log-file={folder / 'munged.log'}", f"--seed-file={munge / 'seed'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        _wait(lambda: (munge / "sock").exists(), "munged", folder)
        for daemon in ("slurmctld", "slurmd"):
            procs.append(subprocess.Popen([daemon, "-D", "-f", str(conf)], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))

        def idle() -> bool:
            out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout
            return out.strip() in ("idle", "mixed", "allocated")

        _wait(idle, "the node (sinfo: idle)", folder)
        yield env
    finally:
        subprocess.run(["scancel", "--full", "--partition=simflow"], env=env, capture_output=True, check=False)
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
