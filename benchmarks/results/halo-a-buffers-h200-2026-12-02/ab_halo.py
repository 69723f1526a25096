"""A/B on the GPU: wgmma_halo (A: a wait for all multiplies before each tap group's A fragments, as on main) against
wgmma_halo_b (B: the fragments in two buffers, each group waiting only for the group before the last; hb/), on the
stride-1 3x3 layers of VGG-16 and ResNet-50 that W % 4 admits, five configurations each, interleaved rounds in one
process; each layer's suite winner (C) timed beside them. SIMFLOW_VARIANTS=hb.

    SIMFLOW_VARIANTS=hb python ab_halo.py SUITE.csv [...]
"""
import csv
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
from floor_reasons import parse_config  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import LimitError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

ROUNDS = 3
CONFIGS = [{"tile_m": 64, "tile_n": 512}, {"tile_m": 128, "tile_n": 256}, {"tile_m": 128, "tile_n": 128, "stages": 2},
           {"tile_m": 128, "tile_n": 128}, {"tile_m": 128, "tile_n": 256, "stages": 4}]

plan = []  # (layer, tag, variant, params, kernel)
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        problem = get_problem(r["layer"])
        if problem.K != 3 or problem.stride != 1 or problem.W % 4 or r["layer"] in ("vgg16-conv3_3", "vgg16-conv4_3"):
            continue  # conv3_3 and conv4_3 are conv3_2's and conv4_2's shapes
        col = next(c for c in r if c.endswith(" best"))
        variant, params = parse_config(r[col])
        plan.append((r["layer"], "C", variant, params, VARIANTS[variant].render(problem, params)))
        for params in CONFIGS:
            for tag, name in (("A", "wgmma_halo"), ("B", "wgmma_halo_b")):
                try:
                    plan.append((r["layer"], tag, name, params, VARIANTS[name].render(problem, params)))
                except LimitError as e:
                    print("refused", r["layer"], tag, params, str(e)[:80], flush=True)
gpu = GpuBackend()
t0 = time.monotonic()
print(f"{len(plan)} runs, compiled {gpu.precompile([p[-1] for p in plan], os.cpu_count())} in "
      f"{time.monotonic() - t0:.0f} s", flush=True)
best = {}
with (Path(os.environ.get("OUT", ".")) / "ab_halo.jsonl").open("w") as fh:
    for _ in range(ROUNDS):
        for layer, tag, name, params, kernel in plan:
            r = gpu.run(Job.make(name, params, get_problem(layer), "gpu", warmup=3, repeats=20), None, kernel)
            ms = r.metrics.get("time_ms") if r.status == "passed" else None
            fh.write(json.dumps({"layer": layer, "tag": tag, "variant": name, "params": params, "status": r.status,
                                 "time_ms": ms, "registers": r.metrics.get("registers")}) + "\n")
            if r.status != "passed":
                print("NOT PASSED", layer, tag, params, r.status, r.reason[:300], flush=True)
                continue
            key = (layer, tag, json.dumps(params, sort_keys=True))
            best[key] = min(best.get(key, ms), ms)
print(f"done in {time.monotonic() - t0:.0f} s")
print("layer | config | A us | B us | B/A | winner C us")
layers = dict.fromkeys(k[0] for k in best)
for layer in layers:
    c = min((v for k, v in best.items() if k[0] == layer and k[1] == "C"), default=None)
    for params in CONFIGS:
        p = json.dumps(params, sort_keys=True)
        a, b = best.get((layer, "A", p)), best.get((layer, "B", p))
        if a and b:
            print(f"{layer} | {','.join(f'{k}={v}' for k, v in params.items())} | {a * 1e3:.1f} | {b * 1e3:.1f} | "
                  f"{b / a:.3f} | {c * 1e3:.1f}")
    a = min((v for k, v in best.items() if k[0] == layer and k[1] == "A"), default=None)
    b = min((v for k, v in best.items() if k[0] == layer and k[1] == "B"), default=None)
    if a and b and c:
        print(f"{layer} | best | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.3f} | {c * 1e3:.1f} (B/C {b / c:.3f})")
