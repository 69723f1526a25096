"""Split-K in wgmma_nchw summed in a cluster (reduce=cluster) against atomic adds into y zeroed first (reduce=atomic):
the same configurations both ways, and the suite's winner, on the 1x1 layers of a suite CSV, interleaved rounds on
one GPU, the fastest of each kept.

    python grid_reduce.py SUITE.csv --layers NAME,... [--rounds 2] [--repeats 20] [--out runs.jsonl]
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

TILES = [{"tile_m": 256, "tile_n": 64}, {"tile_m": 128, "tile_n": 192}, {"tile_m": 256, "tile_n": 128},
         {"tile_m": 128, "tile_n": 128}, {"tile_m": 128, "tile_n": 64}]
SPLITS = [2, 4, 8]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("suites", nargs="+", type=Path)
    parser.add_argument("--layers", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    wanted = args.layers.split(",")
    cases = []  # (label, problem, [(tag, variant, params, kernel)])
    for path in args.suites:
        for layer, shape, precision, name, params in winners(path):
            if layer not in wanted:
                continue
            problem = get_problem(layer, shape=shape)
            runs = [("winner", name, params, VARIANTS[name].render(problem, params))]
            base = {"precision": "fp16" if precision == "float16" else precision}
            for tiles, split, reduce in itertools.product(TILES, SPLITS, ("atomic", "cluster")):
                cfg = {**base, **tiles, "split": split, "reduce": reduce}
                try:
                    runs.append((reduce, "wgmma_nchw", cfg, VARIANTS["wgmma_nchw"].render(problem, cfg)))
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
    found_best, failed = interleaved(gpu, cases, args.rounds, args.repeats, out, progress=True)
    if out:
        out.close()
    runs_of = {label: runs for label, _, runs in cases}
    best = {(label, json.dumps(runs_of[label][i][2], sort_keys=True)): ms for (label, i), ms in found_best.items()}
    print("layer | split | tiles | atomic us | cluster us | cluster/atomic")
    pairs, summary = [], []
    for label, _, runs in cases:
        for tag, _, params, _ in runs:
            if tag != "cluster":
                continue
            a = best.get((label, json.dumps({**params, "reduce": "atomic"}, sort_keys=True)))
            c = best.get((label, json.dumps(params, sort_keys=True)))
            if a and c:
                pairs.append(c / a)
                print(f"{label} | {params['split']} | {params['tile_m']} x {params['tile_n']} | {a * 1e3:.1f} | "
                      f"{c * 1e3:.1f} | {c / a:.3f}")
        win = best.get((label, json.dumps(runs[0][2], sort_keys=True)))
        found = [(ms, json.loads(k[1])) for k, ms in best.items() if k[0] == label and '"reduce": "cluster"' in k[1]]
        if win and found:
            ms, cfg = min(found, key=lambda f: f[0])
            summary.append(f"{label} | {runs[0][1]}:{','.join(f'{k}={v}' for k, v in runs[0][2].items())} | "
                           f"{win * 1e3:.1f} | {ms * 1e3:.1f} | {cfg} | {ms / win:.3f}")
    if pairs:
        print(f"cluster/atomic over {len(pairs)}: {spread(pairs)}")
    print("layer | winner | winner us | best cluster us | its configuration | best cluster / winner")
    print("\n".join(summary))
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
