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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from . import log_scan
from .catalogue import FORK, FORK_MARKER, MISS_RATES, PRINTED, STATS, UPSTREAM, USER_STATS, aggregate, stat_of
from .log_text import (
    _FAIL_FAMILY,
    BLOCK,
    EXIT_LINE,
    LIMIT_LINE,
    PIECE,
    _Damage,
)

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


def _value(text: str) -> float:
    """'48.2100', '10.2516%', '8.38 GB/Sec', '655047x', '-nan' -> float. NaN for -nan, and for what is
    no finite number (inf, 1e999): those are missing values (see _note_value)."""
    if "_" not in text:  # most values are a plain number, spaces around it (float reads '1_0' as 10)
        try:
            value = float(text)
        except ValueError:
            pass
        else:
            return value if math.isfinite(value) else math.nan
    match = _NUMBER.search(text)
    if not match:
        return math.nan
    value = float(match[0])
    return value if math.isfinite(value) else math.nan


_LANES = tuple(f"W{n}" for n in range(1, 33))  # the Stall line's warps issued by how many lanes were active


def _out_of_range(text: str) -> bool:
    match = _NUMBER.search(text)
    return bool(match) and "nan" not in match[0].lower() and not math.isfinite(float(match[0]))


def _grown(before: float, now: float) -> float:
    """How much a running total grew; a total that went down was reset, so it grew by its value."""
    if math.isnan(now) or math.isnan(before):
        return math.nan
    return now - before if now >= before else now


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
    printed: dict[str, float] = field(default_factory=dict)  # stats as printed in its block: the last kernel's only,
    # once the log is read (each other kernel's are in its metrics, differenced)
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
        """rows() as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows(by_name))

    def rows(self, by_name: bool = False) -> list[dict]:
        """One row per kernel launch: identity, resources, then per-kernel metrics. by_name: one row per
        kernel name, its launches aggregated (see `aggregate`), with their count and uids."""
        if not by_name:
            return [{"launch_uid": k.launch_uid, "kernel": k.kernel, "complete": k.complete, **k.resources,
                     **k.metrics} for k in self.kernels]
        names: dict[str, list[KernelRecord]] = {}
        for record in self.kernels:
            names.setdefault(record.kernel, []).append(record)
        rows = []
        for name, records in names.items():
            same = {k: v for k, v in records[0].resources.items() if all(r.resources.get(k) == v for r in records)}
            rows.append({"launches": len(records), "launch_uids": ",".join(str(r.launch_uid) for r in records),
                         "kernel": name, "complete": all(r.complete for r in records), **same,
                         **aggregate([r.metrics for r in records])})
        return rows

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


def parse_file(path: str | Path) -> SimLog:
    """Parse a log, plain or gzip; never raises on what the file holds (only on a missing file). The text is
    read in blocks, and only the lines that can matter are handed to the parser (see log_scan)."""
    damage = _Damage()
    path = Path(path)
    with open(path, "rb") as probe:
        zipped = probe.read(2) == b"\x1f\x8b"
    reader = _Reader(every_line=False)
    with gzip.open(path, "rb") if zipped else open(path, "rb") as handle:
        log_scan.read_blocks(reader, log_scan.byte_blocks(handle, damage, PIECE if zipped else BLOCK),
                             log_scan.scanner(log_scan.keys()))
    if not (reader.log.exit_detected or reader.log.stopped_at_limit):  # its failure lines may say why it ended
        with gzip.open(path, "rb") if zipped else open(path, "rb") as handle:
            for block in log_scan.byte_blocks(handle, _Damage(), PIECE):
                for raw in log_scan.as_text(block).split("\n")[:-1]:
                    reader.hints(raw.strip())
    log = reader.finish()
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
    """Stream the log once, every line; memory holds one record per kernel, not the text."""
    reader = _Reader()
    for raw in lines:
        reader.log.lines += 1
        reader.line(raw)
    return reader.finish()


class _Reader:
    """The parser's state over one log: `line` reads one line, `finish` makes the record."""

    def __init__(self, every_line: bool = True) -> None:
        self.every_line = every_line  # each line is looked at for failure hints as it is read (else: see hints)
        self.log = SimLog()
        self.resources: dict[str, dict] = {}  # kernel name -> regs/lmem/smem/cmem from the PTX info
        self.pending: dict[str, object] = {}  # grid, block and CTA limit of the launch about to print stats
        self.current: KernelRecord | None = None
        self.failures: list[str] = []
        self.newer_cudart: str | None = None
        self.saw_any = False
        self.last_pushed, self.pushed_since_block = "", False
        self.banners: list[int] = []  # lines where another simulator process's banner stands
        self.sampled = 0  # samples before this index belong to a kernel whose stats block was read
        self.user = [(stat.name, stat.pattern) for stat in USER_STATS.values()]
        self.matched: set[str] = set()
        self._block: str | bytes | None = None  # the block being read, and where in it the line being read begins
        self._start = 0
        self._counted = (0, 0)  # a place in that block, and the log's lines before it
        self._count_lines = None  # how lines of a block of bytes are counted (log_scan's, in C)

    def number(self) -> int:
        """The line being read's number: counted only when a note needs it."""
        if self._block is None:
            return self.log.lines
        block, start = self._block, self._start
        counted, lines = self._counted  # lines before `counted` in the block: each line is counted once
        count = self._count_lines or (lambda text, begin, end: text.count("\n", begin, end))
        self._counted = (start, lines + count(block, counted, start))
        return self._counted[1] + 1

    def line(self, raw: str) -> None:
        line = raw.strip()
        if line:
            self.saw_any = True
            self._state(line)
            if self.every_line:
                self.hints(line)

    def hints(self, line: str) -> None:
        """A line that says the program failed, or that it was built with a CUDA the simulator cannot run."""
        if _may_fail(line) and _FAILURE_HINTS.search(line):
            self.failures.append(line)
        elif self.newer_cudart is None and "libcudart.so." in line and (match := _NEWER_CUDART.search(line)):
            self.newer_cudart = match[1]

    def _state(self, line: str) -> None:
        """What one stripped line changes: options, the kernel record being read, samples, launches."""
        log, current = self.log, self.current
        if self.user and current is not None:
            for name, pattern in self.user:
                if found := pattern.search(line):
                    current.printed[name] = _value(found[1])
                    self.matched.add(name)
        if line[0] == "-" and not log.kernels:  # the option dump: -name value # meaning
            name, _, rest = line[1:].partition(" ")
            if name and rest.strip():
                log.options[name] = rest.split("#", 1)[0].strip()
            return
        if line.startswith("total_dl1_"):  # the runtime L1 stat after a progress sample
            if log.samples:
                key, _, rest = line.partition("=")
                if key == "total_dl1_accesses":
                    log.samples[-1].l1d_accesses = _value(rest)
                elif key == "total_dl1_misses":
                    log.samples[-1].l1d_misses = _value(rest)
            return
        if current is not None and line.startswith("Stall:"):  # the 'Warp Occupancy Distribution' line
            slots = dict(part.split(":", 1) for part in line.split() if ":" in part)
            texts = [slots.get(lane, "nan") for lane in _LANES]
            try:  # float() reads each as _value does, unless one has '_', is no number or is not finite
                lanes = list(map(float, texts)) if "_" not in "".join(texts) else []
            except ValueError:
                lanes = []
            if not lanes or not math.isfinite(sum(lanes)):
                lanes = [_value(text) for text in texts]
            for key in ("Stall", "W0_Idle", "W0_Scoreboard"):
                current.printed[f"issue_slots[{key}]"] = _value(slots.get(key, "nan"))
            current.printed["issue_slots[issued]"] = sum(lanes)
            current.printed["issue_slots[issued_partial]"] = sum(lanes[:31])
            return
        if current is not None and "=" in line and not line.startswith(("GPGPU-Sim", "simflow:")):
            key, _, rest = line.partition("=")
            key = key.strip()
            if self._stat(key, rest) or (key != "kernel_name" and "ssert" not in line):
                return  # a kept stat, or the bulk of a block: per-core, per-bank and DRAM lines simflow does not keep
        if line.startswith("kernel_name"):
            name = line.partition("=")[2].strip()
            if not name and log.kernels and not self.pushed_since_block:
                self.current = log.kernels[-1]  # a limit stop prints the last kernel's block again, unnamed
                return
            current = self.current = KernelRecord(launch_uid=len(log.kernels) + 1,
                                                  kernel=name or self.last_pushed or "(unnamed)")
            for sample in log.samples[self.sampled:]:
                sample.kernel, sample.launch = current.kernel, len(log.kernels) + 1
            self.sampled = len(log.samples)
            current.resources = {**self.resources.get(current.kernel, {}), **self.pending}
            self.pending = {}
            self.pushed_since_block = False
            log.kernels.append(current)
            return
        if line.startswith("GPGPU-Sim"):
            if "LIVENESS - uArch: inst" in line:
                if match := _SAMPLE.match(line):
                    log.samples.append(Sample(int(match[1]), int(match[2]), int(match[3]), int(match[4])))
            elif EXIT_LINE in line:
                log.exit_detected = True
            elif LIMIT_LINE in line:
                log.stopped_at_limit = True
            elif match := _PTX_KERNEL.search(line):
                self.resources[match[1]] = {"regs": int(match[2]), "lmem": int(match[3]), "smem": int(match[4]),
                                            "cmem": int(match[5])}
            elif match := _PUSH.search(line):
                self.last_pushed, self.pushed_since_block = match[1], True
                self.pending["grid"] = f"{match[2]},{match[3]},{match[4]}"
                self.pending["block"] = f"{match[5]},{match[6]},{match[7]}"
            elif match := _CTA.search(line):
                self.pending["cta_per_core"] = int(match[1])
                self.pending["cta_limited_by"] = match[2].strip()
        elif "Simulator Version" in line and (match := _BANNER.search(line)):
            if log.build:  # a second process's output: its counters start again from 0
                self.banners.append(self.number())
            else:
                log.simulator_version, log.build = match[1], match[2]
        elif line.startswith("simflow:"):
            log.program_lines.append(line)
            if match := _LAUNCH.match(line):
                self.pending["dynamic_smem"] = int(match[2])

    def _stat(self, key: str, rest: str) -> bool:
        """A 'key = value' line of the current kernel's stats block: True where simflow keeps the key."""
        log, current = self.log, self.current
        if key == "gpgpu_simulation_rate":
            key = "gpgpu_simulation_rate_insn" if "inst/sec" in rest else "gpgpu_simulation_rate_cycle"
        elif key == "gpgpu_simulation_time":
            paren = re.search(r"\((\d+) sec\)", rest)
            current.printed[key] = float(paren[1]) if paren else _value(rest)
            return True
        name = PRINTED.get(key)
        if name is None and key.startswith(_FAIL_FAMILY):
            name = key
        if name is not None:
            if key == FORK_MARKER:
                log.flavour = FORK
            elif not log.flavour and key == "gpgpu_n_cache_bkconflict":
                log.flavour = UPSTREAM
            current.printed[name] = value = _value(rest)
            if math.isnan(value) and _out_of_range(rest):
                log.notes.append(f"line {self.number()}: {key} = {rest.strip()[:40]} is out of range; read as missing")
            elif value < 0:  # every stat kept is a count, a rate or a latency: below zero is a broken line
                current.printed[name] = math.nan
                log.notes.append(f"line {self.number()}: {key} = {rest.strip()[:40]} is negative, which a count, rate "
                                 "or latency cannot be; read as missing")
            return True
        if key == "kernel_launch_uid":
            uid = _value(rest)  # empty in the block printed again when a limit stops the run
            if not math.isnan(uid) and 0 <= uid < 2**63:
                current.launch_uid = int(uid)
            elif rest.strip():
                log.notes.append(f"line {self.number()}: kernel_launch_uid = {rest.strip()[:40]} is no launch "
                                 "number; kept the launch's position")
            return True
        return False

    def finish(self) -> SimLog:
        log = self.log
        for sample in log.samples[self.sampled:]:  # the kernel running when the log ends
            sample.kernel = self.last_pushed if self.pushed_since_block else "(after the last kernel)"
        for stat in USER_STATS.values():
            if stat.name not in self.matched and log.kernels:
                log.notes.append(f"user stat {stat.name} ({stat.source}): its regex {stat.regex!r} never matched "
                                 "in this log's stats blocks")
        _finish(log, self.failures, self.newer_cudart, self.saw_any, self.banners)
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
    seen: set[int] = set()  # a set: a log of many launches is not checked pair by pair
    repeated = None
    for record in log.kernels:
        if record.launch_uid in seen:
            repeated = record.launch_uid
            break
        seen.add(record.launch_uid)
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
    for index, record in enumerate(log.kernels):
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
        if index:  # its block is in its metrics now: memory holds one printed block, the last one (run_facts)
            log.kernels[index - 1].printed = {}
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
