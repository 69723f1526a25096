"""Parse GPGPU-Sim output into one record per kernel launch, streaming, in bounded memory.

The simulator prints a stats block after each kernel (`kernel_name = ...`). Only a few
stats are reset per kernel; most counters accumulate over the process, so a kernel's own
value is the difference of consecutive blocks. Which is which is data: `CATALOGUE`.
A run is trusted only when it ends with the exit line; otherwise its last kernel is
incomplete and the run says why (abort, truncation, a binary that never reached the
simulator).
"""

from __future__ import annotations

import gzip
import io
import math
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .catalogue import FORK, FORK_MARKER, MISS_RATES, PRINTED, STATS, UPSTREAM, USER_STATS, aggregate, stat_of

_BANNER = re.compile(r"GPGPU-Sim Simulator Version (\S+)\s+\[build ([^\]]+)\]")
_PTX_KERNEL = re.compile(r"GPGPU-Sim PTX: Kernel '([^']+)' : regs=(\d+), lmem=(\d+), smem=(\d+), cmem=(\d+)")
_PUSH = re.compile(r"pushing kernel '([^']+)' to stream \d+, gridDim= \((\d+),(\d+),(\d+)\) "
                   r"blockDim = \((\d+),(\d+),(\d+)\)")
_CTA = re.compile(r"GPGPU-Sim uArch: CTA/core = (\d+), limited by: (.*)")
# simflow's own program prints each launch with the dynamic shared memory it passes (the simulator prints only
# the static size, in its PTX resource line).
_LAUNCH = re.compile(r"simflow: launch (\S+) grid=\S+ block=\S+ smem=(\d+)")
# The LIVENESS trace line, printed every gpgpu_runtime_stat cycles when simflow's instrumentation is on:
# the process's cycle and thread instructions so far, and the SMs' occupancy at that cycle.
_SAMPLE = re.compile(r"GPGPU-Sim Cycle (\d+): LIVENESS - uArch: inst\.: (\d+) \(ipc=[^,]*, occ=[^\[]*\[(\d+) / (\d+)\]")
_FAIL_FAMILY = "Total_core_cache_fail_stats_breakdown["
# Facts of the simulated GPU read from the option dump: (name, options multiplied, unit).
MODELLED = (("kernel_launch_latency", ("gpgpu_kernel_launch_latency",), "cycles"),
            ("simulated_sms", ("gpgpu_n_clusters", "gpgpu_n_cores_per_cluster"), "SMs"),
            ("schedulers_per_sm", ("gpgpu_num_sched_per_core",), "schedulers"))
_UARCH_PROGRESS = re.compile(r"GPGPU-Sim uArch: cycles simulated: (\d+)\s+inst\.: (\d+)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)", re.IGNORECASE)
_FAILURE_HINTS = re.compile(r"Assertion .* failed|Segmentation fault|Aborted|core dumped|terminate called|"
                            r"GPGPU-Sim PTX: ERROR|Parse error|syntax error|ERROR \*\*|\*\* ERROR", re.IGNORECASE)


def _may_fail(line: str) -> bool:
    """Cheap substring test before the failure regex (most lines are plain stats)."""
    return ("ssert" in line or "rror" in line or "ERROR" in line or "fault" in line or "bort" in line
            or "dump" in line or "terminate" in line)

_NEWER_CUDART = re.compile(r"libcudart\.so\.(1[2-9])")
EXIT_LINE = "GPGPU-Sim: *** exit detected ***"
LIMIT_LINE = "break due to reaching the maximum cycles (or instructions)"


def _value(text: str) -> float:
    """'48.2100', '10.2516%', '8.38 GB/Sec', '655047x', '-nan' -> float. NaN for -nan, and for what is
    no finite number (inf, 1e999): those are missing values (see _note_value)."""
    match = _NUMBER.search(text)
    if not match:
        return math.nan
    value = float(match[0])
    return value if math.isfinite(value) else math.nan


def _out_of_range(text: str) -> bool:
    match = _NUMBER.search(text)
    return bool(match) and "nan" not in match[0].lower() and not math.isfinite(float(match[0]))


@dataclass(slots=True)
class Sample:
    """One periodic progress line of the simulator (see simflow.sim.config.INSTRUMENTATION)."""

    cycle: int  # simulated cycles of the whole process so far (gpu_tot_sim_cycle + gpu_sim_cycle)
    insn: int  # thread instructions of the whole process so far
    active_warps: int  # warps resident on the SMs that have work, at this cycle
    warp_slots: int  # the warp slots of those SMs
    l1d_accesses: float = math.nan  # L1D tag-array lookups so far (the runtime L1 stat, all SMs)
    l1d_misses: float = math.nan  # of which misses and sector misses
    kernel: str = ""  # the kernel running: the one whose stats block follows
    launch: int = 0  # that kernel's position in the log (1, 2, ...); 0 when its block never came


@dataclass
class KernelRecord:
    launch_uid: int
    kernel: str
    printed: dict[str, float] = field(default_factory=dict)  # stats as printed in its block
    metrics: dict[str, float] = field(default_factory=dict)  # per-kernel values (differenced)
    resources: dict[str, object] = field(default_factory=dict)
    complete: bool = False


@dataclass
class SimLog:
    """Everything one simulator process printed, reduced to facts and per-kernel records."""

    status: str = "empty"  # complete, stopped_at_limit, incomplete, aborted, not_simulated, mixed, empty
    reason: str = ""
    simulator_version: str = ""
    build: str = ""
    flavour: str = ""  # FORK or UPSTREAM, from what the log prints; "" before any stats block
    exit_detected: bool = False
    stopped_at_limit: bool = False
    kernels: list[KernelRecord] = field(default_factory=list)
    program_lines: list[str] = field(default_factory=list)  # lines the simulated program printed (simflow:)
    notes: list[str] = field(default_factory=list)  # what was read as missing, and why
    samples: list[Sample] = field(default_factory=list)  # periodic progress, when the simulator printed it
    options: dict[str, str] = field(default_factory=dict)  # the options the simulator printed it runs with
    lines: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "complete"

    def frame(self, by_name: bool = False):
        """One row per kernel launch: identity, resources, then per-kernel metrics. by_name: one row per
        kernel name, its launches aggregated (see `aggregate`), with their count and uids."""
        import pandas as pd

        if not by_name:
            return pd.DataFrame([{"launch_uid": k.launch_uid, "kernel": k.kernel, "complete": k.complete,
                                  **k.resources, **k.metrics} for k in self.kernels])
        names: dict[str, list[KernelRecord]] = {}
        for record in self.kernels:
            names.setdefault(record.kernel, []).append(record)
        rows = []
        for name, records in names.items():
            same = {k: v for k, v in records[0].resources.items() if all(r.resources.get(k) == v for r in records)}
            rows.append({"launches": len(records), "launch_uids": ",".join(str(r.launch_uid) for r in records),
                         "kernel": name, "complete": all(r.complete for r in records), **same,
                         **aggregate([r.metrics for r in records])})
        return pd.DataFrame(rows)

    def intervals(self) -> list[dict]:
        """One row per interval between progress samples: thread IPC over the interval, occupancy at
        its end (active warps over the warp slots of SMs with work), and the L1D tag-array hit rate
        (only where both ends of the interval printed the L1 stat, so no interval gets another's)."""
        rows = []
        before = Sample(0, 0, 0, 0, 0.0, 0.0)
        for sample in self.samples:
            span = sample.cycle - before.cycle
            if span <= 0:  # a repeated or out-of-order line: nothing to measure
                continue
            accesses = _grown(before.l1d_accesses, sample.l1d_accesses)
            misses = _grown(before.l1d_misses, sample.l1d_misses)
            rows.append({
                "kernel": sample.kernel, "launch": sample.launch,
                "cycle_start": before.cycle, "cycle_end": sample.cycle,
                "ipc": (sample.insn - before.insn) / span if sample.insn >= before.insn else math.nan,
                "occupancy": 100 * sample.active_warps / sample.warp_slots if sample.warp_slots else math.nan,
                "l1d_accesses": accesses,
                "l1d_hit_rate": 1 - misses / accesses if accesses > 0 and misses <= accesses else math.nan,
            })
            before = sample
        return rows

    def modelled(self) -> dict[str, tuple[float, str]]:
        """Facts of the simulated GPU from the printed options: the cycles each kernel launch waits before
        its first block starts (they count in its gpu_sim_cycle), the SMs, the warp schedulers per SM."""
        facts = {}
        for name, keys, unit in MODELLED:
            try:
                facts[name] = (math.prod(float(self.options[key].split(":")[0]) for key in keys), unit)
            except (KeyError, ValueError):
                continue
        return facts

    def run_facts(self) -> dict:
        facts = {"status": self.status, "reason": self.reason, "simulator_version": self.simulator_version,
                 "build": self.build, "flavour": self.flavour, "exit_detected": self.exit_detected,
                 "stopped_at_limit": self.stopped_at_limit, "kernels": len(self.kernels), "notes": self.notes}
        if self.kernels:
            last = self.kernels[-1].printed
            for name in ("gpgpu_simulation_time", "gpgpu_simulation_rate_insn", "gpgpu_simulation_rate_cycle",
                         "gpgpu_silicon_slowdown"):
                if name in last:
                    facts[name] = last[name]
        return facts


def _grown(before: float, now: float) -> float:
    """How much a running total grew; a total that went down was reset, so it grew by its value."""
    if math.isnan(now) or math.isnan(before):
        return math.nan
    return now - before if now >= before else now


def _open_text(path: Path) -> io.TextIOBase:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", errors="replace")
    return open(path, errors="replace")


class _Damage:
    """Where a file could not be read on, and why (set by _readable_lines)."""

    error: str = ""


def _readable_lines(handle, damage: _Damage) -> Iterator[str]:
    """The lines of `handle` until it ends or cannot be read on (a cut or corrupted gzip stream,
    garbage after it, an I/O error): what came before is kept, the error is noted."""
    while True:
        try:
            line = handle.readline()
        except (EOFError, OSError, zlib.error, ValueError) as exc:
            damage.error = f"{type(exc).__name__}: {exc}"
            return
        if not line:
            return
        yield line


@contextmanager
def named_logs(names: Iterable[str | Path]) -> Iterator[list[tuple[str, Path]]]:
    """Each log as (its name, a path to read): '-' is standard input (plain or gzip), copied once into a temporary
    file that is gone afterwards."""
    import shutil
    import sys
    import tempfile

    names = [str(n) for n in names]
    if names.count("-") > 1:
        from ..errors import UserError

        raise UserError("standard input ('-') can be read once: name it once among the logs")
    if "-" not in names:
        yield [(n, Path(n)) for n in names]
        return
    with tempfile.TemporaryDirectory(prefix="simflow-stdin-") as tmp:
        copy = Path(tmp) / "stdin.log"
        with open(copy, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out)
        yield [(n, copy if n == "-" else Path(n)) for n in names]


@dataclass
class Live:
    """What a running simulation has printed so far (its own progress lines): kernels launched, the cycle and
    instruction counts of its latest progress sample."""
    kernel: str = ""
    launched: int = 0
    cycle: int = 0
    insn: int = 0

    def read(self, line: str) -> None:
        if m := (_SAMPLE.match(line) or _UARCH_PROGRESS.match(line)):
            self.cycle, self.insn = int(m.group(1)), int(m.group(2))
        elif m := _LAUNCH.match(line):  # simflow's program says each launch before it makes it
            self.launched += 1
            self.kernel = m.group(1)


def read_options(path: str | Path) -> dict[str, str]:
    """The option dump at the top of a log (name -> value as printed), without reading the rest of the file."""
    options: dict[str, str] = {}
    damage = _Damage()
    try:
        with _open_text(Path(path)) as handle:
            for count, raw in enumerate(_readable_lines(handle, damage)):
                line = raw.strip()
                if line.startswith("-"):
                    name, _, rest = line[1:].partition(" ")
                    if name and rest.strip():
                        options[name] = rest.split("#", 1)[0].strip()
                elif count > 20000 or (options and line.startswith(("GPGPU-Sim PTX", "GPGPU-Sim uArch", "kernel_"))):
                    break
    except OSError:
        return {}
    return options


def parse_file(path: str | Path) -> SimLog:
    """Parse a log, plain or gzip; never raises on what the file holds (only on a missing file)."""
    damage = _Damage()
    with _open_text(Path(path)) as handle:
        log = parse_lines(_readable_lines(handle, damage))
    if damage.error:
        where = f"in kernel {log.kernels[-1].kernel}" if log.kernels else "before any kernel finished"
        if log.kernels:
            log.kernels[-1].complete = False
        log.status = "incomplete"
        log.reason = (f"the file is damaged after line {log.lines} ({damage.error}); kept what came before "
                      f"({len([k for k in log.kernels if k.complete])} complete kernel(s)), cut {where}")
    return log


def parse_text(text: str) -> SimLog:
    return parse_lines(io.StringIO(text))


def parse_lines(lines: Iterable[str]) -> SimLog:
    """Stream the log once; memory holds one record per kernel, not the text."""
    log = SimLog()
    resources: dict[str, dict] = {}  # kernel name -> regs/lmem/smem/cmem from the PTX info
    pending: dict[str, object] = {}  # grid, block and CTA limit of the launch about to print stats
    current: KernelRecord | None = None
    failures: list[str] = []
    newer_cudart = None
    saw_any = False
    last_pushed, pushed_since_block = "", False
    banners: list[int] = []  # lines where another simulator process's banner stands
    sampled = 0  # samples before this index belong to a kernel whose stats block was read
    user = [(stat.name, stat.pattern) for stat in USER_STATS.values()]
    matched: set[str] = set()
    for raw in lines:
        log.lines += 1
        line = raw.strip()
        if not line:
            continue
        saw_any = True
        if user and current is not None:
            for name, pattern in user:
                if found := pattern.search(line):
                    current.printed[name] = _value(found[1])
                    matched.add(name)
        if line[0] == "-" and not log.kernels:  # the option dump: -name value # meaning
            name, _, rest = line[1:].partition(" ")
            if name and rest.strip():
                log.options[name] = rest.split("#", 1)[0].strip()
            continue
        if line.startswith("total_dl1_"):  # the runtime L1 stat after a progress sample
            if log.samples:
                key, _, rest = line.partition("=")
                if key == "total_dl1_accesses":
                    log.samples[-1].l1d_accesses = _value(rest)
                elif key == "total_dl1_misses":
                    log.samples[-1].l1d_misses = _value(rest)
            continue
        if current is not None and line.startswith("Stall:"):  # the 'Warp Occupancy Distribution' line
            slots = dict(part.split(":", 1) for part in line.split() if ":" in part)
            lanes = [_value(slots.get(f"W{n}", "nan")) for n in range(1, 33)]
            for key in ("Stall", "W0_Idle", "W0_Scoreboard"):
                current.printed[f"issue_slots[{key}]"] = _value(slots.get(key, "nan"))
            current.printed["issue_slots[issued]"] = sum(lanes)
            current.printed["issue_slots[issued_partial]"] = sum(lanes[:31])
            continue
        if current is not None and "=" in line and not line.startswith(("GPGPU-Sim", "simflow:")):
            key, _, rest = line.partition("=")
            key = key.strip()
            if key == "gpgpu_simulation_rate":
                key = "gpgpu_simulation_rate_insn" if "inst/sec" in rest else "gpgpu_simulation_rate_cycle"
            elif key == "gpgpu_simulation_time":
                paren = re.search(r"\((\d+) sec\)", rest)
                current.printed[key] = float(paren[1]) if paren else _value(rest)
                continue
            name = PRINTED.get(key)
            if name is None and key.startswith(_FAIL_FAMILY):
                name = key
            if name is not None:
                if key == FORK_MARKER:
                    log.flavour = FORK
                elif not log.flavour and key == "gpgpu_n_cache_bkconflict":
                    log.flavour = UPSTREAM
                current.printed[name] = _value(rest)
                if _out_of_range(rest):
                    log.notes.append(f"line {log.lines}: {key} = {rest.strip()[:40]} is out of range; read as missing")
                continue
            if key == "kernel_launch_uid":
                uid = _value(rest)  # empty in the block printed again when a limit stops the run
                if not math.isnan(uid) and 0 <= uid < 2**63:
                    current.launch_uid = int(uid)
                elif rest.strip():
                    log.notes.append(f"line {log.lines}: kernel_launch_uid = {rest.strip()[:40]} is no launch "
                                     "number; kept the launch's position")
                continue
            if key != "kernel_name" and "ssert" not in line:
                continue  # the bulk of a block: per-core, per-bank and DRAM lines simflow does not keep
        if line.startswith("kernel_name"):
            name = line.partition("=")[2].strip()
            if not name and log.kernels and not pushed_since_block:
                current = log.kernels[-1]  # a limit stop prints the last kernel's block again, unnamed
                continue
            current = KernelRecord(launch_uid=len(log.kernels) + 1, kernel=name or last_pushed or "(unnamed)")
            for sample in log.samples[sampled:]:
                sample.kernel, sample.launch = current.kernel, len(log.kernels) + 1
            sampled = len(log.samples)
            current.resources = {**resources.get(current.kernel, {}), **pending}
            pending = {}
            pushed_since_block = False
            log.kernels.append(current)
            continue
        if line.startswith("GPGPU-Sim"):
            if "LIVENESS - uArch: inst" in line:
                if match := _SAMPLE.match(line):
                    log.samples.append(Sample(int(match[1]), int(match[2]), int(match[3]), int(match[4])))
            elif EXIT_LINE in line:
                log.exit_detected = True
            elif LIMIT_LINE in line:
                log.stopped_at_limit = True
            elif match := _PTX_KERNEL.search(line):
                resources[match[1]] = {"regs": int(match[2]), "lmem": int(match[3]), "smem": int(match[4]),
                                       "cmem": int(match[5])}
            elif match := _PUSH.search(line):
                last_pushed, pushed_since_block = match[1], True
                pending["grid"] = f"{match[2]},{match[3]},{match[4]}"
                pending["block"] = f"{match[5]},{match[6]},{match[7]}"
            elif match := _CTA.search(line):
                pending["cta_per_core"] = int(match[1])
                pending["cta_limited_by"] = match[2].strip()
        elif "Simulator Version" in line and (match := _BANNER.search(line)):
            if log.build:  # a second process's output: its counters start again from 0
                banners.append(log.lines)
            else:
                log.simulator_version, log.build = match[1], match[2]
        elif line.startswith("simflow:"):
            log.program_lines.append(line)
            if match := _LAUNCH.match(line):
                pending["dynamic_smem"] = int(match[2])
        if _may_fail(line) and _FAILURE_HINTS.search(line):
            failures.append(line)
        elif newer_cudart is None and "libcudart.so." in line and (match := _NEWER_CUDART.search(line)):
            newer_cudart = match[1]
    for sample in log.samples[sampled:]:  # the kernel running when the log ends
        sample.kernel = last_pushed if pushed_since_block else "(after the last kernel)"
    for stat in USER_STATS.values():
        if stat.name not in matched and log.kernels:
            log.notes.append(f"user stat {stat.name} ({stat.source}): its regex {stat.regex!r} never matched "
                             "in this log's stats blocks")
    _finish(log, failures, newer_cudart, saw_any, banners)
    return log


# Counters every build accumulates over the process: one going down means another process's output.
_PROCESS_TOTALS = ("gpu_tot_sim_cycle", "gpu_tot_sim_insn", "gpu_tot_issued_cta")


def _finish(log: SimLog, failures: list[str], newer_cudart: str | None, saw_any: bool,
            banners: list[int] = ()) -> None:
    """Difference cumulative counters, mark complete kernels, decide the run's status.

    A counter is never differenced into a negative count. Output of several processes in one file
    (appended logs, interleaved lines: a second banner, or a process total going down) is refused
    with status 'mixed': each kernel keeps its per-kernel stats, no differenced counters. A cumulative
    counter that goes down in one process is one this build resets per kernel: kept as printed, noted."""
    kinds = {name: stat.kind_on(log.flavour) for name, stat in STATS.items()}
    for name in sorted({name for record in log.kernels for name in record.printed if name not in kinds}):
        kinds[name] = stat_of(name).kind_on(log.flavour)  # a family member's or a user's stat
        if name.startswith(_FAIL_FAMILY):  # printed only when not 0: a block that reached the stats after them has 0
            for record in log.kernels:
                if "gpgpu_n_tot_thrd_icount" in record.printed:
                    record.printed.setdefault(name, 0.0)
    mixed = f"a second simulator banner at line {banners[0]}" if banners else ""
    uids = [record.launch_uid for record in log.kernels]
    repeated = next((uid for i, uid in enumerate(uids) if uid in uids[:i]), None)
    if not mixed and repeated is not None:  # one process numbers its launches once: a block was copied in
        mixed = (f"kernel_launch_uid {repeated} has two stats blocks: output copied or appended twice, not one "
                 "process's run")
    for before, (index, record) in zip(log.kernels, enumerate(log.kernels[1:], 2), strict=False):
        for name in _PROCESS_TOTALS:
            if not mixed and record.printed.get(name, math.inf) < before.printed.get(name, -math.inf):
                mixed = f"{name} goes down at kernel launch {index} ({record.kernel})"
    for before, (index, record) in zip(log.kernels, enumerate(log.kernels[1:], 2), strict=False):
        for name, value in record.printed.items():
            if not mixed and kinds[name] == "cumulative" and value < before.printed.get(name, -math.inf):
                kinds[name] = "per_kernel"
                log.notes.append(f"{name} goes down at kernel launch {index}: this build resets it for each "
                                 "kernel, so it is kept as printed, not differenced")
    if log.samples and not mixed:  # each kernel's end, from its stats block: the last interval's IPC
        for position, record in enumerate(log.kernels, 1):
            cycle, insn = record.printed.get("gpu_tot_sim_cycle"), record.printed.get("gpu_tot_sim_insn")
            if cycle is not None and insn is not None and not (math.isnan(cycle) or math.isnan(insn)):
                log.samples.append(Sample(int(cycle), int(insn), 0, 0, kernel=record.kernel, launch=position))
        log.samples.sort(key=lambda sample: sample.cycle)
    previous = {}
    for record in log.kernels:
        for name, value in record.printed.items():
            kind = kinds[name]
            if kind == "cumulative" and not mixed:
                record.metrics[name] = value - previous.get(name, 0.0)
            elif kind in ("per_kernel", "process"):
                record.metrics[name] = value
        for ratio, (num, den) in MISS_RATES.items():
            if num in record.metrics and den in record.metrics:
                den_value = record.metrics[den]
                record.metrics[ratio] = record.metrics[num] / den_value if den_value else math.nan
        previous = record.printed
        record.complete = True
    if not mixed:
        for position, occupancy in _sampled_occupancy(log.samples).items():
            if position <= len(log.kernels):
                log.kernels[position - 1].metrics["sampled_occupancy"] = occupancy
    if log.kernels and not (log.exit_detected and not log.stopped_at_limit):
        log.kernels[-1].complete = False

    if mixed:
        log.status = "mixed"
        log.reason = (f"the file holds the output of more than one simulator process ({mixed}); its cumulative "
                      "counters are not differenced: give each process's output its own file")
        for record in log.kernels:
            record.complete = False
    elif not saw_any:
        log.status, log.reason = "empty", "the log is empty"
    elif not log.build:
        log.status = "not_simulated"
        if newer_cudart:
            log.reason = (f"the program is linked to libcudart.so.{newer_cudart} (CUDA {newer_cudart}), which "
                          "GPGPU-Sim cannot run; rebuild it with a CUDA 11.x nvcc and --cudart shared")
        else:
            log.reason = "this is not GPGPU-Sim output: no simulator banner (the program never reached the simulator)"
    elif log.stopped_at_limit:
        log.status = "stopped_at_limit"
        log.reason = "stopped at a max-cycle/instruction limit; the last kernel is incomplete"
    elif log.exit_detected:
        log.status = "complete"
    elif failures:
        log.status = "aborted"
        log.reason = failures[-1]
    else:
        log.status = "incomplete"
        where = f"in kernel {log.kernels[-1].kernel}" if log.kernels else "before any kernel finished"
        log.reason = f"no exit line: the simulator crashed, timed out or the log was cut ({where})"


def _sampled_occupancy(samples: list[Sample]) -> dict[int, float]:
    """Each kernel launch's occupancy from the progress samples, as the simulator defines gpu_occupancy
    (warps filled over the warp slots of the SMs with work, summed over cycles): a sample's counts stand
    for the cycles since the one before. Intervals with no SM at work (launch latency) count for nothing."""
    filled: dict[int, float] = {}
    slots: dict[int, float] = {}
    before = 0
    for sample in samples:
        span, before = sample.cycle - before, max(before, sample.cycle)
        if span > 0 and sample.warp_slots > 0 and sample.launch > 0:
            filled[sample.launch] = filled.get(sample.launch, 0.0) + span * sample.active_warps
            slots[sample.launch] = slots.get(sample.launch, 0.0) + span * sample.warp_slots
    return {launch: round(100 * filled[launch] / slots[launch], 4) for launch in filled if slots[launch]}
