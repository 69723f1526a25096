"""Real run records for store, compare, sweep and report tests, made without a simulator.

A run folder is prepared exactly as `simflow sim` prepares it; the simulator's part is one of
the real logs in examples/ (simflow's own global and shared kernels on batch3x3, SM7_QV100,
seed 0), and the output is the float64 reference, so `finish` judges it as it would a live run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from cases import job_of

from simflow.backends.gpgpusim import finish, prepare
from simflow.job import Job
from simflow.kernels.problems import get_problem
from simflow.kernels.reference import conv2d_reference, make_inputs
from simflow.kernels.values import Params
from simflow.kernels.variants import render
from simflow.results.folders import keep_result, new_run_folder, write_json
from simflow.results.record import RunResult
from simflow.sim.config import load_config

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROBLEM = get_problem("batch3x3")


def sim_record(results: Path, variant: str = "global", wrong: bool = False, log: Path | None = None) -> RunResult:
    """`log`: another real log of this variant on batch3x3 (e.g. one of tests/data with progress samples)."""
    _, folder = new_run_folder(variant, results)
    kernel = render(variant, PROBLEM)
    prepare(job_of(kernel, config="SM7_QV100", timeout_s=600), kernel, load_config("SM7_QV100"), folder)
    shutil.copy(log or EXAMPLES / f"accelsim-fork_qv100_batch3x3_{variant}.log.gz", folder / "sim.log.gz")
    write_json(folder / "execution.json", {"wall_s": 3.3, "returncode": 0, "timed_out": False,
                                           "config_hash": "d36264132f3a29ca", "config_base": "SM7_QV100"})
    x, w = make_inputs(PROBLEM, 0)
    y = conv2d_reference(x, w, PROBLEM.pad).astype(np.float32)
    if wrong:
        y[0, 0, 0, 0] += 10
    y.tofile(folder / "y.bin")
    result = finish(folder)
    keep_result(result, folder)
    return result


def gpu_record(run_id: str, variant: str, time_ms: float, params: dict | None = None) -> RunResult:
    """A GPU-backend record shaped as GpuBackend makes it (test data: the figures are chosen, not measured)."""
    kernel = render(variant, PROBLEM, params)
    result = RunResult.of(Job(variant, Params(kernel.params), PROBLEM, "gpu"), "passed", kernel.fingerprint(),
                          kernels=kernel.kernel_names, run_id=run_id, environment={"gpu": "test data"})
    result.add("time_ms", time_ms, "ms")
    result.add("gflops", PROBLEM.flops / (time_ms * 1e-3) / 1e9, "GFLOP/s")
    result.add("registers", 32, "regs/thread")
    return result
