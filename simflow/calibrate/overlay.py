"""A GPGPU-Sim config overlay for the GPU in hand, from its measurements (simflow.calibrate.measure).

The overlay sits on SM7_QV100 (the tested config simflow's runs use, a GPU with HBM and unified L1/shared
memory like the H100/H200) and changes what the measurements say: SM count, clocks, L1/shared memory, L2
size, latencies, L2 and DRAM bandwidth, the FP32 rate, warp and block limits. Each option says where its value
comes from:

- measured: a figure the GPU gave (a device attribute, or a microbenchmark);
- derived: computed from measured figures, the formula in words;
- set: a structural choice the simulator needs (its address hash takes 16, 32 or 64 L2 slices);

and every other option is kept from the base, the most important of them listed in the file's header. This
module is pure: the same measurements give the same file.
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
# SM7_QV100's FP32 initiation intervals (add, max, mul, mad, div): 2 cycles a warp on Volta's 16 lanes a scheduler
BASE_INITIATION_FP = (2, 2, 2, 2, 4)
KEPT = ("the CTA launch latency, and the kernel launch latency where the measurements have no launch_us",
        "the pipelines and functional units, the PTX opcode latencies and every initiation interval but FP32 add, "
        "mul and mad (the simulator runs compute_70 PTX, not SASS)",
        "the interconnect's topology, buffers and flit size (its clock is the L2's), and the DRAM timing in DRAM "
        "cycles (so shorter in time at the derived DRAM clock)",
        "the L1 and L2 replacement and write policies, MSHRs and banks; the instruction and constant caches")


@dataclass(frozen=True)
class Setting:
    option: str
    value: int | float | str
    source: str  # measured | derived | set
    how: str


def _mhz(value: float) -> str:
    return f"{value:.1f}"


def settings(m: dict) -> list[Setting]:
    """The options to change, each with its source and how."""
    sms, clock = int(m["sms"]), float(m["clock_mhz"])
    dram_mhz = m["dram_bandwidth_gbs"] * 1e3 / (N_MEM * DRAM_BUS_BYTES * DRAM_DATA_RATE)
    l2_mhz = m["l2_bandwidth_gbs"] * 1e3 / (SLICES * L2_PORT_BYTES)
    l2_ways = max(1, round(m["l2_bytes"] / (SLICES * L2_SETS * L2_LINE)))
    shared_kb = m["shared_per_sm_bytes"] // 1024
    unified_kb = max(math.ceil(shared_kb / 32) * 32, m["l1_bytes"] // 1024)
    carveouts = sorted({0, 8, 16, 32, 64, *range(96, shared_kb, 32), shared_kb})
    l1, l2, dram = (round(m[f"{x}_latency_cycles"]) for x in ("l1", "l2", "dram"))
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
                f"{SLICES * L2_PORT_BYTES * clock / 1e3:.0f}); DRAM so that {N_MEM} channels x "
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
        Setting("gpgpu_l1_latency", l1, "measured", "L1 hit load-to-use, cycles (pointer chase)"),
        Setting("gpgpu_smem_latency", round(m["shared_latency_cycles"]), "measured",
                "shared-memory load-to-use, cycles (pointer chase)"),
        Setting("gpgpu_l2_rop_latency", max(1, l2 - l1), "derived",
                f"L2 hit latency measured ({l2} cycles, loads past L1) less the L1's ({l1})"),
        Setting("dram_latency", max(1, dram - l2), "derived",
                f"DRAM latency measured ({dram} cycles, a 1 GiB chase a page apart) less the L2's ({l2})"),
    ]


def overlay_text(name: str, m: dict) -> str:
    """The overlay's TOML: what was measured in the header, then each option with its source."""
    head = [f"# {name}: {m['gpu']} (compute {m['compute_capability']}), calibrated by `simflow calibrate`.",
            f"# Measured: {m['sms']} SMs at {m['clock_mhz']:.0f} MHz; L1 hit {m['l1_latency_cycles']:.0f}, shared "
            f"{m['shared_latency_cycles']:.0f}, L2 hit {m['l2_latency_cycles']:.0f}, DRAM "
            f"{m['dram_latency_cycles']:.0f} cycles;",
            f"# L2 {m['l2_bytes'] / 2**20:.0f} MiB at {m['l2_bandwidth_gbs']:.0f} GB/s; DRAM "
            f"{m['dram_bandwidth_gbs']:.0f} GB/s (copy, read + written); {m['fma_per_sm_per_cycle']:.0f} FMA "
            "per SM a cycle.",
            f"# Every figure: {name}.measured.json beside this file. Kept from {BASE}, not measured:"]
    head += [f"#   - {line}" for line in KEPT]
    body = [f'base = "{BASE}"', f'description = "{m["gpu"]}: {m["sms"]} SMs, {m["clock_mhz"]:.0f} MHz, '
            f'{m["l2_bytes"] / 2**20:.0f} MiB L2, calibrated"', "", "[options]"]
    for s in settings(m):
        value = f'"{s.value}"' if isinstance(s.value, str) else str(s.value)
        key = f'"{s.option}"' if not re.fullmatch(r"[A-Za-z0-9_-]+", s.option) else s.option
        body.append(f"# {s.source}: {s.how}")
        body.append(f"{key} = {value}")
    return "\n".join(head + body) + "\n"


def config_name(gpu: str) -> str:
    """A file name from the GPU's name: 'NVIDIA H200' -> 'H200'."""
    name = re.sub(r"^NVIDIA\s+", "", gpu).strip()
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "GPU"


def write(folder: Path, name: str, m: dict) -> tuple[Path, Path]:
    """NAME.toml and NAME.measured.json in `folder`, each written whole or not at all."""
    from ..results.folders import write_text

    folder.mkdir(parents=True, exist_ok=True)
    toml, measured = folder / f"{name}.toml", folder / f"{name}.measured.json"
    write_text(measured, json.dumps(m, indent=2, sort_keys=True) + "\n")
    write_text(toml, overlay_text(name, m))
    return toml, measured
