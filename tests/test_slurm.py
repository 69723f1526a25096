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
from cases import REAL  # 6 simulator runs on batch3x3
from slurm_cluster import one_node_cluster

from simflow.results.store import Store

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slurm, pytest.mark.gpgpusim]  # conftest skips without Slurm

DASK = """
[dask]
cores = 1
memory = "2GB"
queue = "simflow"
walltime = "00:20:00"
interface = "lo"
jobs = {jobs}
log_directory = "{logs}"
"""
SWEEP = REAL + DASK


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


SAMPLED = """
name = "sampled"
backends = ["gpgpusim"]
configs = ["SM7_QV100_small"]
problems = ["200,1,4,16,16,3,1"]
sample = "1,2,3"
[[variants]]
name = "global"
[[variants]]
name = "shared"
""" + DASK


def test_a_sweep_of_sampled_simulations_runs_its_probes_and_samples_on_slurm_workers(slurm, tmp_path):
    """Two layers estimated from sampled simulation (a one-image probe, then 16, 32 and 48 images each):
    both phases go to Slurm jobs; timed with 1 and 2 workers (the first sweep builds the programs)."""
    walls = {}
    for jobs, folder in ((2, tmp_path / "warm-up"), (1, tmp_path / "jobs1"), (2, tmp_path / "jobs2")):
        folder.mkdir()
        path = folder / "sweep.toml"
        path.write_text(SAMPLED.format(jobs=jobs, logs=folder / "dask-logs"))
        env = {**slurm, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(folder)}
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "simflow", "sweep", str(path), "--executor", "slurm", "-j",
                               str(jobs), "--json"], env=env, capture_output=True, text=True, timeout=900)
        walls[folder.name] = time.monotonic() - started
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(proc.stdout)
        assert [e["error"] for e in report["estimates"]] == ["", ""]
        assert not any(e["cached"] for e in report["estimates"])
        with Store(folder) as store:
            runs = store.runs()
        assert sum(r.sampled for r in runs) == 2 and len(runs) == 2 + 2 * 4  # estimates; probes and samples
        assert all(r.status == "passed" for r in runs)
        outs = sorted((folder / "dask-logs").glob("dask-worker-*.err"))  # a cluster for probes, one for samples
        assert len(outs) == 2 * jobs and all("Start worker" in p.read_text() for p in outs)
    print(f"2 sampled layers (8 simulator runs) through Slurm: 1 worker {walls['jobs1']:.1f} s, 2 workers "
          f"{walls['jobs2']:.1f} s ({walls['jobs1'] / walls['jobs2']:.2f}x), on {os.cpu_count()} cores; the first "
          f"sweep, building the programs, {walls['warm-up']:.1f} s")
