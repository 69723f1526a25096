"""Hardware limits of a CUDA device, launch checks against them, and theoretical occupancy.

The limits come from the real device when a GPU is present (see backends.gpu) and
from the tables below otherwise: `sm_70` is the V100 that GPGPU-Sim's SM7_QV100
models, `sm_90` the H100/H200.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import LimitError

KB = 1024


@dataclass(frozen=True)
class DeviceLimits:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    smem_per_block: int = 48 * KB  # without opting in
    smem_per_block_optin: int = 48 * KB  # with cudaFuncAttributeMaxDynamicSharedMemorySize
    smem_per_sm: int = 64 * KB
    regs_per_sm: int = 65536
    max_regs_per_thread: int = 255
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    const_bytes: int = 64 * KB
    warp_size: int = 32

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def with_name(self, name: str) -> DeviceLimits:
        return replace(self, name=name)


KNOWN_DEVICES: dict[str, DeviceLimits] = {
    "sm_70": DeviceLimits(
        name="Tesla V100 (sm_70)",
        compute_capability=(7, 0),
        sm_count=80,
        smem_per_block_optin=96 * KB,
        smem_per_sm=96 * KB,
    ),
    "sm_90": DeviceLimits(
        name="H100/H200 (sm_90)",
        compute_capability=(9, 0),
        sm_count=132,
        smem_per_block_optin=227 * KB,
        smem_per_sm=228 * KB,
    ),
}


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float  # active warps over the SM's maximum, 0..1
    limited_by: str


def _smem_granularity(cc: tuple[int, int]) -> int:
    return 128 if cc >= (8, 0) else 256


def theoretical_occupancy(
    limits: DeviceLimits, threads_per_block: int, regs_per_thread: int, smem_per_block: int
) -> Occupancy:
    """The CUDA occupancy calculator's arithmetic: blocks per SM from warps, registers, shared memory."""
    warps_per_block = math.ceil(threads_per_block / limits.warp_size)
    max_warps = limits.max_threads_per_sm // limits.warp_size
    candidates = {
        "blocks": limits.max_blocks_per_sm,
        "warps": max_warps // warps_per_block,
    }
    if regs_per_thread > 0:
        regs_per_warp = math.ceil(regs_per_thread * limits.warp_size / 256) * 256
        candidates["registers"] = (limits.regs_per_sm // regs_per_warp) // warps_per_block
    reserved = 1 * KB if limits.compute_capability >= (8, 0) else 0
    if smem_per_block > 0:
        gran = _smem_granularity(limits.compute_capability)
        per_block = math.ceil((smem_per_block + reserved) / gran) * gran
        candidates["shared memory"] = limits.smem_per_sm // per_block
    limited_by = min(candidates, key=lambda k: candidates[k])
    blocks = max(0, candidates[limited_by])
    warps = blocks * warps_per_block
    return Occupancy(blocks, warps, warps / max_warps, limited_by)


def check_threads(block: tuple[int, int, int], limits: DeviceLimits, fix: str) -> None:
    threads = block[0] * block[1] * block[2]
    if threads > limits.max_threads_per_block:
        raise LimitError(
            "threads per block", f"{threads} ({block[0]} x {block[1]} x {block[2]})",
            str(limits.max_threads_per_block), fix,
        )
    for axis, (size, most) in enumerate(zip(block, limits.max_block_dims, strict=True)):
        if size > most:
            raise LimitError(f"block dimension {'xyz'[axis]}", str(size), str(most), fix)


def check_grid(grid: tuple[int, int, int], limits: DeviceLimits, fix: str) -> None:
    for axis, (size, most) in enumerate(zip(grid, limits.max_grid_dims, strict=True)):
        if size > most:
            raise LimitError(f"grid dimension {'xyz'[axis]}", f"{size:,} blocks", f"{most:,}", fix)


def check_shared_memory(total: int, dynamic: int, limits: DeviceLimits, fix: str) -> None:
    """Static + dynamic shared memory per block; beyond the default 48 KB only dynamic can opt in."""
    if total <= limits.smem_per_block:
        return
    static = total - dynamic
    if static > limits.smem_per_block:
        raise LimitError(
            "static shared memory per block", f"{static:,} bytes", f"{limits.smem_per_block:,} bytes",
            fix,
        )
    if total > limits.smem_per_block_optin:
        raise LimitError(
            f"shared memory per block on {limits.name} (opt-in maximum)", f"{total:,} bytes",
            f"{limits.smem_per_block_optin:,} bytes", fix,
        )


def check_constant_memory(nbytes: int, fix: str, limit: int = 64 * KB) -> None:
    if nbytes > limit:
        raise LimitError("constant memory", f"{nbytes:,} bytes", f"{limit:,} bytes", fix)


def check_launches(launches, limits: DeviceLimits) -> None:
    """Every launch's block, grid and dynamic shared memory against one device's limits."""
    fix = "use a smaller tile or another variant (simflow variants lists them)"
    for launch in launches:
        check_threads(launch.block, limits, "use a smaller tile")
        check_grid(launch.grid, limits, "run a smaller batch (--batch) or split it")
        check_shared_memory(launch.dynamic_smem, launch.dynamic_smem, limits, fix)
