"""A/B on the GPU: wgmma_nhwc's GEMM after its channel-last copy (A: the suite winner as it ran) against beside it
(B: the same tile and stages, persistent, overlap=true; stream-K and split-K dropped, as overlap takes whole tiles).
Every suite row whose winner is wgmma_nhwc, interleaved rounds in one process, the fastest of each kept.

    python ab_overlap.py SUITE.csv [...]
"""
import csv
import json
import math
import os
import statistics
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
nhwc = VARIANTS["wgmma_nhwc"]
plan = []  # (layer, problem, A params, B params, A kernel, B kernel)
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        for col in (c for c in r if c.endswith(" best")):
            variant, params = parse_config(r[col])
            if variant != "wgmma_nhwc":
                continue
            problem = get_problem(shape=r["shape"])
            b = {k: v for k, v in params.items() if k not in ("stream_k", "split")} | {"persistent": "True",
                                                                                      "overlap": "True"}
            try:
                kernels = nhwc.render(problem, params), nhwc.render(problem, b)
            except LimitError as exc:
                print("not compared:", r["layer"], exc)
                continue
            plan.append((f"{r['layer']} {col.split()[0]}", problem, params, b, *kernels))
gpu = GpuBackend()
t0 = time.monotonic()
n = gpu.precompile([k for row in plan for k in row[4:]], os.cpu_count())
print(f"{len(plan)} pairs, compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
best = {}
with (Path(os.environ.get("OUT", ".")) / "ab_overlap.jsonl").open("w") as fh:
    for _ in range(ROUNDS):
        for layer, problem, pa, pb, a, b in plan:
            for tag, params, kernel in (("A", pa, a), ("B", pb, b)):
                r = gpu.run(Job.make("wgmma_nhwc", params, problem, "gpu", warmup=3, repeats=20), None, kernel)
                ms = r.metrics.get("time_ms") if r.status == "passed" else None
                fh.write(json.dumps({"layer": layer, "tag": tag, "params": params, "status": r.status,
                                     "time_ms": ms, "bad_elements": r.metrics.get("bad_elements")}) + "\n")
                if ms is None:
                    print("NOT PASSED", layer, tag, params, r.status, r.reason[:300], flush=True)
                    continue
                best[(layer, tag)] = min(best.get((layer, tag), ms), ms)
print(f"done in {time.monotonic() - t0:.0f} s")
print("layer | A (winner) | A us | B us | B/A")
ratios = []
for layer, _, pa, _, _, _ in plan:
    a, b = best.get((layer, "A")), best.get((layer, "B"))
    if a and b:
        ratios.append(b / a)
        text = ",".join(f"{k}={v}" for k, v in pa.items())
        print(f"{layer} | {text} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.3f}")
if ratios:
    print(f"B/A over {len(ratios)}: median {statistics.median(ratios):.3f}, geomean "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
