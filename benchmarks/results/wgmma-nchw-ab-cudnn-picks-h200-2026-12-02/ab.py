"""A/B on the GPU: wgmma_nchw (A fragments double-buffered) against wgmma_nchw_old (f6bd7ae: loaded after the
previous step's wait_group 0), every TF32 start of wgmma_nchw on ResNet-50's 1x1 layers, interleaved rounds."""
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402
from simflow.run.tune_starts import STARTS  # noqa: E402

LAYERS = sys.argv[1].split(",")
ROUNDS = 3
configs = [p for v, p in STARTS["tf32"] if v == "wgmma_nchw"] if "tf32" in STARTS else []
if not configs:
    configs = [p for a in STARTS for v, p in STARTS[a] if v == "wgmma_nchw" and p.get("precision") == "tf32"]
gpu = GpuBackend()
plan = []
for name in LAYERS:
    problem = get_problem(name)
    for p in configs:
        try:
            plan.append((name, p, VARIANTS["wgmma_nchw_old"].render(problem, p),
                         VARIANTS["wgmma_nchw"].render(problem, p)))
        except UserError:
            pass
t0 = time.monotonic()
n = gpu.precompile([k for row in plan for k in row[2:]], os.cpu_count())
print(f"{len(plan)} pairs, compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
best = {}
with (Path(os.environ.get("OUT", ".")) / "ab.jsonl").open("w") as fh:
    for name, p, old, new in plan:
        problem = get_problem(name)
        ms = {"old": [], "new": []}
        status = {}
        for _ in range(ROUNDS):
            for tag, v, k in (("old", "wgmma_nchw_old", old), ("new", "wgmma_nchw", new)):
                r = gpu.run(Job.make(v, p, problem, "gpu", warmup=3, repeats=20), None, k)
                status[tag] = r.status
                if r.status == "passed":
                    ms[tag].append(r.metrics["time_ms"])
        row = {"layer": name, "params": p, "status": status, "old": min(ms["old"], default=None),
               "new": min(ms["new"], default=None)}
        fh.write(json.dumps(row) + "\n")
        if row["old"] and row["new"]:
            b = best.setdefault(name, [None, None, []])
            b[0] = min(b[0] or 1e9, row["old"])
            b[1] = min(b[1] or 1e9, row["new"])
            b[2].append(row["new"] / row["old"])
        else:
            print("NOT PASSED", name, p, status, flush=True)
print(f"done in {time.monotonic() - t0:.0f} s")
print("layer | pairs | best old us | best new us | new/old best | median new/old")
for name, (o, nw, rs) in best.items():
    rs.sort()
    print(f"{name} | {len(rs)} | {o * 1e3:.1f} | {nw * 1e3:.1f} | {nw / o:.3f} | {rs[len(rs) // 2]:.3f}")
