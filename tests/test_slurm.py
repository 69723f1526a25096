"""Sweeps through a real Slurm (marker slurm): a one-node cluster started by the fixture (slurm_cluster.py),
dask-jobqueue submitting the workers with sbatch, simulator runs as the jobs. Skipped, with the reason,
where Slurm, dask-jobqueue or the simulator is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hardware import requires_gpgpusim
from slurm_cluster import one_node_cluster
from test_sweep import REAL  # 6 simulator runs on batch3x3

from simflow.store import Store

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slurm, pytest.mark.gpgpusim, requires_gpgpusim]  # conftest skips without Slurm

SWEEP = REAL + """
[dask]
cores = 1
memory = "2GB"
queue = "simflow"
walltime = "00:20:00"
interface = "lo"
jobs = {jobs}
log_directory = "{logs}"
"""


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    with one_node_cluster(tmp_path_factory.mktemp("slurm")) as env:
        yield env


def _sweep(slurm_env: dict, folder: Path, jobs: int) -> tuple[dict, float]:
    folder.mkdir()
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(jobs=jobs, logs=folder / "dask-logs"))
    env = {**slurm_env, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(folder)}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "simflow", "sweep", str(path), "--executor", "slurm", "-j", str(jobs),
                           "--json"], env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), wall


def test_a_sweep_runs_through_slurm_workers_with_one_and_two_jobs(slurm, tmp_path):
    """The first sweep builds the 6 programs (cached by source): it is not timed with the other two."""
    walls = {}
    for jobs, folder in ((2, tmp_path / "warm-up"), (1, tmp_path / "jobs1"), (2, tmp_path / "jobs2")):
        report, walls[folder.name] = _sweep(slurm, folder, jobs)
        assert len(report["run"]) == 6 and report["failed"] == [] and report["cached"] == []
        with Store(folder) as store:
            runs = store.runs()
            assert len(runs) == 6 and all(r.status == "passed" for r in runs)
        # the workers were Slurm jobs: sbatch wrote their logs, one per job
        outs = sorted((folder / "dask-logs").glob("dask-worker-*.err"))
        assert len(outs) == jobs and all("Start worker" in p.read_text() for p in outs)
    print(f"6 simulator runs through Slurm, programs built: 1 worker {walls['jobs1']:.1f} s, 2 workers "
          f"{walls['jobs2']:.1f} s ({walls['jobs1'] / walls['jobs2']:.2f}x), on {os.cpu_count()} cores; the first "
          f"sweep, building them, {walls['warm-up']:.1f} s")
