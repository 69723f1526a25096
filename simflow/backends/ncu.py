"""The `gpu-ncu` backend: a job's GPU path run once under Nsight Compute (simflow.ncu does the work).

Its runs carry hardware counters under the simulator's stat names, so `diff` and `correlate` set
them beside GPGPU-Sim's; as a backend, sweeps can make them too.
"""

from __future__ import annotations

from pathlib import Path

from ..variants import Kernel
from .base import Availability, Backend, Finding, RunOptions, RunResult


class NcuBackend(Backend):
    name = "gpu-ncu"
    serial = True  # profiling replays kernels: one at a time on the GPU
    default_metrics = ("gpu_sim_insn", "gpgpu_n_tot_w_icount", "gpu_occupancy",
                       "Total_core_cache_stats_breakdown[GLOBAL_ACC_R][TOTAL_ACCESS]", "gpgpu_n_shmem_insn")
    in_check = False  # `simflow profile` is the way in; check runs and times, it does not profile

    def __init__(self, job=None, results: Path | None = None) -> None:
        self.job, self.results = job, results

    @classmethod
    def doctor(cls, probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
        avail = cls.probe()
        return [Finding("Nsight Compute (backend gpu-ncu)", avail.available, avail.detail, avail.how_to_get)]

    @classmethod
    def probe(cls) -> Availability:
        from ..errors import UserError
        from ..ncu import find_ncu
        from . import backend_class

        gpu = backend_class("gpu").probe()
        if not gpu.available:
            return Availability(False, gpu.detail, gpu.how_to_get)
        try:
            return Availability(True, f"{find_ncu()} on {gpu.detail}")
        except UserError as exc:
            return Availability(False, str(exc), "install Nsight Compute (ncu), part of the CUDA toolkit")

    @classmethod
    def from_job(cls, job, results) -> NcuBackend:
        return cls(job, results)

    def run(self, kernel: Kernel, batch: int, options: RunOptions) -> RunResult:
        from ..ncu import profile

        if self.job is None:
            raise ValueError("NcuBackend runs jobs: make it with from_job")
        return profile(self.job, self.results)  # keeps its own run folder (ncu.cmd, ncu.log, result.json)
