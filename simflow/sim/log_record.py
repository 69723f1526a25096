"""A parsed simulator log into a run record: the build, the simulated GPU, each kernel's resources, theoretical
occupancy and stats, and its progress intervals (the report's timeline). The simulator backend and `simflow
import-log` both file logs this way."""

from __future__ import annotations

import math
from pathlib import Path

from ..kernels.limits import KNOWN_DEVICES
from ..results.folders import write_csv
from ..results.record import RunResult
from .catalogue import aggregate, stat_of
from .log import SimLog

SIMULATED_DEVICE = KNOWN_DEVICES["sm_70"]  # what SM7_QV100 models
INTERVALS = "intervals.csv"  # per-interval IPC, occupancy and L1D hit rate (simflow.sim.log.SimLog.intervals)


def add_log(result: RunResult, log: SimLog) -> None:
    """A parsed log into a run: the build, the simulated GPU, each kernel's resources, theoretical
    occupancy and stats (prefixed `<kernel>.` when there are several)."""
    result.environment["simulator_version"] = log.simulator_version
    result.environment["simulator_build"] = log.build
    if log.flavour:
        result.environment["simulator_flavour"] = log.flavour
    for name, (value, unit) in log.modelled().items():
        result.add(name, value, unit)
    for key, unit in (("gpgpu_simulation_time", "s"), ("gpgpu_simulation_rate_insn", "thread insn/s")):
        value = log.run_facts().get(key)
        if value is not None:
            result.add(key, value, unit)
    threads_per_sm, warp_size = SIMULATED_DEVICE.max_threads_per_sm, SIMULATED_DEVICE.warp_size
    pipeline = log.options.get("gpgpu_shader_core_pipeline", "").split(":")  # the config's threads:warp size
    if len(pipeline) == 2 and all(part.isdigit() and int(part) > 0 for part in pipeline):
        threads_per_sm, warp_size = int(pipeline[0]), int(pipeline[1])
    several = len(log.kernels) > 1
    repeated = {k.kernel for k in log.kernels if sum(r.kernel == k.kernel for r in log.kernels) > 1}
    launches = []
    for record in log.kernels:
        launches.append(dict(record.metrics))
        prefix = RunResult.kernel_prefix(record.kernel, several,
                                         record.launch_uid if record.kernel in repeated else None)
        # smem is the static size the simulator prints; dynamic_smem is what the program passed to the launch
        for key in ("regs", "lmem", "smem", "dynamic_smem", "cmem", "cta_per_core"):
            if key in record.resources:
                result.add(prefix + key, record.resources[key], "regs/thread" if key == "regs" else
                           ("CTAs" if key == "cta_per_core" else "B"))
        for key in ("cta_limited_by", "grid", "block"):
            if key in record.resources:
                result.environment[prefix + key] = str(record.resources[key])
        if "cta_per_core" in record.resources and "block" in record.resources:
            # the simulator's own CTAs per core (its limiter is cta_limited_by), as a share of the SM's warps
            threads = math.prod(int(n) for n in str(record.resources["block"]).split(","))
            warps = record.resources["cta_per_core"] * math.ceil(threads / warp_size)
            occupancy = round(100 * min(1.0, warps / (threads_per_sm // warp_size)), 2)
            result.add(prefix + "theoretical_occupancy", occupancy, "%")
            launches[-1]["theoretical_occupancy"] = occupancy
        for name, value in record.metrics.items():
            stat = stat_of(name)
            result.add(prefix + name, value, stat.unit if stat else "")
    if several:  # the run's totals over its kernels, unprefixed, as a one-kernel run has them
        for name, value in aggregate(launches).items():
            stat = stat_of(name)
            result.add(name, value, stat.unit if stat else ("%" if name == "theoretical_occupancy" else ""))


def keep_intervals(result: RunResult, log, folder: Path) -> None:
    """The log's progress samples as intervals.csv in the run folder (the report's timeline), where it has any."""
    intervals = log.intervals()
    if intervals:
        write_csv(folder / INTERVALS, intervals)
        result.artifacts["intervals"] = str(folder / INTERVALS)
