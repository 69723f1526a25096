"""wgmma_halo with x_operand=shared (the x tile transposed once a step, each tap a shifted descriptor) against each
stride-1 K x K TF32 suite winner it can run (W a multiple of 4), and against wgmma_halo's register form: every
configuration of tile_m, tile_n, stages and bk that fits, interleaved rounds on one GPU, the fastest of each kept.

    python grid_halo_shared.py SUITE.csv [...] [--rounds 2] [--repeats 10] [--out runs.jsonl]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from ab import interleaved, spread  # noqa: E402
from floor_reasons import winners  # noqa: E402

from simflow.errors import UserError  # noqa: E402
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
    out = args.out.open("w") if args.out else None
    best, failed = interleaved(gpu, cases, args.rounds, args.repeats, out, progress=True)
    if out:
        out.close()
    runs_of = {label: runs for label, _, runs in cases}

    def fastest(label, tag):
        found = [(ms, json.dumps(runs_of[label][i][2], sort_keys=True)) for (lab, i), ms in best.items()
                 if lab == label and runs_of[label][i][0] == tag]
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
        print(f"S/A over {len(ratios)}: {spread(ratios)}")
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
