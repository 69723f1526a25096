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
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import UserError

# kind: "per_kernel" (reset for each kernel, kept as printed), "cumulative" (summed over the
# process, differenced), "ratio" (recomputed from two differenced counters), "derived" (computed from
# the progress samples, not printed in the stats block), "process"
# (whole-process figure so far, kept as printed).


@dataclass(frozen=True)
class Stat:
    name: str  # as the simulator prints it
    kind: str
    unit: str
    meaning: str
    better: str = ""  # "lower", "higher" or "" (neither)
    printed_as: tuple[str, ...] = ()  # other names forks print for the same stat
    fork_kind: str = ""  # the kind on the accel-sim fork, where it differs
    family: bool = False  # `name` is a prefix: every printed key that starts with it is such a stat

    def kind_on(self, flavour: str) -> str:
        return self.fork_kind if flavour == FORK and self.fork_kind else self.kind


_C, _K, _P = "cumulative", "per_kernel", "process"
# The two simulator families simflow reads. The fork prints gpgpu_n_l1cache_bkconflict where upstream
# prints gpgpu_n_cache_bkconflict, and resets Total_core_cache_stats_breakdown for each kernel where
# upstream accumulates it (measured: the fork's second block of global-then-shared holds shared's own
# 1192/196/492/2160/512, upstream's holds the sums 7215/392/984/9136/1024).
FORK, UPSTREAM = "accel-sim fork", "upstream"
FORK_MARKER = "gpgpu_n_l1cache_bkconflict"

CATALOGUE: tuple[Stat, ...] = (
    Stat("gpu_sim_cycle", _K, "cycles", "cycles this kernel ran", "lower"),
    Stat("gpu_sim_insn", _K, "thread insn", "thread instructions this kernel executed", "lower"),
    Stat("gpu_ipc", _K, "thread insn/cycle", "thread instructions per cycle over the whole GPU", "higher"),
    Stat("gpu_occupancy", _K, "%", "active warps over the maximum, averaged over active cycles", "higher"),
    Stat("sampled_occupancy", "derived", "%", "gpu_occupancy's measure (active warps over the warp slots of SMs "
         "with work) from the progress samples, each weighted by its interval's cycles: a figure on every build, "
         "where the accel-sim fork prints gpu_occupancy = -nan", "higher"),
    Stat("partiton_level_parallism", _K, "", "memory partitions busy per cycle", "higher"),
    Stat("L2_BW", _K, "GB/s", "L2 bandwidth this kernel used", ""),
    Stat("gpu_tot_sim_cycle", _C, "cycles", "cycles of every kernel so far (differenced)", "lower"),
    Stat("gpu_tot_sim_insn", _C, "thread insn", "thread instructions so far (differenced)", "lower"),
    Stat("gpu_tot_issued_cta", _C, "CTAs", "thread blocks issued (differenced: this kernel's)", ""),
    Stat("gpu_tot_ipc", _P, "thread insn/cycle", "IPC of the whole process so far", "higher"),
    Stat("gpu_tot_occupancy", _P, "%", "occupancy of the whole process so far", "higher"),
    Stat("gpu_stall_dramfull", _C, "", "stalls: DRAM full", "lower"),
    Stat("gpu_stall_icnt2sh", _C, "", "stalls: interconnect to shader", "lower"),
    Stat("L1I_total_cache_accesses", _C, "", "L1 instruction cache accesses", ""),
    Stat("L1I_total_cache_misses", _C, "", "L1 instruction cache misses", "lower"),
    Stat("L1D_total_cache_accesses", _C, "", "L1 data cache accesses (sectors)", "lower"),
    Stat("L1D_total_cache_misses", _C, "", "L1 data cache misses", "lower"),
    Stat("L1D_total_cache_miss_rate", "ratio", "", "L1D misses over accesses", "lower"),
    Stat("L1D_total_cache_pending_hits", _C, "", "L1D hits on a line already being fetched", ""),
    Stat("L1D_total_cache_reservation_fails", _C, "", "L1D accesses refused for lack of resources", "lower"),
    Stat("L1C_total_cache_accesses", _C, "", "constant cache accesses", ""),
    Stat("L1C_total_cache_misses", _C, "", "constant cache misses", "lower"),
    Stat("L1T_total_cache_accesses", _C, "", "texture cache accesses", ""),
    Stat("L1T_total_cache_misses", _C, "", "texture cache misses", "lower"),
    Stat("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][HIT]", _C, "", "global loads that hit in L1D", "higher",
         fork_kind=_K),
    Stat("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][MISS]", _C, "", "global loads that missed L1D", "lower",
         fork_kind=_K),
    Stat("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][SECTOR_MISS]", _C, "", "global loads: sector misses",
         "lower", fork_kind=_K),
    Stat("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", _C, "", "global load accesses to L1D", "",
         fork_kind=_K),
    Stat("Total_core_cache_stats_breakdown[GLOBAL_ACC_W][TOTAL_ACCESS]", _C, "", "global store accesses to L1D", "",
         fork_kind=_K),
    Stat("gpgpu_n_tot_thrd_icount", _C, "thread insn", "thread instructions issued", "lower"),
    Stat("gpgpu_n_tot_w_icount", _C, "warp insn", "warp instructions issued", "lower"),
    Stat("gpgpu_n_stall_shd_mem", _C, "", "pipeline stalls on shared/global memory", "lower"),
    Stat("gpgpu_n_mem_read_local", _C, "", "local memory reads (spills)", "lower"),
    Stat("gpgpu_n_mem_write_local", _C, "", "local memory writes (spills)", "lower"),
    Stat("gpgpu_n_mem_read_global", _C, "", "global memory read requests", "lower"),
    Stat("gpgpu_n_mem_write_global", _C, "", "global memory write requests", "lower"),
    Stat("gpgpu_n_mem_texture", _C, "", "texture memory requests", ""),
    Stat("gpgpu_n_mem_const", _C, "", "constant memory requests", ""),
    Stat("gpgpu_n_load_insn", _C, "thread insn", "load instructions (thread level)", ""),
    Stat("gpgpu_n_store_insn", _C, "thread insn", "store instructions (thread level)", ""),
    Stat("gpgpu_n_shmem_insn", _C, "thread insn", "shared-memory instructions (thread level)", ""),
    Stat("gpgpu_n_sstarr_insn", _C, "", "shared-memory array instructions", ""),
    Stat("gpgpu_n_tex_insn", _C, "", "texture instructions", ""),
    Stat("gpgpu_n_const_mem_insn", _C, "", "constant-memory instructions", ""),
    Stat("gpgpu_n_param_mem_insn", _C, "", "kernel-parameter loads", ""),
    Stat("gpgpu_n_shmem_bkconflict", _C, "", "shared-memory bank conflicts (filled by the accel-sim fork)", "lower"),
    Stat("gpgpu_n_cache_bkconflict", _C, "", "L1 cache bank conflicts", "lower",
         printed_as=("gpgpu_n_l1cache_bkconflict",)),
    Stat("gpgpu_n_intrawarp_mshr_merge", _C, "", "MSHR merges within a warp", ""),
    Stat("gpgpu_n_cmem_portconflict", _C, "", "constant cache port conflicts", "lower"),
    Stat("gpgpu_stall_shd_mem[c_mem][resource_stall]", _C, "", "stalls: constant memory resources", "lower"),
    Stat("gpgpu_stall_shd_mem[s_mem][bk_conf]", _C, "", "stalls: shared-memory bank conflicts", "lower"),
    Stat("gpgpu_stall_shd_mem[gl_mem][resource_stall]", _C, "", "stalls: global memory resources", "lower"),
    Stat("gpgpu_stall_shd_mem[gl_mem][coal_stall]", _C, "", "stalls: global memory coalescing", "lower"),
    Stat("gpgpu_stall_shd_mem[gl_mem][data_port_stall]", _C, "", "stalls: L1D data port", "lower"),
    Stat("gpu_reg_bank_conflict_stalls", _C, "", "register bank conflict stalls", "lower"),
    # The 'Warp Occupancy Distribution' line: every cycle, each warp scheduler of an SM with work either
    # issues one warp instruction (W1..W32: with that many threads active) or counts why it could not.
    Stat("issue_slots[issued]", _C, "scheduler cycles", "scheduler cycles that issued a warp instruction "
         "(W1..W32; equals the warp instructions)", "higher"),
    Stat("issue_slots[issued_partial]", _C, "scheduler cycles", "issued warp instructions with fewer than 32 "
         "threads active (W1..W31: divergence or partial warps)", "lower"),
    Stat("issue_slots[Stall]", _C, "scheduler cycles", "a ready instruction could not issue: its pipeline or "
         "functional unit was busy", "lower"),
    Stat("issue_slots[W0_Scoreboard]", _C, "scheduler cycles", "every warp waited on a register still being "
         "written (a RAW dependence, mostly on a memory load)", "lower"),
    Stat("issue_slots[W0_Idle]", _C, "scheduler cycles", "no warp had a valid instruction (warps finished, at a "
         "barrier, or waiting for instruction fetch)", "lower"),
    Stat("Total_core_cache_fail_stats_breakdown[", _C, "", "L1 accesses refused, by access type and reason "
         "(printed only when not 0)", "lower", fork_kind=_K, family=True),
    Stat("L1D_cache_data_port_util", _P, "", "share of cycles the L1D data port was busy (whole process)", ""),
    Stat("L1D_cache_fill_port_util", _P, "", "share of cycles the L1D fill port was busy (whole process)", ""),
    Stat("L2_cache_data_port_util", _P, "", "share of cycles the L2 data ports were busy (whole process)", ""),
    Stat("L2_total_cache_accesses", _C, "", "L2 accesses", ""),
    Stat("L2_total_cache_misses", _C, "", "L2 misses", "lower"),
    Stat("L2_total_cache_miss_rate", "ratio", "", "L2 misses over accesses", "lower"),
    Stat("L2_total_cache_pending_hits", _C, "", "L2 hits on a line already being fetched", ""),
    Stat("L2_total_cache_reservation_fails", _C, "", "L2 accesses refused for lack of resources", "lower"),
    # L2 by access type and outcome (reset per kernel by the fork, like the L1 breakdown). They say what DRAM
    # traffic there was: a read miss brings a DRAM read; a write miss is allocated in the write-back L2 and reaches
    # DRAM only when evicted; reads of data cudaMemcpy put in L2 (gpgpu_perf_sim_memcpy = 1) hit.
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", _C, "", "global reads at L2", "", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_R][HIT]", _C, "", "global reads that hit in L2 (an earlier access, "
         "or cudaMemcpy's fill of L2 when gpgpu_perf_sim_memcpy = 1)", "higher", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_R][MISS]", _C, "", "global reads that missed L2: each a DRAM read",
         "lower", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_R][SECTOR_MISS]", _C, "", "global reads that missed an L2 sector of "
         "a line present: each a DRAM read", "lower", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_W][TOTAL_ACCESS]", _C, "", "global writes at L2", "", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_W][MISS]", _C, "", "global writes that missed L2: allocated in the "
         "write-back L2, no DRAM read; DRAM sees them when evicted", "lower", fork_kind=_K),
    Stat("L2_cache_stats_breakdown[GLOBAL_ACC_W][SECTOR_MISS]", _C, "", "global writes that missed an L2 sector: "
         "allocated, no DRAM read", "lower", fork_kind=_K),
    Stat("total dram reads", _C, "", "DRAM read requests (the L2 read misses; 0 when every read hit in L2, e.g. data "
         "cudaMemcpy put there with gpgpu_perf_sim_memcpy = 1)", "lower"),
    Stat("total dram writes", _C, "", "DRAM write requests (L2 evictions of written lines: 0 when nothing written "
         "was evicted before the run ended)", "lower"),
    # Memory latency: the simulator never resets these, so they cover the whole process so far
    # (one kernel in most simflow runs). mf = a memory fetch from the core's request to its reply.
    Stat("averagemflatency", _P, "cycles", "average memory fetch latency, request to reply (whole process)", "lower"),
    Stat("maxmflatency", _P, "cycles", "longest memory fetch latency (whole process)", "lower"),
    Stat("avg_icnt2mem_latency", _P, "cycles", "average interconnect latency, core to memory partition "
         "(whole process)", "lower"),
    Stat("max_icnt2mem_latency", _P, "cycles", "longest interconnect latency, core to memory (whole process)", "lower"),
    Stat("avg_icnt2sh_latency", _P, "cycles", "average interconnect latency, memory partition to core "
         "(whole process)", "lower"),
    Stat("max_icnt2sh_latency", _P, "cycles", "longest interconnect latency, memory to core (whole process)", "lower"),
    Stat("maxmrqlatency", _P, "cycles", "longest wait in a DRAM request queue (whole process)", "lower"),
    Stat("icnt_total_pkts_mem_to_simt", _C, "packets", "interconnect packets memory -> cores", ""),
    Stat("icnt_total_pkts_simt_to_mem", _C, "packets", "interconnect packets cores -> memory", ""),
    Stat("gpgpu_simulation_time", _P, "s", "wall time of the simulation so far", "lower"),
    Stat("gpgpu_simulation_rate_insn", _P, "insn/s", "simulated thread instructions per wall second", "higher"),
    Stat("gpgpu_simulation_rate_cycle", _P, "cycles/s", "simulated cycles per wall second", "higher"),
    Stat("gpgpu_silicon_slowdown", _P, "x", "how much slower than the modelled GPU", "lower"),
)
STATS = {s.name: s for s in CATALOGUE if not s.family}
FAMILIES = tuple(s for s in CATALOGUE if s.family)


@dataclass(frozen=True)
class UserStat(Stat):
    """A stat a user defines in a TOML file (see load_user_stats): read where its regex matches."""

    regex: str = ""
    source: str = ""  # the file that defines it

    @property
    def pattern(self) -> re.Pattern:
        return re.compile(self.regex)  # re caches compiled patterns; parse_lines takes it once per log


USER_STATS: dict[str, UserStat] = {}  # loaded with load_user_stats (--stats FILE, SIMFLOW_STATS)
USER_STATS_ENV = "SIMFLOW_STATS"
KINDS = ("per_kernel", "cumulative", "process")


def load_user_stats(paths: list[str | Path]) -> list[UserStat]:
    """Read stat definitions and add them to the catalogue. Each file holds tables

        [stats.NAME]
        regex = 'L2_cache_fill_port_util = ([0-9.]+)'   # one capture group: the value
        kind = "process"            # per_kernel | cumulative (differenced) | process
        unit = ""
        meaning = "share of cycles the L2 fill ports were busy"
        better = "lower"            # lower | higher | "" (neither)

    A regex is tried on each line of every kernel's stats block (and what follows the last one)."""
    import tomllib

    loaded = []
    for path in map(Path, paths):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"no stats file {path} (given with --stats or {USER_STATS_ENV})") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"stats file {path}: not valid TOML: {exc}") from None
        unknown = sorted(set(data) - {"stats"})
        if unknown or not isinstance(data.get("stats"), dict):
            found = ", ".join(unknown) or "no [stats] table"
            raise UserError(f"stats file {path}: put each stat in a [stats.NAME] table (found {found})")
        for name, table in data["stats"].items():
            stat = _user_stat(path, name, table)
            earlier = next((x.source for x in (*USER_STATS.values(), *loaded) if x.name == name), None)
            if earlier is not None and earlier != stat.source:
                raise UserError(f"stats file {path}, [stats.{name}]: {name!r} is defined already in {earlier}")
            loaded.append(stat)
    for stat in loaded:
        USER_STATS[stat.name] = stat
    return loaded


def _user_stat(path: Path, name: str, table) -> UserStat:
    where = f"stats file {path}, [stats.{name}]"
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table with regex, kind, unit, meaning, better")
    unknown = sorted(set(table) - {"regex", "kind", "unit", "meaning", "better"})
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}; valid: regex, kind, unit, meaning, better")
    builtin = STATS.get(name) or next((f for f in FAMILIES if name.startswith(f.name)), None) or (
        name if name in _PRINTED or name in CYCLE_WEIGHTED else None)
    if builtin is not None:
        raise UserError(f"{where}: {name!r} is a built-in stat (simflow parse --catalogue lists them); "
                        "give yours another name")
    regex = table.get("regex")
    if not isinstance(regex, str) or not regex:
        raise UserError(f"{where}: regex must be a regular expression with one capture group (the value)")
    try:
        groups = re.compile(regex).groups
    except re.error as exc:
        raise UserError(f"{where}: regex {regex!r} does not compile: {exc}") from None
    if groups != 1:
        raise UserError(f"{where}: regex {regex!r} has {groups} capture groups; it needs exactly one (the value)")
    kind = table.get("kind", "")
    if kind not in KINDS:
        raise UserError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    better = table.get("better", "")
    if better not in ("lower", "higher", ""):
        raise UserError(f"{where}: better must be \"lower\", \"higher\" or \"\" (neither), got {better!r}")
    return UserStat(name=name, kind=kind, unit=str(table.get("unit", "")), meaning=str(table.get("meaning", "")),
                    better=better, regex=regex, source=str(path))


def stat_of(name: str) -> Stat | None:
    """The catalogue's facts for a stat name, a family member's and the user's included (None if unknown)."""
    found = STATS.get(name) or USER_STATS.get(name)
    if found is None:
        family = next((f for f in FAMILIES if name.startswith(f.name)), None)
        if family is not None:
            found = replace(family, name=name, family=False)
    return found


# The stats a summary table shows first.
SUMMARY = ("gpu_sim_cycle", "gpu_sim_insn", "gpu_ipc", "gpu_occupancy", "sampled_occupancy", "gpu_tot_issued_cta",
           "gpgpu_n_tot_w_icount", "L1D_total_cache_accesses", "L1D_total_cache_misses", "L1D_total_cache_miss_rate",
           "gpgpu_n_load_insn", "gpgpu_n_store_insn", "gpgpu_n_shmem_insn", "gpgpu_n_shmem_bkconflict",
           "gpgpu_stall_shd_mem[s_mem][bk_conf]", "issue_slots[W0_Scoreboard]", "issue_slots[W0_Idle]",
           "issue_slots[Stall]", "L2_total_cache_accesses", "L2_total_cache_misses", "total dram reads",
           "total dram writes", "averagemflatency", "gpgpu_simulation_time")
_PRINTED = {alias: s.name for s in CATALOGUE for alias in (s.name, *s.printed_as)}
MISS_RATES = {"L1D_total_cache_miss_rate": ("L1D_total_cache_misses", "L1D_total_cache_accesses"),
              "L2_total_cache_miss_rate": ("L2_total_cache_misses", "L2_total_cache_accesses")}

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
    """One periodic progress line of the simulator (see simflow.gpgpusim_config.INSTRUMENTATION)."""

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
            name = _PRINTED.get(key)
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


# Per-kernel rates that several launches combine by weighting with each launch's cycles.
CYCLE_WEIGHTED = {"gpu_ipc", "gpu_occupancy", "sampled_occupancy", "partiton_level_parallism", "L2_BW",
                  "theoretical_occupancy"}


def aggregate(launches: list[dict[str, float]]) -> dict[str, float]:
    """Several kernel launches' metrics as one: counts summed, rates weighted by each launch's
    gpu_sim_cycle, miss rates recomputed from the sums, whole-process figures the last launch's."""
    out: dict[str, float] = {}
    for name in dict.fromkeys(n for launch in launches for n in launch):
        values = [(launch.get(name, math.nan), launch.get("gpu_sim_cycle", math.nan)) for launch in launches]
        stat = stat_of(name)
        if name in CYCLE_WEIGHTED:
            known = [(v, c) for v, c in values if not math.isnan(v) and not math.isnan(c)]
            out[name] = sum(v * c for v, c in known) / sum(c for _, c in known) if known and any(
                c for _, c in known) else math.nan
        elif stat is not None and stat.kind == "process":
            out[name] = values[-1][0]
        else:
            out[name] = sum(v for v, _ in values)
    for ratio, (num, den) in MISS_RATES.items():
        if num in out and den in out:
            out[ratio] = out[num] / out[den] if out[den] else math.nan
    return out


AERIALVISION_GLOB = "gpgpusim_visualizer__*.log.gz"  # where the simulator writes it (it ignores the path option)


def parse_aerialvision(path: str | Path) -> list[dict]:
    """The AerialVision file (visualizer_enabled = 1 in a config overlay), one row per interval of
    gpgpu_runtime_stat cycles: the kernel (1, 2, ... in launch order), cycles within it, IPC, issue
    slots per SM (the 'WarpDivergenceBreakdown': the simulator averages over all SMs and rounds down)
    and L2 hits and misses. Slots and L2 counts are what happened since the previous print, so a
    kernel's first interval also holds the previous kernel's last cycles. A damaged file gives the
    intervals before the damage."""
    rows: list[dict] = []
    current: dict[str, list[str]] = {}
    kernel, before_cycle, before_insn, before_total = 0, 0, 0, None
    damage = _Damage()
    with _open_text(Path(path)) as handle:
        for line in _readable_lines(handle, damage):
            key, _, rest = line.partition(":")
            if key in _AV_KEYS:
                current[key] = rest.split()
            if key != "globaltotinsncount":
                continue
            try:
                cycle, insn, total = (int(current[k][0]) for k in ("globalcyclecount", "globalinsncount", key))
                slots = [int(v) for v in current.get("WarpDivergenceBreakdown", [])]
            except (KeyError, IndexError, ValueError):
                current = {}
                continue
            if total != before_total or cycle < before_cycle:  # the next kernel: its counters start again
                kernel, before_cycle, before_insn, before_total = kernel + 1, 0, 0, total
            row = {"kernel": kernel, "cycle_start": before_cycle, "cycle_end": cycle,
                   "ipc": (insn - before_insn) / (cycle - before_cycle) if cycle > before_cycle else math.nan}
            if len(slots) >= 4:
                row.update({"slots_idle": slots[0], "slots_scoreboard": slots[1], "slots_stall": slots[2],
                            "slots_issued": sum(slots[3:]), "slots_issued_partial": sum(slots[3:-1])})
            for name, av in (("l2_read_hits", "Ltworeadhit"), ("l2_read_misses", "Ltworeadmiss"),
                             ("l2_write_hits", "Ltwowritehit"), ("l2_write_misses", "Ltwowritemiss")):
                row[name] = int(current[av][0]) if current.get(av) else math.nan
            rows.append(row)
            before_cycle, before_insn, current = cycle, insn, {}
    return rows


_AV_KEYS = {"globalcyclecount", "globalinsncount", "globaltotinsncount", "WarpDivergenceBreakdown",
            "Ltworeadhit", "Ltworeadmiss", "Ltwowritehit", "Ltwowritemiss"}


def iter_catalogue() -> Iterator[dict]:
    for s in (*CATALOGUE, *USER_STATS.values()):
        name = s.name + "TYPE][REASON]" if s.family else s.name
        yield {"name": name, "kind": s.kind, "unit": s.unit, "better": s.better, "meaning": s.meaning,
               "also_printed_as": ", ".join(s.printed_as), "defined_in": getattr(s, "source", "") or "simflow"}
