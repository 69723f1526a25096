"""A/B on the GPU: wgmma_nhwc's channel-last copy of x with a block of 128 bytes of a pixel's channels (A, as on
main: 32 floats or 64 halves) against 256 bytes (B: 64 floats or 128 halves, twice the loads in flight a thread),
on every suite layer whose winner is wgmma_nhwc, the winner's parameters, interleaved rounds in one process.
B is the user variant wgmma_nhwc_b (SIMFLOW_VARIANTS=xb: the same template and parameters) with the copy's shape
patched below."""
import csv
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.tensor_cores import WmmaNhwcVariant  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

ROUNDS = 3
_shape = WmmaNhwcVariant.x_copy_shape


def wide_copy(self, problem, params):
    vec, channels = _shape(self, problem, params)
    if self.name.endswith("_b") and channels >= 32 and self.padded_channels(problem, params) % (2 * channels) == 0:
        channels *= 2
    return vec, channels


WmmaNhwcVariant.x_copy_shape = wide_copy


def parse(config):
    variant, _, rest = config.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        k, v = item.split("=")
        params[k] = {"True": True, "False": False}.get(v, int(v) if v.lstrip("-").isdigit() else v)
    return variant, params


plan = []
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        col = next(c for c in r if c.endswith(" best"))
        variant, params = parse(r[col])
        if variant != "wgmma_nhwc":
            continue
        problem = get_problem(r["layer"])
        a, b = VARIANTS["wgmma_nhwc"].render(problem, params), VARIANTS["wgmma_nhwc_b"].render(problem, params)
        ga, gb = a.launches(problem.B)[0].grid, b.launches(problem.B)[0].grid
        if ga[1] == gb[1]:
            print("same copy", r["layer"], col, ga, flush=True)
            continue
        plan.append((r["layer"], col.split()[0], params, a, b))
gpu = GpuBackend()
t0 = time.monotonic()
n = gpu.precompile([k for row in plan for k in row[3:]], os.cpu_count())
print(f"{len(plan)} pairs, compiled {n} in {time.monotonic() - t0:.0f} s", flush=True)
rows = []
with (Path(os.environ.get("OUT", ".")) / "ab_xcopy.jsonl").open("w") as fh:
    for layer, prec, params, a, b in plan:
        problem = get_problem(layer)
        got = {"A": [], "B": [], "A_x": [], "B_x": []}
        status = {}
        for _ in range(ROUNDS):
            for tag, v, k in (("A", "wgmma_nhwc", a), ("B", "wgmma_nhwc_b", b)):
                r = gpu.run(Job.make(v, params, problem, "gpu", warmup=3, repeats=20), None, k)
                status[tag] = r.status
                if r.status == "passed":
                    got[tag].append(r.metrics["time_ms"])
                    got[tag + "_x"] += [m for key, m in r.metrics.items() if "_x" in key and key.endswith("time_ms")]
        row = {"layer": layer, "precision": prec, "params": params, "status": status,
               **{t: min(v, default=None) for t, v in got.items()}}
        fh.write(json.dumps(row) + "\n")
        rows.append(row)
print(f"done in {time.monotonic() - t0:.0f} s")
print("layer | prec | A us | B us | B/A | A copy us | B copy us")
for r in rows:
    if r["A"] and r["B"]:
        print(f"{r['layer']} | {r['precision']} | {r['A'] * 1e3:.1f} | {r['B'] * 1e3:.1f} | {r['B'] / r['A']:.3f} | "
              f"{(r['A_x'] or 0) * 1e3:.1f} | {(r['B_x'] or 0) * 1e3:.1f}")
    else:
        print("NOT PASSED", r["layer"], r["precision"], r["status"])
