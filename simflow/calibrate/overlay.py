"""A GPGPU-Sim config overlay for the GPU in hand, from its measurements (simflow.calibrate.measure).

The overlay sits on SM7_QV100 (the tested config simflow's runs use, a GPU with HBM and unified L1/shared
memory like the H100/H200) and changes what the measurements say: SM count, clocks, L1/shared memory, L2
size, latencies, L2 and DRAM bandwidth, the FP32 and PTX integer rates, warp and block limits, the operand
collector units. Each option says where its value comes from:

- measured: a figure the GPU gave (a device attribute, or a microbenchmark);
- derived: computed from measured figures, the formula in words;
- set: a structural choice the simulator needs (its address hash takes 16, 32 or 64 L2 slices; its operand
  collector units, which calibrate's mixed stream tests: _collector_units());

and every other option is kept from the base, the most important of them listed in the file's header.

An option sets one part of a path; what a chase measures end to end also holds the PTX around each load, the
interconnect and the queues. `simflow calibrate --check --fold` runs the same microbenchmarks in the simulator and
keeps what it saw (NAME.check.json): the overlay then takes each latency less what the simulated machine adds
around it, and the L2 clock over the share of its bandwidth the simulated interconnect delivers (fold()). This
module is pure: the same measurements and check give the same file.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

BASE = "SM7_QV100"
N_MEM, SUB_PARTITIONS = 32, 2  # 64 L2 slices: the most IPOLY hashing (memory_partition_indexing 2) takes
SLICES = N_MEM * SUB_PARTITIONS  # L2 slices (memory sub-partitions)
L2_SETS, L2_LINE = 64, 128  # sets a slice: the L2's IPOLY set index takes 16, 32 or 64
DRAM_BUS_BYTES, DRAM_DATA_RATE = 16, 2  # a channel's bus and the data-command ratio (HBM: double data rate)
L2_PORT_BYTES = 32  # a slice's data port a cycle (the base's dl2 port width): one sector
SCHEDULERS = 4  # warp schedulers an SM: its sub-partitions
# generic operand collector units a scheduler (SM7_QV100: 8 an SM, 2 a scheduler under gpgpu_sub_core_model)
COLLECTOR_UNITS = 16
# SM7_QV100's FP32 initiation intervals (add, max, mul, mad, div): 2 cycles a warp on Volta's 16 lanes a scheduler
BASE_INITIATION_FP = (2, 2, 2, 2, 4)
# its integer ones (add, max, mul, mad, div, shfl): PTX add and mad hold a scheduler's one integer unit 2 cycles
BASE_INITIATION_INT = (2, 2, 2, 2, 8, 4)
KEPT = ("the CTA launch latency, and the kernel launch latency where the measurements have no launch_us",
        "the pipelines and functional units (but the generic operand collector units), the PTX opcode latencies "
        "and every initiation interval but FP32 add, mul and mad and integer add, mul and mad where measured (the "
        "simulator runs compute_70 PTX, not SASS)",
        "the interconnect's topology, buffers and flit size (its clock is the L2's), and the DRAM timing in DRAM "
        "cycles (so shorter in time at the derived DRAM clock)",
        "the L1 and L2 replacement and write policies, MSHRs and banks; the instruction and constant caches")


@dataclass(frozen=True)
class Fold:
    """What a simulated machine adds to calibrate's chases beyond the options that set them, and the share of the
    L2 bandwidth its clock gives that it delivers: read off one `calibrate --check` (check_record's dict). The L2
    and DRAM chases load past L1 (.cg, as on the GPU), and such loads skip the simulated L1's latency queue: the
    L1's latency is not on their path."""

    l1: float  # cycles a simulated L1 chase step takes past gpgpu_l1_latency
    shared: float  # past gpgpu_smem_latency
    l2: float  # an L2 step past gpgpu_l2_rop_latency
    dram: float  # a DRAM step past gpgpu_l2_rop_latency + dram_latency
    l2_share: float  # the simulated L2 read bandwidth over slices x port x the L2 clock
    source: str  # which check, in words


def fold(check: dict) -> Fold:
    """The simulated machine's own share of each figure, from a check of an overlay this module wrote."""
    o, s = check["options"], check["simulated"]
    l1, rop, dram = o["gpgpu_l1_latency"], o["gpgpu_l2_rop_latency"], o["dram_latency"]
    l2_mhz = float(o["gpgpu_clock_domains"].split(":")[2])
    return Fold(l1=s["l1_latency_cycles"] - l1, shared=s["shared_latency_cycles"] - o["gpgpu_smem_latency"],
                l2=s["l2_latency_cycles"] - rop, dram=s["dram_latency_cycles"] - rop - dram,
                l2_share=s["l2_bandwidth_gbs"] * 1e3 / (SLICES * L2_PORT_BYTES * l2_mhz),
                source=f"`calibrate --check` of options {check['options_key'][:8]}, {check['date']}")


def check_record(config_key: str, options: dict[str, str], simulated: dict[str, float], date: str,
                 simulator: str) -> dict:
    """What NAME.check.json keeps of a check: the options that set the figures, the figures simulated."""
    keep = ("gpgpu_l1_latency", "gpgpu_smem_latency", "gpgpu_l2_rop_latency", "dram_latency", "gpgpu_clock_domains")
    missing = [k for k in keep if k not in options]
    if missing:
        raise ValueError(f"the config sets no {', '.join(missing)}: only an overlay `simflow calibrate` wrote folds")
    return {"options_key": config_key, "date": date, "simulator": simulator,
            "options": {k: options[k] if k == "gpgpu_clock_domains" else int(options[k]) for k in keep},
            "simulated": {k: round(v, 2) for k, v in simulated.items()}}


@dataclass(frozen=True)
class Setting:
    option: str
    value: int | float | str
    source: str  # measured | derived | set
    how: str


def _mhz(value: float) -> str:
    return f"{value:.1f}"


def settings(m: dict, check: dict | None = None) -> list[Setting]:
    """The options to change, each with its source and how; `check` (a NAME.check.json) folds in what the
    simulated machine adds (fold())."""
    sms, clock = int(m["sms"]), float(m["clock_mhz"])
    dram_mhz = m["dram_bandwidth_gbs"] * 1e3 / (N_MEM * DRAM_BUS_BYTES * DRAM_DATA_RATE)
    f = fold(check) if check else None
    l2_mhz = m["l2_bandwidth_gbs"] * 1e3 / (SLICES * L2_PORT_BYTES * (f.l2_share if f else 1.0))
    l2_ways = max(1, round(m["l2_bytes"] / (SLICES * L2_SETS * L2_LINE)))
    shared_kb = m["shared_per_sm_bytes"] // 1024
    unified_kb = max(math.ceil(shared_kb / 32) * 32, m["l1_bytes"] // 1024)
    carveouts = sorted({0, 8, 16, 32, 64, *range(96, shared_kb, 32), shared_kb})
    issue = m["warp_fma_issue_per_sm_per_cycle"]
    lanes = m["fma_per_sm_per_cycle"] / SCHEDULERS  # FP32 lanes a scheduler's unit
    fp = max(1, round(32 / lanes))  # cycles a warp's FP32 add, mul or fma holds its unit
    initiation_fp = ",".join(map(str, (fp, BASE_INITIATION_FP[1], fp, fp, BASE_INITIATION_FP[4])))
    launch = [Setting("gpgpu_kernel_launch_latency", round(m["launch_us"] * clock), "derived",
                      f"an empty one-block kernel's {m['launch_us']:.2f} us (CUDA events, queued behind a spin, "
                      "as a run is timed) in SM cycles")] if "launch_us" in m else []
    return [
        *launch,
        Setting("gpgpu_n_clusters", sms, "measured", "SMs (device attribute)"),
        Setting("gpgpu_n_cores_per_cluster", 1, "set", "one SM a cluster, as the base"),
        Setting("gpgpu_clock_domains", f"{_mhz(clock)}:{_mhz(l2_mhz)}:{_mhz(l2_mhz)}:{_mhz(dram_mhz)}", "derived",
                f"core at the SM clock measured ({clock:.0f} MHz: clock64 against events); interconnect and L2 "
                f"so that {SLICES} slices x {L2_PORT_BYTES} B give the measured L2 read bandwidth "
                f"({m['l2_bandwidth_gbs']:.0f} GB/s; at the SM clock they would give "
                f"{SLICES * L2_PORT_BYTES * clock / 1e3:.0f})"
                + (f" over the {f.l2_share:.3f} of it the simulated interconnect delivered ({f.source})" if f
                   else "") + f"; DRAM so that {N_MEM} channels x "
                f"{DRAM_BUS_BYTES} B x {DRAM_DATA_RATE} give the measured copy bandwidth "
                f"({m['dram_bandwidth_gbs']:.0f} GB/s read + written)"),
        Setting("gpgpu_n_mem", N_MEM, "set", "memory channels (64 L2 slices with 2 each: IPOLY's largest)"),
        Setting("gpgpu_n_sub_partition_per_mchannel", SUB_PARTITIONS, "set", "L2 slices a channel"),
        Setting("gpgpu_dram_buswidth", DRAM_BUS_BYTES, "set", "bytes a channel a DRAM cycle (as the base)"),
        Setting("dram_data_command_freq_ratio", DRAM_DATA_RATE, "set", "HBM is double data rate (as the base)"),
        Setting("gpgpu_cache:dl2", f"S:{L2_SETS}:{L2_LINE}:{l2_ways},L:B:m:L:P,A:192:4,32:0,32", "derived",
                f"L2 of {m['l2_bytes'] / 2**20:.0f} MiB (device attribute) over {SLICES} slices of "
                f"{L2_SETS} sets x {L2_LINE} B lines: {l2_ways} ways; policies as the base"),
        Setting("gpgpu_unified_l1d_size", unified_kb, "derived",
                f"KB of L1 + shared memory: the shared memory per SM ({shared_kb} KB) rounded up to 32 KB, at least "
                f"the L1 the chase measured ({m['l1_bytes'] // 1024} KB held at L1 latency)"),
        Setting("gpgpu_shmem_size", m["shared_per_sm_bytes"], "measured", "shared memory per SM (device attribute)"),
        Setting("gpgpu_shmem_sizeDefault", m["shared_per_sm_bytes"], "measured", "as gpgpu_shmem_size"),
        Setting("gpgpu_shmem_per_block", m["shared_per_block_optin_bytes"], "measured",
                "shared memory a block can opt in to (device attribute)"),
        Setting("gpgpu_shmem_option", ",".join(map(str, carveouts)), "derived",
                "shared-memory carveouts in KB, up to the shared memory per SM"),
        Setting("gpgpu_shader_core_pipeline", f"{m['threads_per_sm']}:32", "measured",
                "threads per SM (device attribute) : warp size"),
        Setting("gpgpu_shader_cta", m["blocks_per_sm"], "measured", "blocks per SM (device attribute)"),
        Setting("gpgpu_shader_registers", m["registers_per_sm"], "measured", "registers per SM (device attribute)"),
        Setting("gpgpu_registers_per_block", m["registers_per_block"], "measured", "registers a block (attribute)"),
        Setting("gpgpu_num_sched_per_core", SCHEDULERS, "set",
                "warp schedulers: an SM's four sub-partitions (every NVIDIA SM since Maxwell), as the base"),
        Setting("ptx_opcode_initiation_fp", initiation_fp, "derived",
                f"FP32 add, mul and mad take a warp every {fp} cycle(s) on each scheduler's unit: "
                f"{m['fma_per_sm_per_cycle']:.0f} FMA per SM a cycle measured ({issue:.2f} warp instructions), "
                f"{lanes:.0f} lanes a unit (the base's {BASE_INITIATION_FP[0]}: Volta's 16); max and div as the base"),
        *_integer(m),
        *_collector_units(),
        *_latencies(m, f),
    ]


def _collector_units() -> list[Setting]:
    """More generic operand collector units than the base's. On the GPU a shared-memory load that waits on a bank
    conflict waits in the memory pipe's queue while the FMAs behind it issue; the simulator has no such queue, its
    waiting loads hold their scheduler's collector units, and with the base's two a scheduler the FMAs find none
    free. calibrate's mixed stream (`cal_shared_fma`) shows it: with 2-way conflicts the simulated SM gave 0.82 of
    the H200's loads with 8 units, 0.91 with 32 and 1.00-1.04 with 64 at 6 to 16 FMAs a load (docs/calibrate.md,
    "The shared-memory pipe"; `calibrate --check` says it again for each overlay)."""
    units = COLLECTOR_UNITS * SCHEDULERS
    how = (f"{COLLECTOR_UNITS} a scheduler (the base's 2), so that shared-memory loads waiting on bank conflicts "
           "leave units to the FMAs behind them, as the GPU's memory queue does (calibrate's mixed stream with 2-way "
           "conflicts: 0.82 of the GPU's loads with the base's units, 1.00-1.04 with these)")
    return [Setting("gpgpu_operand_collector_num_units_gen", units, "set", f"generic operand collector units: {how}"),
            Setting("gpgpu_operand_collector_num_in_ports_gen", units, "set", "as many ports in: one a unit"),
            Setting("gpgpu_operand_collector_num_out_ports_gen", units, "set", "as many ports out: one a unit")]


def _integer(m: dict) -> list[Setting]:
    """ptx_opcode_initiation_int from the PTX integer streams timed (none where the measurements have none).
    Every integer PTX instruction but these takes a scheduler's integer unit one cycle in the simulator; on the GPU
    ptxas spreads PTX adds over two pipes (IADD3 on the ALU, IMAD.IADD on the FMA pipe), while a mul.lo or mad.lo
    is an IMAD, on the FMA pipe alone: the rates measured say how many cycles each holds a unit."""
    if "int_add_per_sm_per_cycle" not in m:
        return []
    add, mad = (max(1, round(32 * SCHEDULERS / m[f"int_{x}_per_sm_per_cycle"])) for x in ("add", "mad"))
    base = BASE_INITIATION_INT
    value = ",".join(map(str, (add, base[1], mad, mad, *base[4:])))
    return [Setting("ptx_opcode_initiation_int", value, "derived",
                    f"PTX integer add takes a warp every {add} cycle(s) on each scheduler's unit, mul and mad every "
                    f"{mad}: {m['int_add_per_sm_per_cycle']:.0f} add.s32 and {m['int_mad_per_sm_per_cycle']:.0f} "
                    f"mad.lo.s32 per SM a cycle measured (the base's {base[0]} and {base[3]}); max, div and shfl as "
                    "the base")]


def _latencies(m: dict, f: Fold | None) -> list[Setting]:
    """The four latency options from the chases: without a check an L2 hit is an L1 lookup and the rest, a DRAM
    access an L2 miss and the rest; with one (f), each is the figure measured less what the simulated chase adds."""
    if f is None:
        l1, l2, dram = (round(m[f"{x}_latency_cycles"]) for x in ("l1", "l2", "dram"))
        return [
            Setting("gpgpu_l1_latency", l1, "measured", "L1 hit load-to-use, cycles (pointer chase)"),
            Setting("gpgpu_smem_latency", round(m["shared_latency_cycles"]), "measured",
                    "shared-memory load-to-use, cycles (pointer chase)"),
            Setting("gpgpu_l2_rop_latency", max(1, l2 - l1), "derived",
                    f"L2 hit latency measured ({l2} cycles, loads past L1) less the L1's ({l1})"),
            Setting("dram_latency", max(1, dram - l2), "derived",
                    f"DRAM latency measured ({dram} cycles, a 1 GiB chase a page apart) less the L2's ({l2})")]
    set_l1 = max(1, round(m["l1_latency_cycles"] - f.l1))
    set_smem = max(2, round(m["shared_latency_cycles"] - f.shared))  # the simulator asserts more than 1
    set_rop = max(1, round(m["l2_latency_cycles"] - f.l2))
    set_dram = max(1, round(m["dram_latency_cycles"] - f.dram) - set_rop)
    return [
        Setting("gpgpu_l1_latency", set_l1, "derived",
                f"L1 hit measured ({m['l1_latency_cycles']:.1f} cycles, pointer chase) less the simulated chase's "
                f"own {f.l1:+.1f} past this option (the PTX around its load)"),
        Setting("gpgpu_smem_latency", set_smem, "derived",
                f"shared-memory load measured ({m['shared_latency_cycles']:.1f} cycles) less the simulated chase's "
                f"own {f.shared:+.1f} past this option"),
        Setting("gpgpu_l2_rop_latency", set_rop, "derived",
                f"L2 hit measured ({m['l2_latency_cycles']:.1f} cycles, loads past L1) less the simulated chase's "
                f"own {f.l2:+.1f} past this option"),
        Setting("dram_latency", set_dram, "derived",
                f"DRAM measured ({m['dram_latency_cycles']:.1f} cycles, loads past L1) less the simulated chase's "
                f"own {f.dram:+.1f} past this option and the L2's, less the L2's ({set_rop})")]


def overlay_text(name: str, m: dict, check: dict | None = None) -> str:
    """The overlay's TOML: what was measured in the header, then each option with its source."""
    head = [f"# {name}: {m['gpu']} (compute {m['compute_capability']}), calibrated by `simflow calibrate`.",
            f"# Measured: {m['sms']} SMs at {m['clock_mhz']:.0f} MHz; L1 hit {m['l1_latency_cycles']:.0f}, shared "
            f"{m['shared_latency_cycles']:.0f}, L2 hit {m['l2_latency_cycles']:.0f}, DRAM "
            f"{m['dram_latency_cycles']:.0f} cycles;",
            f"# L2 {m['l2_bytes'] / 2**20:.0f} MiB at {m['l2_bandwidth_gbs']:.0f} GB/s; DRAM "
            f"{m['dram_bandwidth_gbs']:.0f} GB/s (copy, read + written); {m['fma_per_sm_per_cycle']:.0f} FMA "
            "per SM a cycle" + (f", {m['int_add_per_sm_per_cycle']:.0f} PTX integer adds, "
                                f"{m['int_mad_per_sm_per_cycle']:.0f} mads." if "int_add_per_sm_per_cycle" in m
                                else "."),
            f"# Every figure: {name}.measured.json beside this file. Kept from {BASE}, not measured:"]
    head += [f"#   - {line}" for line in KEPT]
    if check:
        f = fold(check)
        head.append(f"# Folded in: {f.source} ({name}.check.json): past its options the simulated machine added "
                    f"{f.l1:.1f} cycles to an L1 step, {f.shared:.1f} to a shared one, {f.l2:.1f} to an L2 one, "
                    f"{f.dram:.1f} to a DRAM one, and gave {f.l2_share:.3f} of the L2 bandwidth its clock allows.")
    body = [f'base = "{BASE}"', f'description = "{m["gpu"]}: {m["sms"]} SMs, {m["clock_mhz"]:.0f} MHz, '
            f'{m["l2_bytes"] / 2**20:.0f} MiB L2, calibrated"', "", "[options]"]
    for s in settings(m, check):
        value = f'"{s.value}"' if isinstance(s.value, str) else str(s.value)
        key = f'"{s.option}"' if not re.fullmatch(r"[A-Za-z0-9_-]+", s.option) else s.option
        body.append(f"# {s.source}: {s.how}")
        body.append(f"{key} = {value}")
    return "\n".join(head + body) + "\n"


def config_name(gpu: str) -> str:
    """A file name from the GPU's name: 'NVIDIA H200' -> 'H200'."""
    name = re.sub(r"^NVIDIA\s+", "", gpu).strip()
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "GPU"


def write(folder: Path, name: str, m: dict, check: dict | None = None) -> tuple[Path, Path]:
    """NAME.toml and NAME.measured.json in `folder`, each written whole or not at all (NAME.check.json, the check
    folded in, is the caller's)."""
    from ..results.folders import write_text

    folder.mkdir(parents=True, exist_ok=True)
    toml, measured = folder / f"{name}.toml", folder / f"{name}.measured.json"
    write_text(measured, json.dumps(m, indent=2, sort_keys=True) + "\n")
    write_text(toml, overlay_text(name, m, check))
    return toml, measured
