"""The `gpu-ncu` backend: hardware counters from Nsight Compute (`ncu`) for the GPU path, under the simulator's names.

`profile` runs `simflow run` (one checked launch sequence) under ncu with the counters that
match GPGPU-Sim's stats, parses ncu's CSV and returns a run of backend `gpu-ncu`. Each counter
is stored twice: raw (`ncu:<metric>`) and under the simulator's name (`ALIGNED`), in the
hardware's own basis; `ALIGNED` also says how a simulator value is brought to that basis
(thread vs warp instructions, what each side counts), so diffs and correlations state it.

As a backend, sweeps can make these runs too; `simflow profile` is its short form.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingTool, UserError
from ..job import Job
from ..kernels.variants import Kernel, show_value
from ..registry import backend_class
from ..settings import current
from ..sim.catalogue import stat_of
from .base import Availability, Backend, Finding, RunResult

NCU_OPTIONS = ("--csv", "--page", "raw", "--print-units", "base", "--clock-control", "none")
NCU_HELP = ("Nsight Compute's ncu comes with the CUDA toolkit (/usr/local/cuda/bin/ncu) or as the "
            "nsight-compute package; put it on PATH or set SIMFLOW_NCU to its path")
COUNTER_HELP = ("the driver does not let this user read GPU performance counters (ERR_NVGPUCTRPERM): run as root, "
                "or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0 "
                "(developer.nvidia.com/ERR_NVGPUCTRPERM)")


@dataclass(frozen=True)
class Aligned:
    """A simulator stat and the hardware counter(s) that measure the same thing."""

    name: str  # the simulator's stat name
    counters: tuple[str, ...]  # summed (or divided, see `ratio`)
    unit: str
    normalisation: str  # what differs between the two, and how the simulator's value is scaled
    sim_scale: float = 1.0  # simulator value x sim_scale = the hardware's basis
    ratio: bool = False  # counters[0] / counters[1] instead of a sum


ALIGNED: tuple[Aligned, ...] = (
    Aligned("gpu_sim_cycle", ("sm__cycles_elapsed.max",), "cycles",
            "core cycles of the kernel; the H200 (132 SMs, 1.98 GHz) and the modelled Volta (80 SMs, 1.13 GHz) "
            "differ, so compare ranks, not values"),
    Aligned("gpu_sim_insn", ("sm__sass_thread_inst_executed.sum",), "thread insn",
            "thread instructions; the simulator executes PTX, the GPU SASS for sm_90"),
    Aligned("gpgpu_n_tot_w_icount", ("smsp__inst_executed.sum",), "warp insn",
            "warp instructions (PTX in the simulator, SASS on the GPU)"),
    Aligned("gpu_ipc", ("sm__sass_thread_inst_executed.sum", "sm__cycles_elapsed.max"), "thread insn/cycle",
            "thread instructions per cycle over the whole GPU (the simulator's gpu_ipc), not per SM; "
            "ncu's per-SM warp IPC is ncu:sm__inst_executed.avg.per_cycle_active", ratio=True),
    Aligned("gpu_occupancy", ("sm__warps_active.avg.pct_of_peak_sustained_active",), "%",
            "active warps over the maximum, averaged over active cycles (the accel-sim fork prints -nan)"),
    Aligned("gpu_tot_issued_cta", ("launch__grid_size",), "CTAs", "thread blocks launched"),
    Aligned("regs", ("launch__registers_per_thread",), "regs/thread",
            "registers per thread: ptxas for sm_90 on the GPU, the PTX-level count in the simulator"),
    Aligned("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]",
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "sectors",
            "global loads at L1: 32-byte sectors on the GPU, the simulator's L1D read accesses"),
    Aligned("Total_core_cache_stats_breakdown[GLOBAL_ACC_R][MISS]",
            ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum",), "sectors",
            "global load misses at L1 (sectors on the GPU; line misses in the simulator)"),
    Aligned("gpgpu_n_load_insn", ("smsp__inst_executed_op_global_ld.sum",), "warp insn",
            "global load instructions: warp level on the GPU; the simulator counts threads, its value / 32",
            sim_scale=1 / 32),
    Aligned("gpgpu_n_store_insn", ("smsp__inst_executed_op_global_st.sum",), "warp insn",
            "global store instructions: warp level on the GPU; the simulator counts threads, its value / 32",
            sim_scale=1 / 32),
    Aligned("gpgpu_n_shmem_insn", ("smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"),
            "warp insn", "shared-memory instructions: warp level on the GPU; the simulator counts threads, "
            "its value / 32", sim_scale=1 / 32),
    Aligned("gpgpu_n_shmem_bkconflict", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                         "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"), "conflicts",
            "shared-memory bank conflicts (extra wavefronts on the GPU)"),
    Aligned("L2_total_cache_accesses", ("lts__t_sectors_srcunit_tex_op_read.sum",), "sectors",
            "L2 read sectors from L1 on the GPU; the simulator counts every L2 access, writes too"),
    Aligned("total dram reads", ("dram__sectors_read.sum",), "sectors",
            "DRAM reads: 32-byte sectors on the GPU, read requests in the simulator (50 MB of H200 L2 vs 6 MB)"),
    Aligned("total dram writes", ("dram__sectors_write.sum",), "sectors",
            "DRAM writes: 32-byte sectors on the GPU, write requests in the simulator"),
)
ALIGNED_BY_NAME = {a.name: a for a in ALIGNED}
EXTRA_COUNTERS = ("gpu__time_duration.sum", "sm__inst_executed.avg.per_cycle_active",
                  "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "lts__t_sector_op_read_hit_rate.pct",
                  "sm__cycles_active.avg")
# Where the issue slots went (hardware explain). An SM sub-partition has one scheduler and one issue slot a cycle;
# its active cycles less the warp instructions it issued are the slots lost. Each warp state's counter is the
# warp-cycles warps spent in it, summed over the sub-partitions (Nsight Compute's Warp State Statistics).
# state -> what a slot lost to it is, as `explain` words it ("more ..." / "fewer ...").
WARP_STATES = {
    "long_scoreboard": "long-scoreboard stalls (warps waiting on a global or local load)",
    "short_scoreboard": "short-scoreboard stalls (warps waiting on shared memory or a special function)",
    "barrier": "barrier stalls (warps waiting at a block barrier)",
    "gmma": "wgmma stalls (warps waiting on a warpgroup MMA)",
    "mio_throttle": "MIO-throttle stalls (the shared-memory and special-function queue full)",
    "lg_throttle": "LG-throttle stalls (the global/local memory queue full)",
    "math_pipe_throttle": "math-pipe stalls (a math pipe busy)",
    "wait": "fixed-latency waits (a dependency on an arithmetic result)",
    "no_instruction": "no-instruction stalls (instruction cache misses, branches)",
    "drain": "drain stalls (stores leaving at exit)",
    "membar": "memory-barrier stalls",
    "branch_resolving": "branch-resolving stalls",
    "sleeping": "sleeping warps (nanosleep, suspended mbarrier waits)",
    "dispatch_stall": "dispatch stalls",
    "tex_throttle": "texture-queue stalls",
    "imc_miss": "constant-cache misses",
    "misc": "other stalls",
}
ISSUING_STATES = ("selected", "not_selected")  # held only in cycles that issued: they lose no slot
SLOT_COUNTERS = ("smsp__cycles_active.sum", "smsp__inst_issued.sum",
                 *(f"smsp__warps_issue_stalled_{s}.sum" for s in (*WARP_STATES, *ISSUING_STATES)))
# The evidence beside the slots: (section, counter or counters summed, what, unit); a pipe's % is ncu's own (of its
# peak over the kernel's elapsed cycles), weighted by each kernel's cycles in a run of several.
EVIDENCE = (
    ("instructions", ("smsp__inst_issued.sum",), "warp instructions issued", "warp insn"),
    ("instructions", ("sm__sass_thread_inst_executed.sum",), "thread instructions (SASS)", "thread insn"),
    ("instructions", ("smsp__inst_executed_op_ldgsts.sum",), "cp.async copies (LDGSTS)", "warp insn"),
    ("instructions", ("smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum"),
     "shared-memory loads and stores", "warp insn"),
    ("instructions", ("smsp__inst_executed_op_global_ld.sum",), "global loads", "warp insn"),
    ("pipes", ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",), "tensor pipe active", "%"),
    ("pipes", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",), "FMA pipe active", "%"),
    ("pipes", ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",), "ALU pipe active", "%"),
    ("pipes", ("sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_elapsed",),
     "shared pipe active (FP16, tensor operand fetch)", "%"),
    ("pipes", ("sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_elapsed",), "TMA (bulk copy) unit active", "%"),
    ("pipes", ("lts__t_sectors.avg.pct_of_peak_sustained_elapsed",), "L2 sector throughput", "%"),
    ("memory", ("l1tex__m_xbar2l1tex_read_bytes_pipe_tma.sum",), "bytes read by bulk copies (TMA)", "B"),
    ("memory", ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",), "shared-memory wavefronts", "wavefronts"),
    ("memory", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",), "shared-memory bank conflicts", "conflicts"),
    ("memory", ("l1tex__t_sectors.sum",), "L1 sectors", "sectors"),
    ("memory", ("l1tex__t_sectors_lookup_miss.sum",), "L1 sector misses", "sectors"),
    ("memory", ("lts__t_sectors.sum",), "L2 sectors", "sectors"),
    ("memory", ("lts__t_sectors_lookup_miss.sum",), "L2 sector misses", "sectors"),
    ("memory", ("dram__bytes_read.sum",), "DRAM bytes read", "B"),
    ("memory", ("dram__bytes_write.sum",), "DRAM bytes written", "B"),
)
OCCUPANCY_LIMITS = ("registers", "shared_mem", "warps", "blocks")
EVIDENCE_COUNTERS = (
    *(c for _, counters, _, _ in EVIDENCE for c in counters), "sm__maximum_warps_per_active_cycle_pct",
    *(f"launch__occupancy_limit_{x}" for x in OCCUPANCY_LIMITS), "launch__waves_per_multiprocessor",
    "device__attribute_multiprocessor_count", "device__attribute_num_schedulers_per_multiprocessor")
COUNTERS = tuple(dict.fromkeys([c for a in ALIGNED for c in a.counters] + list(EXTRA_COUNTERS) + list(SLOT_COUNTERS)
                               + list(EVIDENCE_COUNTERS)))


NCU_DEFAULT = "/usr/local/cuda/bin/ncu"


def _by_kernel(metrics: dict[str, float]) -> dict[str, dict[str, float]]:
    """A run's raw counters, kernel by kernel ('' for a one-kernel run or a kernel view): counter -> value."""
    out: dict[str, dict[str, float]] = {}
    for name, value in metrics.items():
        kernel, sep, counter = name.rpartition("ncu:")
        if sep and (not kernel or kernel.endswith(".")):
            out.setdefault(kernel.removesuffix("."), {})[counter] = float(value)
    return out


def issue_slots(metrics: dict[str, float]) -> tuple[float, dict[str, float]] | None:
    """Warp instructions issued, and the issue slots lost, by warp state: in each kernel, its sub-partitions'
    active cycles less the instructions issued, split over the stall states in proportion to the warp-cycles
    each held (states of issuing cycles aside). issued + the lost slots = the active sub-partition cycles,
    exactly. None when the run has no such counters (a profile made before simflow collected them)."""
    issued, lost = 0.0, dict.fromkeys(WARP_STATES, 0.0)
    kernels = _by_kernel(metrics)
    for counters in kernels.values():
        active, done = counters.get("smsp__cycles_active.sum", math.nan), counters.get("smsp__inst_issued.sum",
                                                                                      math.nan)
        held = {s: counters.get(f"smsp__warps_issue_stalled_{s}.sum", math.nan) for s in WARP_STATES}
        held = {s: v for s, v in held.items() if not math.isnan(v)}
        if math.isnan(active) or math.isnan(done) or not held:
            return None
        weight = sum(held.values())
        issued += done
        for state, value in held.items():
            lost[state] += (active - done) * (value / weight if weight else 1 / len(held))
    return (issued, lost) if kernels else None


def evidence(metrics: dict[str, float]) -> list[tuple[str, str, float, str, str]]:
    """(section, what, value, unit, detail) for explain's evidence, over the run's kernels: counts summed, pipes'
    percentages weighted by each kernel's cycles, occupancy of the kernel that took longest."""
    kernels = _by_kernel(metrics)
    if not kernels:
        return []

    def total(counter: str) -> float:
        values = [k[counter] for k in kernels.values() if counter in k]
        return sum(values) if values else math.nan

    def weighted(counter: str) -> float:  # a percentage over the run: each kernel's, weighted by its cycles
        pairs = [(k[counter], k.get("sm__cycles_elapsed.max", math.nan)) for k in kernels.values() if counter in k]
        weight = sum(c for _, c in pairs)
        return sum(v * c for v, c in pairs) / weight if pairs and weight else math.nan

    out = []
    for section, counters, what, unit in EVIDENCE:
        value = sum(weighted(c) if unit == "%" else total(c) for c in counters)
        if not math.isnan(value):
            out.append((section, what, value, unit, " + ".join(counters)))
    longest = max(kernels.values(), key=lambda k: k.get("sm__cycles_elapsed.max", 0))
    theoretical = longest.get("sm__maximum_warps_per_active_cycle_pct", math.nan)
    limits = {x: longest.get(f"launch__occupancy_limit_{x}", math.nan) for x in OCCUPANCY_LIMITS}
    limits = {x: v for x, v in limits.items() if not math.isnan(v)}
    if not math.isnan(theoretical):
        fewest = min(limits.values(), default=math.nan)
        limiter = ", ".join(x for x, v in limits.items() if v == fewest)
        out.append(("occupancy", "theoretical occupancy", theoretical, "%",
                    f"limited by {limiter or '?'} ({fewest:g} block(s) per SM)" if limits else ""))
    waves = longest.get("launch__waves_per_multiprocessor", math.nan)
    if not math.isnan(waves):
        out.append(("occupancy", "waves of blocks per SM", waves, "waves",
                    "of the longest kernel" if len(kernels) > 1 else ""))
    return out


def find_ncu() -> Path:
    for candidate in (current().ncu, shutil.which("ncu"), NCU_DEFAULT):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise MissingTool(f"ncu not found (looked at SIMFLOW_NCU, PATH, /usr/local/cuda/bin/ncu); {NCU_HELP}")


_NUMBER = re.compile(r"^-?[\d,]*\.?\d+(?:[eE][-+]?\d+)?$")


def _number(text: str) -> float:
    text = text.strip()
    if _NUMBER.match(text):
        return float(text.replace(",", ""))
    return math.nan


@dataclass
class NcuTable:
    kernels: list[dict[str, str]]  # one row per profiled launch: column -> text
    units: dict[str, str]


def parse_csv(text: str) -> NcuTable:
    """ncu --csv --page raw --print-units base output: program lines before the header, a units row,
    one row per profiled kernel launch, numbers with thousands separators."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID","Process ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with \"ID\",\"Process ID\")")
    rows = list(csv.reader(lines[start:]))
    header = rows[0]
    if "Kernel Name" not in header:
        raise ValueError("the ncu CSV header has no 'Kernel Name' column")
    body = rows[1:]
    units: dict[str, str] = {}
    if body and not body[0][0].strip():  # the units row (--print-units base)
        units = {h: u for h, u in zip(header, body[0], strict=False) if u}
        body = body[1:]
    kernels = [dict(zip(header, row, strict=True)) for row in body if len(row) == len(header)]
    if not kernels:
        raise ValueError("the ncu CSV has a header but no kernel rows")
    return NcuTable(kernels, units)


def aligned_values(row: dict[str, str]) -> dict[str, float]:
    out = {}
    for a in ALIGNED:
        values = [_number(row.get(c, "")) for c in a.counters]
        if a.ratio:
            out[a.name] = values[0] / values[1] if values[1] else math.nan
        else:
            out[a.name] = sum(values)
    return out


@functools.cache
def known_counters(ncu: Path) -> tuple[str, ...]:
    """COUNTERS less those this ncu does not know on this GPU (an older ncu, or a GPU without wgmma or TMA): ncu
    refuses a whole profile for one unknown metric. Its --query-metrics lists base names; launch and device
    attributes and the occupancy section's derived percentage are not listed but always there."""
    try:
        text = subprocess.run([str(ncu), "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return COUNTERS
    names = {m.group(1) for line in text.splitlines() if (m := re.match(r"^([a-z0-9]+__[a-z0-9_]+)\s", line))}
    if not names:  # no list (no GPU visible to the query): ask for everything, as before
        return COUNTERS
    always = ("launch__", "device__", "sm__maximum_warps_per_active_cycle_pct")
    return tuple(c for c in COUNTERS if c.startswith(always) or c.split(".", 1)[0] in names)


def ncu_command(ncu: Path, kernels: list[str], target: list[str], counters: tuple[str, ...] = COUNTERS) -> list[str]:
    names = "|".join(re.escape(k) for k in kernels)
    return [str(ncu), *NCU_OPTIONS, "--metrics", ",".join(counters), "--kernel-name", f"regex:^({names})$",
            "--launch-count", str(len(kernels)), *target]


def read_output(result: RunResult, raw: str, returncode: int, log_path: Path, child: dict | None = None) -> None:
    """Fill a gpu-ncu result from ncu's output: counters, status and reason. `child` is the profiled
    run's own result.json (its status: a run that failed its check makes this one fail too)."""
    if "ERR_NVGPUCTRPERM" in raw:
        raise UserError(f"{COUNTER_HELP}; ncu output kept in {log_path}")
    try:
        table = parse_csv(raw)
    except ValueError as exc:
        said = [line for line in raw.splitlines() if line.startswith(("==ERROR==", "simflow: error"))]
        result.status = "crashed"
        result.reason = (f"ncu (exit {returncode}) gave no usable CSV: {exc}; {' / '.join(said[-2:])}; "
                         f"raw output kept in {log_path}")
        return
    several = len(table.kernels) > 1
    for row in table.kernels:
        name = row.get("Kernel Name", "")
        prefix = RunResult.kernel_prefix(name, several)
        for key, value in aligned_values(row).items():
            result.add(prefix + key, value, ALIGNED_BY_NAME[key].unit)
        for counter in COUNTERS:
            result.add(f"{prefix}ncu:{counter}", _number(row.get(counter, "")), table.units.get(counter, ""))
        result.environment.setdefault("gpu", row.get("device__attribute_display_name") or row.get("Device Name", ""))
    seen = {row.get("Kernel Name") for row in table.kernels}
    missing = [k for k in result.kernels if k not in seen]
    if missing or returncode != 0:
        result.status = "crashed"
        result.reason = (f"ncu exit {returncode}; kernels not profiled: {', '.join(missing) or 'none'}; "
                         f"output kept in {log_path}")
    status = (child or {}).get("status", "passed")
    if status != "passed" and result.status == "passed":
        result.status = status
        result.reason = f"the profiled run did not pass: {(child or {}).get('reason', '')} (see {log_path})"


def profile(job: Job, folder: Path, kernel: Kernel | None = None) -> RunResult:
    """Run the job's GPU path once under ncu; a run of backend gpu-ncu, its files in `folder` (ncu.cmd, ncu.log,
    and the profiled run's own folder under target/)."""
    ncu = find_ncu()
    kernel = kernel or job.kernel()
    problem = job.problem
    target = [sys.executable, "-m", "simflow", "run", job.variant,
              *[f"--param={k}={show_value(v)}" for k, v in job.params.items()],
              "--shape", problem.shape_text,  # the stride too: a strided layer is profiled as it is
              "--warmup", "0", "--repeats", "1", "--seed", str(job.seed), "--no-store",
              "--results", str(folder / "target"), "--json"]
    counters = known_counters(ncu)
    cmd = ncu_command(ncu, kernel.kernel_names, target, counters)
    (folder / "ncu.cmd").write_text(" ".join(cmd) + "\n")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=job.timeout_s)
    raw = proc.stdout + proc.stderr
    (folder / "ncu.log").write_text(raw)
    result = RunResult.of(job, "passed", kernel.fingerprint(), kernels=kernel.kernel_names, run_id=folder.name,
                          environment={"ncu": str(ncu), "ncu_options": " ".join(NCU_OPTIONS)})
    if unknown := [c for c in COUNTERS if c not in counters]:
        result.environment["ncu_unknown_counters"] = ", ".join(unknown)
    result.artifacts = {"run_dir": str(folder), "kernel_source": str(folder / "kernel.cu"),
                        "log": str(folder / "ncu.log")}
    kept = sorted((folder / "target" / "runs").glob("*/result.json"))  # the profiled run's own record
    child = None
    if kept:
        try:
            child = json.loads(kept[-1].read_text())
        except (OSError, ValueError):
            child = {"status": "crashed", "reason": f"its result.json ({kept[-1]}) is unreadable"}
    read_output(result, raw, proc.returncode, folder / "ncu.log", child)
    return result


class NcuBackend(Backend):
    name = "gpu-ncu"
    serial = True  # profiling replays kernels: one at a time on the GPU
    default_metrics = ("gpu_sim_insn", "gpgpu_n_tot_w_icount", "gpu_occupancy",
                       "Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", "gpgpu_n_shmem_insn")
    in_check = False  # `simflow profile` is the way in; check runs and times, it does not profile
    title, short = "Nsight Compute", "ncu"
    simulator_stats = True
    measures = "gpgpusim"  # hardware counters under the simulator's names
    aligned = ALIGNED_BY_NAME
    shown = tuple(ALIGNED_BY_NAME)  # the raw ncu:<counter>s are stored, not shown

    @classmethod
    def direction(cls, metric: str) -> str | None:
        stat = stat_of(metric) if metric in ALIGNED_BY_NAME else None  # raw ncu:<counter>s have none
        return stat.better if stat is not None else None

    # explain's hardware account (simflow.analysis.explain): its slots, their causes and the evidence
    issue_slots = staticmethod(issue_slots)
    evidence = staticmethod(evidence)
    slot_causes = WARP_STATES

    @classmethod
    def doctor(cls, probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
        avail = cls.probe()
        return [Finding("Nsight Compute (backend gpu-ncu)", avail.available, avail.detail, avail.how_to_get)]

    @classmethod
    def probe(cls) -> Availability:
        gpu = backend_class("gpu").probe()
        if not gpu.available:
            return Availability(False, gpu.detail, gpu.how_to_get)
        try:
            return Availability(True, f"{find_ncu()} on {gpu.detail}")
        except UserError as exc:
            return Availability(False, str(exc), "install Nsight Compute (ncu), part of the CUDA toolkit")

    @classmethod
    def check(cls, job: Job) -> None:
        backend_class("gpu").check(job)
        find_ncu()

    def run(self, job: Job, folder: Path, kernel: Kernel | None = None) -> RunResult:
        return profile(job, folder, kernel)
