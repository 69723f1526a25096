"""Session 54: wgmma_nchw with clusters of 2 and 4 (weights multicast) against cluster=1 on ResNet-50's TF32 1x1
layers, cuDNN timed in the same process."""
import itertools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
from native import time_cudnn  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402
from simflow.run.tune_starts import ADMITS, STARTS  # noqa: E402

LAYERS = ["resnet50-1x1-1024-256-14", "resnet50-1x1-2048-512-7", "resnet50-1x1-512-2048-7", "resnet50-1x1-256-1024-14",
          "resnet50-1x1-1024-512-14", "resnet50-1x1-1024-2048-14-s2", "resnet50-1x1-512-256-28"]
gpu = GpuBackend()
plans = {}
for name in LAYERS:
    problem = get_problem(name)
    fixed = [c for a in ADMITS["tf32"] for c in STARTS[a] if c[0] == "wgmma_nchw"]
    grid = [("wgmma_nchw", {"precision": "tf32", "cluster": cl, "tile_m": tm, "tile_n": tn, "stages": st,
                            "gather": ga})
            for cl, tm, tn, st, ga in itertools.product((2, 4), (128, 256), (64, 128, 192), (4, 6), (False, True))]
    kernels = {}
    for v, p in fixed + grid:
        key = v + ":" + json.dumps(p, sort_keys=True)
        try:
            kernels.setdefault(key, (v, p, p.get("cluster", 1) > 1, VARIANTS[v].render(problem, p)))
        except UserError:
            pass
    plans[name] = kernels
t0 = time.monotonic()
print(f"compiled {gpu.precompile([k[3] for pl in plans.values() for k in pl.values()], os.cpu_count())} in "
      f"{time.monotonic() - t0:.0f} s", flush=True)
rows = []
with (Path(os.environ.get("OUT", ".")) / "grid-cluster.jsonl").open("w") as fh:
    for name, kernels in plans.items():
        problem = get_problem(name)
        best = {False: None, True: None}
        bad = 0
        for key, (v, p, clustered, kernel) in kernels.items():
            r = gpu.run(Job.make(v, p, problem, "gpu", warmup=3, repeats=10), None, kernel)
            ms = r.metrics.get("time_ms") if r.status == "passed" else None
            bad += r.status != "passed"
            fh.write(json.dumps({"layer": name, "key": key, "cluster": clustered, "status": r.status,
                                 "reason": r.reason[:200], "ms": ms}) + "\n")
            if ms is not None and (best[clustered] is None or ms < best[clustered][1]):
                best[clustered] = (key, ms)
        cudnn = time_cudnn(problem, 20, "tf32")
        rows.append((name, len(kernels), bad, best[False], best[True], cudnn))
        print(name, rows[-1][1:], f"{time.monotonic() - t0:.0f} s", flush=True)
print("\nlayer | configs | not passed | suite's wgmma_nchw best us | clustered best us | cuDNN us | ratio before"
      " | after | clustered best")
for name, n, bad, b1, b2, c in rows:
    after = min(b1[1], b2[1]) if b2 else b1[1]
    print(f"{name} | {n} | {bad} | {b1[1] * 1e3:.1f} | {b2[1] * 1e3 if b2 else float('nan'):.1f} | {c * 1e3:.1f} | "
          f"{b1[1] / c:.3f} | {after / c:.3f} | {b2[0][11:] if b2 else '-'}")
