"""The stats simflow reads from GPGPU-Sim logs, as data: each stat's kind (reset per kernel, summed over
the process, a ratio, derived from the progress samples), unit and better direction, the families of
bracketed breakdowns, user-defined stats from TOML files, and how several launches combine.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UserError

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
        name if name in PRINTED or name in CYCLE_WEIGHTED else None)
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
PRINTED = {alias: s.name for s in CATALOGUE for alias in (s.name, *s.printed_as)}  # a printed name -> its stat
MISS_RATES = {"L1D_total_cache_miss_rate": ("L1D_total_cache_misses", "L1D_total_cache_accesses"),
              "L2_total_cache_miss_rate": ("L2_total_cache_misses", "L2_total_cache_accesses")}


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


def iter_catalogue() -> Iterator[dict]:
    for s in (*CATALOGUE, *USER_STATS.values()):
        name = s.name + "TYPE][REASON]" if s.family else s.name
        yield {"name": name, "kind": s.kind, "unit": s.unit, "better": s.better, "meaning": s.meaning,
               "also_printed_as": ", ".join(s.printed_as), "defined_in": getattr(s, "source", "") or "simflow"}
