"""wgmma_halo with x_operand=shared (the x tile transposed once a step, each tap a shifted descriptor) against each
stride-1 K x K TF32 suite winner it can run (W a multiple of 4), and against wgmma_halo's register form: every
configuration of tile_m, tile_n, stages and bk that fits, interleaved rounds on one GPU, the fastest of each kept.

    python grid_halo_shared.py SUITE.csv [...] [--rounds 2] [--repeats 10] [--out runs.jsonl]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from floor_reasons import winners  # noqa: E402

from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

REGISTERS = [{"tile_m": 64, "tile_n": 512}, {"tile_m": 128, "tile_n": 256}, {"tile_m": 128, "tile_n": 128, "stages": 2}]
SHARED = [{"x_operand": "shared", "tile_m": m, "tile_n": n, "stages": s, "bk": bk}
          for m, n, s, bk in itertools.product((64, 128, 256), (128, 256, 512), (2, 3, 4), (8, 16))
          if m * n // 256 <= 128]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("suites", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cases, seen = [], set()  # (label, problem, [(tag, variant, params, kernel)]); shapes taken
    for path in args.suites:
        for layer, shape, precision, name, params in winners(path):
            problem = get_problem(layer, shape=shape)
            if precision != "tf32" or problem.K == 1 or problem.stride != 1 or problem.W % 4 or shape in seen:
                continue
            seen.add(shape)  # conv3_3 and conv4_3 are conv3_2's and conv4_2's shapes
            runs = [("A", name, params, VARIANTS[name].render(problem, params))]
            for tag, configs in (("R", REGISTERS), ("S", SHARED)):
                for cfg in configs:
                    try:
                        runs.append((tag, "wgmma_halo", cfg, VARIANTS["wgmma_halo"].render(problem, cfg)))
                    except UserError:
                        pass
            cases.append((f"{layer} {precision}", problem, runs))
    from simflow.backends.gpu import GpuBackend

    gpu = GpuBackend()
    started = time.monotonic()
    compiled = gpu.precompile([k for *_, runs in cases for *_, k in runs], os.cpu_count())
    print(f"{len(cases)} layers, {sum(len(r) for *_, r in cases)} kernels, compiled {compiled} sources in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    best, failed = {}, []
    out = args.out.open("w") if args.out else None
    for r in range(args.rounds):
        for label, problem, runs in cases:
            for tag, name, params, kernel in runs if r % 2 == 0 else runs[::-1]:
                job = Job.make(name, params, problem, "gpu", warmup=3, repeats=args.repeats)
                result = gpu.run(job, None, kernel)
                ms = result.metrics.get("time_ms") if result.status == "passed" else None
                if out:
                    out.write(json.dumps({"layer": label, "tag": tag, "variant": name, "params": params,
                                          "status": result.status, "time_ms": ms}) + "\n")
                key = (label, tag, json.dumps(params, sort_keys=True))
                if ms is None:
                    failed.append(f"{label} {tag} {params}: {result.status} {result.reason[:200]}")
                    continue
                best[key] = min(best.get(key, ms), ms)
        print(f"round {r + 1} done at {time.monotonic() - started:.0f} s", flush=True)
    if out:
        out.close()

    def fastest(label, tag):
        found = [(ms, k[2]) for k, ms in best.items() if k[0] == label and k[1] == tag]
        return min(found) if found else (None, None)

    print("layer | A (winner) | A us | R us (halo, registers) | S us (halo, shared) | S config | S/A | S/R")
    ratios = []
    for label, _, runs in cases:
        (a, _), (rg, _), (sh, cfg) = fastest(label, "A"), fastest(label, "R"), fastest(label, "S")
        if a is None or sh is None:
            continue
        ratios.append(sh / a)
        print(f"{label} | {runs[0][1]}:{','.join(f'{k}={v}' for k, v in runs[0][2].items())} | {a * 1e3:.1f} | "
              f"{rg * 1e3 if rg else float('nan'):.1f} | {sh * 1e3:.1f} | {cfg} | {sh / a:.3f} | "
              f"{sh / rg if rg else float('nan'):.3f}")
    if ratios:
        print(f"S/A over {len(ratios)}: median {statistics.median(ratios):.3f}, geomean "
              f"{math.exp(statistics.fmean(map(math.log, ratios))):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
