"""A/B on the GPU: wgmma_nchw's register A operand (TF32, or fp16/bf16 from float x) in one buffer, each step waiting
for the previous step's multiplies before loading its fragments (A: wgmma_nchw_a, na/, the template as it was), against
two buffers, each step loading while the previous step's multiplies run and waiting for them after issuing its own
(B: wgmma_nchw on this tree). Every suite row whose winner is wgmma_nchw with float x, its parameters, interleaved
rounds in one process. SIMFLOW_VARIANTS=na.

    SIMFLOW_VARIANTS=na python ab_nchw.py SUITE.csv [...]
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
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

ROUNDS = 3
plan = []  # (layer, problem, precision, params, A kernel, B kernel)
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        for col in (c for c in r if c.endswith(" best")):  # each precision's winner
            variant, params = parse_config(r[col])
            if variant != "wgmma_nchw" or params.get("io", "float32") != "float32":
                continue
            problem = get_problem(shape=r["shape"])  # the suite's shape: presets and layers of no suite alike
            plan.append((r["layer"], problem, col.split()[0], params, VARIANTS["wgmma_nchw_a"].render(problem, params),
                         VARIANTS["wgmma_nchw"].render(problem, params)))
gpu = GpuBackend()
t0 = time.monotonic()
n = gpu.precompile([k for row in plan for k in row[4:]], os.cpu_count())
print(f"{len(plan)} pairs, compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
best = {}
with (Path(os.environ.get("OUT", ".")) / "ab_nchw.jsonl").open("w") as fh:
    for _ in range(ROUNDS):
        for layer, problem, prec, params, a, b in plan:
            for tag, name, kernel in (("A", "wgmma_nchw_a", a), ("B", "wgmma_nchw", b)):
                r = gpu.run(Job.make(name, params, problem, "gpu", warmup=3, repeats=20), None, kernel)
                ms = r.metrics.get("time_ms") if r.status == "passed" else None
                row = {"layer": layer, "precision": prec, "tag": tag, "params": params, "status": r.status,
                       "time_ms": ms, "registers": r.metrics.get("registers")}
                fh.write(json.dumps(row) + "\n")
                if ms is None:
                    print("NOT PASSED", layer, tag, params, r.status, r.reason[:300], flush=True)
                    continue
                best[(layer, tag)] = min(best.get((layer, tag), ms), ms)
print(f"done in {time.monotonic() - t0:.0f} s")
print("layer | params | A us | B us | B/A")
ratios = []
for layer, _, _, params, _, _ in plan:
    a, b = best.get((layer, "A")), best.get((layer, "B"))
    if a and b:
        ratios.append(b / a)
        text = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"{layer} | {text} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a:.3f}")
if ratios:
    print(f"B/A over {len(ratios)}: median {statistics.median(ratios):.3f}, geomean "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
