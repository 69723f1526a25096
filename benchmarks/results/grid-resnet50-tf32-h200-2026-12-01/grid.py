"""Session 54: a focused grid of wgmma_nchw (1x1 layers) or wgmma_nhwc (3x3 layers) on ResNet-50's TF32 layers
that are above 0.85 of cuDNN, against the suite's fixed configurations' best, cuDNN timed in the same process."""
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

which = sys.argv[1]
ONE = ["resnet50-1x1-1024-256-14", "resnet50-1x1-256-128-56", "resnet50-1x1-512-256-28", "resnet50-1x1-2048-512-7",
       "resnet50-1x1-1024-2048-14-s2", "resnet50-1x1-256-64-56", "resnet50-1x1-512-2048-7"]
THREE = ["resnet50-3x3-256-256-28-s2", "resnet50-3x3-256-256-14", "resnet50-3x3-512-512-7",
         "resnet50-3x3-512-512-14-s2"]


def grid(layer):
    out = []
    if "1x1" in layer:
        for tm, tn, st, sp, pe, ga in itertools.product((64, 128, 256), (64, 128, 192), (4, 6), (1, 2, 4),
                                                        (False, True), (False, True)):
            if pe and sp > 1 or ga and "s2" not in layer and "-7" not in layer:
                continue
            out.append(("wgmma_nchw", {"precision": "tf32", "tile_m": tm, "tile_n": tn, "stages": st, "split": sp,
                                       "persistent": pe, "gather": ga}))
    else:
        for tm, tn, st, mode in itertools.product((128, 64), (256, 128, 192, 224), (4, 6),
                                                  ("", "split2", "split4", "sk", "pe")):
            p = {"precision": "tf32", "tile_m": tm, "tile_n": tn, "stages": st}
            p.update({"": {}, "split2": {"split": 2}, "split4": {"split": 4}, "sk": {"stream_k": True},
                      "pe": {"persistent": True}}[mode])
            out.append(("wgmma_nhwc", p))
    return out


layers = {"one": ONE[:4], "one2": ONE[4:], "three": THREE}[which]
gpu = GpuBackend()
plans = {}
for name in layers:
    problem = get_problem(name)
    fixed = [c for a in ADMITS["tf32"] for c in STARTS[a] if c[0].startswith("wgmma")]
    kernels = {}
    for v, p in fixed + grid(name):
        key = v + ":" + json.dumps(p, sort_keys=True)
        if key in kernels:
            continue
        try:
            kernels[key] = (v, p, key in {v2 + ":" + json.dumps(p2, sort_keys=True) for v2, p2 in fixed},
                            VARIANTS[v].render(problem, p))
        except UserError:
            pass
    plans[name] = kernels
t0 = time.monotonic()
n = gpu.precompile([k[3] for plan in plans.values() for k in plan.values()], os.cpu_count())
print(f"compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
rows = []
out = Path(os.environ.get("OUT", ".")) / f"grid-{which}.jsonl"
with out.open("w") as fh:
    for name, kernels in plans.items():
        problem = get_problem(name)
        best_fixed = best_grid = None
        for key, (v, p, is_fixed, kernel) in kernels.items():
            r = gpu.run(Job.make(v, p, problem, "gpu", warmup=3, repeats=10), None, kernel)
            ms = r.metrics.get("time_ms") if r.status == "passed" else None
            fh.write(json.dumps({"layer": name, "key": key, "fixed": is_fixed, "status": r.status, "ms": ms}) + "\n")
            if ms is None:
                continue
            if is_fixed and (best_fixed is None or ms < best_fixed[1]):
                best_fixed = (key, ms)
            if best_grid is None or ms < best_grid[1]:
                best_grid = (key, ms)
        cudnn = time_cudnn(problem, 20, "tf32")
        rows.append((name, len(kernels), best_fixed, best_grid, cudnn))
        print(name, len(kernels), best_fixed, best_grid, cudnn, f"{time.monotonic() - t0:.0f} s", flush=True)
print("\nlayer | configs | fixed best ms | grid best ms | cuDNN ms | fixed/cuDNN | grid/cuDNN | grid best")
for name, n, bf, bg, c in rows:
    print(f"{name} | {n} | {bf[1]:.4f} | {bg[1]:.4f} | {c:.4f} | {bf[1] / c:.3f} | {bg[1] / c:.3f} | {bg[0]}")
