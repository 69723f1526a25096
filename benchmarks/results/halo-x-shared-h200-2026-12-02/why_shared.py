"""Why x_operand=shared is slower (diagnostic, timing only): the same configurations with the per-step
transposition left out (shared_no_transpose: the multiplies read stale tiles, so the check fails) and with the fence
after it left out (shared_no_fence), beside the register form and the suite winner, on three layers; interleaved
rounds on one GPU, times kept whatever the check says."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

LAYERS = {"vgg16-conv2_2": ("wgmma_nhwc", {"precision": "tf32", "persistent": True}),
          "vgg16-conv3_2": ("wgmma_nhwc", {"precision": "tf32", "persistent": True}),
          "resnet50-3x3-128-128-28": ("wgmma_nhwc", {"precision": "tf32", "tile_n": 192, "stages": 5,
                                                     "persistent": True})}
TILES = [{"tile_m": 128, "tile_n": 256, "stages": 3}, {"tile_m": 128, "tile_n": 256, "stages": 2},
         {"tile_m": 64, "tile_n": 256, "stages": 2}, {"tile_m": 64, "tile_n": 256, "stages": 3},
         {"tile_m": 256, "tile_n": 128, "stages": 2}, {"tile_m": 128, "tile_n": 128, "stages": 3}]
FORMS = ["registers", "shared", "shared_no_transpose", "shared_no_fence"]


def main() -> int:
    gpu = GpuBackend()
    cases = []
    for layer, (name, params) in LAYERS.items():
        problem = get_problem(layer)
        runs = [("winner", name, params, VARIANTS[name].render(problem, params))]
        for tiles in TILES:
            for form in FORMS:
                cfg = {**tiles, "x_operand": form}
                try:
                    runs.append((form, "wgmma_halo", cfg, VARIANTS["wgmma_halo"].render(problem, cfg)))
                except Exception as exc:  # noqa: BLE001  (a tile that does not fit the layer)
                    print(f"{layer} {cfg}: {exc}")
        cases.append((layer, problem, runs))
    t0 = time.monotonic()
    gpu.precompile([k for *_, runs in cases for *_, k in runs], os.cpu_count())
    print(f"compiled in {time.monotonic() - t0:.0f} s", flush=True)
    best, status = {}, {}
    for r in range(2):
        for layer, problem, runs in cases:
            for form, name, params, kernel in runs if r % 2 == 0 else runs[::-1]:
                result = gpu.run(Job.make(name, params, problem, "gpu", warmup=3, repeats=10), None, kernel)
                ms = result.metrics.get("time_ms")
                key = (layer, form, tuple(sorted(params.items())))
                status[key] = result.status
                if ms is not None:
                    best[key] = min(best.get(key, ms), ms)
    print("layer | tile_m x tile_n, stages | winner | registers | shared | shared_no_transpose | shared_no_fence (us)")
    for layer, _, _runs in cases:
        win = [v for k, v in best.items() if k[0] == layer and k[1] == "winner"]
        for tiles in TILES:
            cells = []
            for form in FORMS:
                key = (layer, form, tuple(sorted({**tiles, "x_operand": form}.items())))
                cells.append(f"{best[key] * 1e3:.1f} ({status[key]})" if key in best else "-")
            print(f"{layer} | {tiles['tile_m']} x {tiles['tile_n']}, {tiles['stages']} | {win[0] * 1e3:.1f} | "
                  + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
