"""Why overlap=true was slower (ab_tf32.txt): on four layers, the winner (A) with each launch timed alone, and B
(overlap) with the copy in 1, 2, 4 or 8 blocks an SM (Launch.per_sm, patched here), launched beside the GEMM
(programmatic) and, with 1 block an SM, after it (plain). Fastest of three rounds.

    python why_overlap.py
"""
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))
from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels import wgmma  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

LAYERS = [("vgg16-conv2_2", {"precision": "tf32", "persistent": True}),
          ("vgg16-conv4_3", {"precision": "tf32", "tile_n": 192, "persistent": True}),
          ("resnet50-3x3-128-128-56-s2", {"precision": "tf32", "tile_n": 192, "stages": 5, "persistent": True}),
          ("resnet50-1x1-256-512-56-s2", {"precision": "tf32", "tile_n": 128, "stages": 6, "persistent": True})]
launches = wgmma.WgmmaNhwcVariant.launches
per_sm = 1


def patched(self, kernel, batch):
    return [dataclasses.replace(launch, per_sm=per_sm) if launch.per_sm else launch
            for launch in launches(self, kernel, batch)]


wgmma.WgmmaNhwcVariant.launches = patched
gpu = GpuBackend()
nhwc = VARIANTS["wgmma_nhwc"]
best = {}
for _ in range(3):
    for layer, params in LAYERS:
        problem = get_problem(layer)
        cases = [("A", params, 1, True)] + [(f"B{n}", {**params, "overlap": True}, n, True) for n in (1, 2, 4, 8)]
        for tag, p, n, on in cases + [("B1 plain", {**params, "overlap": True}, 1, False)]:
            per_sm, gpu.programmatic = n, on
            r = gpu.run(Job.make("wgmma_nhwc", p, problem, "gpu", warmup=3, repeats=20), None, nhwc.render(problem, p))
            assert r.status == "passed", (layer, tag, r.reason)
            row = best.setdefault((layer, tag), {})
            for k, v in r.metrics.items():
                if k.endswith("time_ms") and not k.endswith(("_min", "_max")):
                    row[k] = min(row.get(k, v), v)
gpu.programmatic = True
print("layer | case | us | parts (us, each launch alone)")
for (layer, tag), row in best.items():
    parts = ", ".join(f"{k.split('.')[0].removeprefix('conv2d_wgmma_nhwc') or 'gemm'} {v * 1e3:.1f}"
                      for k, v in row.items() if k != "time_ms")
    print(f"{layer} | {tag} | {row['time_ms'] * 1e3:.1f} | {parts}")
