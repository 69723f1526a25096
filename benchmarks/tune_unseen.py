"""The user's path on layers the fixed configurations were not chosen on: `simflow tune --all` within a time
budget, once as it was (the optimiser's choices only) and once as it is (starts: what won known layers and each
variant's defaults first), against cuDNN timed in the same process and precision.

Each arm tunes into a fresh results folder, so neither reads the other's measurements. The ratio is the tuned
time over cuDNN's (above 1: slower).

    python benchmarks/tune_unseen.py [--time 40] [--pick 0:float32,3:float16] [--csv FILE]
    python benchmarks/tune_unseen.py --layers "inception-5x5=32,48,64,35,35,5,2,1:float32;..." --arms after \
        --time 60 --exhaustive 600
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from native import time_cudnn  # noqa: E402

from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.run import tune as tune_module  # noqa: E402

LAYERS = [  # (name, B,C,M,H,W,K,pad,stride, precisions): none is a ResNet-50 layer
    ("5x5 96->256 at 27 (AlexNet conv2)", "32,96,256,27,27,5,2,1", ("float32", "tf32", "float16")),
    ("11x11/4 3->96 at 227 (AlexNet conv1)", "32,3,96,227,227,11,0,4", ("float32",)),
    ("3x3 3->64 at 224 (VGG conv1_1)", "16,3,64,224,224,3,1,1", ("float32",)),
    ("1x1 512->256 at 28", "32,512,256,28,28,1,0,1", ("tf32", "float16")),
    ("3x3 384->384 at 7, batch 64", "64,384,384,7,7,3,1,1", ("tf32", "float16")),  # fewer tiles than SMs
    ("1x1/2 384->768 at 28", "32,384,768,28,28,1,0,2", ("tf32", "float16")),  # a strided projection
    ("1x1 1536->384 at 7, batch 64", "64,1536,384,7,7,1,0,1", ("tf32", "float16")),  # few pixels, long k
    ("3x3 64->64 at 112, batch 8", "8,64,64,112,112,3,1,1", ("tf32", "float16")),  # 64 output channels: tile_m=64
]


def tuned(problem, precision: str, seconds: float, with_starts: bool, strategy: str = "tpe"):
    real = tune_module.starts
    if not with_starts:
        tune_module.starts = lambda *args: []
    try:
        with tempfile.TemporaryDirectory(prefix="simflow-tune-") as results:
            return tune_module.tune(problem, tune_module.tunable_variants("gpu", precision), backend="gpu",
                                    precision=precision, strategy=strategy, budget_s=seconds, results=Path(results))
    finally:
        tune_module.starts = real


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=40.0, help="each tune's budget in seconds")
    parser.add_argument("--pick", help="only these LAYERS index:precision pairs, comma-separated")
    parser.add_argument("--arms", default="before,after", help="of before (no starts), after (starts)")
    parser.add_argument("--exhaustive", type=float, help="also the exhaustive grid, for up to this many seconds")
    parser.add_argument("--layers", help="instead of LAYERS: NAME=B,C,M,H,W,K,pad,stride:PRECISION/PRECISION, "
                        "separated by ';'")
    parser.add_argument("--csv")
    args = parser.parse_args()
    layers = LAYERS
    if args.layers:
        layers = []
        for part in args.layers.split(";"):
            name, _, rest = part.strip().partition("=")
            shape, _, precisions = rest.partition(":")
            layers.append((name, shape, tuple(precisions.split("/"))))
    arms = [arm for arm in ("before", "after") if arm in args.arms.split(",")]
    picked = {tuple(pair.split(":")) for pair in args.pick.split(",")} if args.pick else None
    rows = []
    for index, (name, shape, precisions) in enumerate(layers):
        problem = get_problem("custom", shape=shape)
        for precision in precisions:
            if picked is not None and (str(index), precision) not in picked:
                continue
            cudnn = time_cudnn(problem, 20, precision)
            row = {"layer": name, "shape": shape, "precision": precision, "cudnn_ms": cudnn}
            for arm in arms:
                result = tuned(problem, precision, args.time, arm == "after")
                best = result.best
                row |= {f"{arm}_ms": best.value if best else None, f"{arm}_config": f"{best.variant} {best.params}"
                        if best else "none passed", f"{arm}_tried": len(result.trials),
                        f"{arm}_variants": len({t.variant for t in result.trials})}
            line = f"{name:38s} {precision:8s} cuDNN {cudnn:8.4f} ms"
            for arm in arms:
                ratio = row[f"{arm}_ms"] / cudnn if row[f"{arm}_ms"] and cudnn else float("nan")
                line += (f" | {arm} {ratio:5.2f}x ({row[f'{arm}_tried']} tried, {row[f'{arm}_variants']} variants): "
                         f"{row[f'{arm}_config']}")
            if args.exhaustive:
                result = tuned(problem, precision, args.exhaustive, False, "exhaustive")
                best = result.best
                row |= {"exhaustive_ms": best.value if best else None, "exhaustive_tried": len(result.trials),
                        "grid": result.space, "exhaustive_config": f"{best.variant} {best.params}"
                        if best else "none passed"}
                line += (f" | exhaustive {row['exhaustive_ms'] / cudnn:5.2f}x ({len(result.trials)} of "
                         f"{result.space} tried): {row['exhaustive_config']}")
                for arm in arms:
                    if row[f"{arm}_ms"] and row["exhaustive_ms"]:
                        row[f"{arm}_over_exhaustive"] = row[f"{arm}_ms"] / row["exhaustive_ms"]
                        line += f" | {arm} / exhaustive {row[f'{arm}_over_exhaustive']:.3f}"
            rows.append(row)
            print(line, flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
