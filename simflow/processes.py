"""Child processes: run quietly, and never outliving simflow.

A simulator runs in its own process group under coreutils' `timeout`, which kills the group by
itself when the time is up, whatever happened to simflow; Linux sends that watchdog SIGTERM when
the simflow thread that started it dies (PR_SET_PDEATHSIG), and sweep workers get the same
request towards the sweep, and end once the sweep is gone (exit_when_orphaned). So a `kill -9` of
simflow or of a sweep leaves no simulator and no worker running.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_PR_SET_PDEATHSIG = 1


def watchdog(cmd: list[str], timeout_s: float) -> list[str]:
    """`cmd` under coreutils' timeout: its process group gets SIGTERM after `timeout_s`, SIGKILL 10 s later."""
    if shutil.which("timeout") is None:
        return cmd
    return ["timeout", "--kill-after", "10", f"{timeout_s:g}", *cmd]


def _libc():
    if platform.system() != "Linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def die_with_parent_hook():
    """A preexec_fn for Popen: the child gets SIGTERM when the thread that started it dies. None where
    Linux cannot be asked, or off the main thread (a worker thread may end while its child lives on)."""
    libc = _libc()
    if libc is None or threading.current_thread() is not threading.main_thread():
        return None

    def ask() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    return ask


_PARENT: int | None = None  # a sweep worker's parent (the sweep), from die_with_parent


def die_with_parent() -> None:
    """This process gets SIGTERM when its parent dies (an initializer for sweep worker processes)."""
    global _PARENT
    _PARENT = os.getppid()
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before the request was made
            os.kill(os.getpid(), signal.SIGTERM)


def interruption() -> str:
    """What stopped this process's run, as "stopped ..." goes on: its sweep gone (killed outright, so its death
    signal came), or a user's Ctrl-C or SIGTERM."""
    if _PARENT is not None and os.getppid() != _PARENT:
        return "because its sweep ended (killed outright)"
    return "by Ctrl-C or SIGTERM"


_JOB = threading.Lock()  # held while a worker process runs a job


def exit_when_orphaned(poll_s: float = 0.5) -> None:
    """A worker process ends once its parent is gone: the job in hand first (the death signal stops it and its
    run is kept as interrupted), then the process, rather than waiting forever for work that never comes."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        with _JOB:
            os._exit(1)

    threading.Thread(target=watch, name="simflow-parent-watch", daemon=True).start()


@contextmanager
def job_in_hand() -> Iterator[None]:
    """Marks a worker busy: exit_when_orphaned waits for the job to end."""
    with _JOB:
        yield


REPEAT_S = 2.0  # a signal this soon after the one that interrupted is the same interruption
_interrupted_at: float | None = None


def sigterm_as_ctrl_c() -> None:
    """SIGTERM takes Ctrl-C's path in this process (KeyboardInterrupt): the simulator or container it
    runs is stopped and the run kept as interrupted. SIGTERM or Ctrl-C again within REPEAT_S of the first
    is not raised again: Linux may send a parent's death signal twice (a killed sweep's workers get two
    SIGTERMs 3 ms apart), and a second KeyboardInterrupt while the run is being kept would lose its record.
    A later one (a user insisting) interrupts again. Only the main thread can install a handler; a SIGINT
    that was ignored (a background job) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _raise_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)


def _raise_interrupt(_signum, _frame):
    global _interrupted_at
    now = time.monotonic()
    if _interrupted_at is not None and now - _interrupted_at < REPEAT_S:
        return
    _interrupted_at = now
    raise KeyboardInterrupt


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group led by `proc` (a simulator's cuobjdump and ptxas too), SIGKILL if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
    proc.wait()



def _start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot), so a reused pid is not taken for the owner; '' if gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 (one read)
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner(pid: int | None = None) -> str:
    """A process as 'host:pid:start time': what a container's label and a running record name as their owner."""
    pid = os.getpid() if pid is None else pid
    return f"{platform.node()}:{pid}:{_start_time(pid)}"


def owner_alive(label: str) -> bool:
    """Whether the process an owner() label names still runs (one on another host cannot be told: yes)."""
    host, _, rest = label.partition(":")
    pid, _, started = rest.partition(":")
    if host != platform.node() or not pid.isdigit():
        return True
    return _start_time(int(pid)) == started != ""


def run_quietly(cmd: list[str], timeout: float = 20) -> tuple[int, str]:
    """A command's exit code and output, (1, why) where it cannot run: doctor's probes never raise."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, str(exc)
    return proc.returncode, (proc.stdout + proc.stderr).strip()
