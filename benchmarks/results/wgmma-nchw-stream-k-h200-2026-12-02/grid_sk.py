"""(As run; one line wrapped since.) wgmma_nchw stream_k (equal shares of every tile's k steps) on ResNet-50's 1x1
TF32 layers, beside the suite's session 55 winner of each layer timed in the same process."""
import csv
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402


def parse(config):
    variant, _, rest = config.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        k, v = item.split("=")
        params[k] = {"True": True, "False": False}.get(v, int(v) if v.lstrip("-").isdigit() else v)
    return variant, params


rows = [r for r in csv.DictReader(open(sys.argv[1])) if "1x1" in r["layer"]]
gpu = GpuBackend()
plan = []
for r in rows:
    problem = get_problem(r["layer"])
    best = parse(r["tf32 best"])
    cands = [("best", best)]
    for tm, tn, st, ga in itertools.product((64, 128, 256), (64, 128, 192), (3, 4, 5, 6), (False, True)):
        if ga and problem.stride == 1:
            continue
        cands.append(("sk", ("wgmma_nchw", {"precision": "tf32", "stream_k": True, "tile_m": tm, "tile_n": tn,
                                             "stages": st, "gather": ga})))
    for tag, (v, p) in cands:
        try:
            plan.append((r["layer"], tag, v, p, VARIANTS[v].render(problem, p)))
        except UserError:
            pass
t0 = time.monotonic()
n = gpu.precompile([k[4] for k in plan], os.cpu_count())
print(f"{len(plan)} kernels, compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
out = {}
with (Path(os.environ.get("OUT", ".")) / "grid_sk.jsonl").open("w") as fh:
    for layer, tag, v, p, k in plan:
        res = gpu.run(Job.make(v, p, get_problem(layer), "gpu", warmup=3, repeats=20), None, k)
        ms = res.metrics.get("time_ms") if res.status == "passed" else None
        fh.write(json.dumps({"layer": layer, "tag": tag, "variant": v, "params": p, "status": res.status,
                             "ms": ms}) + "\n")
        if res.status != "passed":
            print("NOT PASSED", layer, p, res.status, res.reason, flush=True)
            continue
        o = out.setdefault(layer, {"best": None, "sk": None})
        if o[tag] is None or ms < o[tag][0]:
            o[tag] = (ms, p)
print(f"done in {time.monotonic() - t0:.0f} s\nlayer | suite best us | stream-K best us | ratio | its params")
ratios = []
for layer, o in out.items():
    b, w = o["best"], o["sk"]
    ratios.append(w[0] / b[0])
    print(f"{layer} | {b[0] * 1e3:.1f} | {w[0] * 1e3:.1f} | {w[0] / b[0]:.3f} | {json.dumps(w[1])}")
print(f"median ratio {statistics.median(ratios):.3f}")
