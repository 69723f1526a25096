"""Whole-layer estimates from simulations of a few small batches.

Every kernel of a convolution launches a number of thread blocks that grows linearly with the batch
(plus, for some, a part that does not: the weight transforms), and the blocks of one kernel do the same
work on different data. So a count that adds up over blocks (instructions, cache accesses and misses,
DRAM traffic) is an exact linear function of the batch, and once the SMs are full the cycles grow by
the same amount per wave of blocks. Simulating batches b1 < b2 < b3 of whole waves and fitting
v(b) = v(b3) + s (b - b3), with the slope s of the last two points, estimates v at the real batch B; the
slope of the first two points, against the last two, says how far from linear the layer still is,
and that difference carried to B, plus half a wave of cycles (the last wave of B may be part full),
is the error bound. Rates (IPC, miss rates) are recomputed from the estimated counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Counts that add up over thread blocks, so grow linearly with the batch.
LINEAR = ("gpu_sim_cycle", "gpu_sim_insn", "gpgpu_n_tot_w_icount", "L1D_total_cache_accesses",
          "L1D_total_cache_misses", "L2_total_cache_accesses", "L2_total_cache_misses", "total dram reads",
          "total dram writes", "gpgpu_n_shmem_insn", "gpgpu_n_shmem_bkconflict", "gpgpu_n_load_insn",
          "gpgpu_n_store_insn", "gpu_tot_issued_cta")


@dataclass(frozen=True)
class Estimate:
    value: float
    bound: float  # absolute: |true - value| is expected under this

    @property
    def relative_bound(self) -> float:
        return self.bound / abs(self.value) if self.value else math.inf


def extrapolate(points: list[tuple[int, dict[str, float]]], batch: int, wave_images: float) -> dict[str, Estimate]:
    """Estimates at `batch` from (batch, metrics) of three sampled batches, smallest first, each a whole
    number of waves (`wave_images` images fill the SMs once)."""
    if len(points) != 3 or not points[0][0] < points[1][0] < points[2][0] <= batch:
        raise ValueError("three sampled batches, increasing, none above the real batch")
    (b1, m1), (b2, m2), (b3, m3) = points
    out = {}
    for name in LINEAR:
        if not all(name in m for m in (m1, m2, m3)):
            continue
        s12 = (m2[name] - m1[name]) / (b2 - b1)
        s23 = (m3[name] - m2[name]) / (b3 - b2)
        value = m3[name] + s23 * (batch - b3)
        bound = abs(s23 - s12) * (batch - b3)
        if name == "gpu_sim_cycle":
            bound += 0.5 * abs(s23) * wave_images  # the real batch's last wave may be part full
        out[name] = Estimate(value, bound)
    cycles, insn = out.get("gpu_sim_cycle"), out.get("gpu_sim_insn")
    if cycles and insn and cycles.value > 0:
        ipc = insn.value / cycles.value
        out["gpu_ipc"] = Estimate(ipc, ipc * (insn.relative_bound + cycles.relative_bound))
    return out
