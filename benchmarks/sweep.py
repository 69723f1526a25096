"""Sweep benchmark on this machine (needs GPGPU-Sim: GPGPUSIM_ROOT): 8 simulator runs with 1 worker and
with 2 workers (fresh results folder and compile cache each, so both build their programs), simflow's
overhead per run against the simulator's own time, and a sweep killed with SIGKILL in the middle and
resumed. Prints the figures, then a short table.

    GPGPUSIM_ROOT=/opt/gpgpu-sim python benchmarks/sweep.py [--config SM7_QV100]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simflow.results.store import Store  # noqa: E402

SWEEP = """name = "bench8"
backends = ["gpgpusim"]
configs = ["{config}"]
problems = ["batch3x3"]

[[variants]]
name = "global"
unroll = ["none", "both"]

[[variants]]
name = "shared"
tile = [8, 16, 32]

[[variants]]
name = "constant"

[[variants]]
name = "shared_weights"

[[variants]]
name = "shared_constant"
"""


def sweep(folder: Path, workers: int, env: dict) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "simflow", "sweep", str(folder / "sweep.toml"), "-j", str(workers), "--json"]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - start
    if proc.returncode not in (0, 2):
        raise SystemExit(proc.stderr)
    return wall, json.loads(proc.stdout)


def fresh(base: Path, name: str, config: str) -> tuple[Path, dict]:
    folder = base / name
    folder.mkdir()
    (folder / "sweep.toml").write_text(SWEEP.format(config=config))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMFLOW_RESULTS": str(folder / "results"),
           "SIMFLOW_CACHE": str(folder / "cache")}
    return folder, env


def per_run(results: Path) -> list[tuple[float, float]]:
    with Store(results) as store:
        return [(r.metrics["job_wall_s"], r.metrics["sim_wall_s"]) for r in store.runs()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="SM7_QV100")
    args = parser.parse_args()
    if not os.environ.get("GPGPUSIM_ROOT"):
        raise SystemExit("set GPGPUSIM_ROOT to a built GPGPU-Sim")
    base = Path(tempfile.mkdtemp(prefix="simflow-sweep-bench-"))
    rows = []

    one, env1 = fresh(base, "one", args.config)
    wall1, rep1 = sweep(one, 1, env1)
    two, env2 = fresh(base, "two", args.config)
    wall2, rep2 = sweep(two, 2, env2)
    assert len(rep1["run"]) == len(rep2["run"]) == 8, (rep1, rep2)
    rows += [("8 runs, 1 worker (cold cache)", f"{wall1:.1f} s"), ("8 runs, 2 workers (cold cache)", f"{wall2:.1f} s"),
             ("speed-up 2 workers / 1", f"{wall1 / wall2:.2f}x")]

    timings = per_run(one / "results")
    overhead = [job - sim for job, sim in timings]
    rows += [("simulator time per run (median)", f"{statistics.median(s for _, s in timings):.2f} s"),
             ("simflow overhead per run, cold (median)", f"{statistics.median(overhead):.2f} s (includes nvcc build)")]
    warm, envw = fresh(base, "warm", args.config)
    envw["SIMFLOW_CACHE"] = env1["SIMFLOW_CACHE"]  # programs already built
    wallw, _ = sweep(warm, 1, envw)
    warm_timings = per_run(warm / "results")
    warm_over = [job - sim for job, sim in warm_timings]
    rows += [("8 runs, 1 worker (warm cache)", f"{wallw:.1f} s"),
             ("simflow overhead per run, warm (median)",
              f"{statistics.median(warm_over):.2f} s of {statistics.median(j for j, _ in warm_timings):.2f} s"),
             ("sweep wall - sum of job walls, warm", f"{wallw - sum(j for j, _ in warm_timings):.2f} s "
                                                    "(process start, planning, store)")]

    killed, envk = fresh(base, "killed", args.config)
    envk["SIMFLOW_CACHE"] = env1["SIMFLOW_CACHE"]
    cmd = [sys.executable, "-m", "simflow", "sweep", str(killed / "sweep.toml"), "-j", "2"]
    proc = subprocess.Popen(cmd, env=envk, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    db = killed / "results"
    while True:
        time.sleep(0.2)
        if (db / "simflow.db").exists():
            with Store(db) as store:
                if len(store.ids()) >= 3:
                    break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    with Store(db) as store:
        before = set(store.ids())
    orphans = sum(1 for d in (db / "runs").iterdir() if d.name not in before)
    wallr, repr_ = sweep(killed, 2, envk)
    with Store(db) as store:
        after = store.runs()
    keys = {(r.fingerprint, r.config_key) for r in after}
    ok = set(repr_["cached"]) == before and len(after) == 8 and len(keys) == 8
    rows += [("killed after", f"{len(before)} stored runs ({orphans} run folders were in flight)"),
             ("resumed", f"{len(repr_['cached'])} from the store, {len(repr_['run'])} run, {wallr:.1f} s"),
             ("after resume", f"{len(after)} records, {len(keys)} distinct jobs: "
                              + ("nothing lost, nothing run twice" if ok else "MISMATCH"))]

    print(f"\nsimflow sweep benchmark, config {args.config}, {os.cpu_count()} cores, folder {base}")
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key.ljust(width)}  {value}")


if __name__ == "__main__":
    main()
