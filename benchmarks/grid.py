"""A variant's parameter grid on chosen layers against cuDNN, timed in the same process: which tile, pipeline
depth or split wins where. Every combination of the --grid values is rendered (refusals skipped), run and
checked on the GPU; the table gives, per layer and precision, cuDNN's time and the best time for each value
of the last grid parameter, with the configuration that gave it.

    python benchmarks/grid.py wgmma_nhwc --layers resnet50-3x3-512-512-7,resnet50-1x1-2048-512-7 \\
        --precisions tf32,float16 --grid "tile_n=256,128,64;stages=4,6;split=1,2,4" [--csv FILE]
    python benchmarks/grid.py implicit_gemm --layers "alexnet-conv1=32,3,96,227,227,11,0,4" --precisions float32 \\
        --grid "bk=8,16;tile_m=0,96"
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from native import time_cudnn  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS, parse_param_args  # noqa: E402

PRECISION_PARAMS = {"float32": {}, "tf32": {"precision": "tf32"}, "float16": {"io": "float16"},  # tensor-core variants
                    "bfloat16": {"io": "bfloat16", "precision": "bf16"}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant")
    parser.add_argument("--layers", required=True, help="problem names, or shapes B,C,M,H,W,K,pad,stride as "
                        "NAME=B,C,..., separated by spaces")
    parser.add_argument("--precisions", default="tf32,float16", help=f"of {','.join(PRECISION_PARAMS)}")
    parser.add_argument("--grid", required=True, help="NAME=V1,V2,...;NAME=...: the values to combine")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--csv", help="every combination's time")
    args = parser.parse_args()
    variant = VARIANTS[args.variant]
    axes = [(name, values.split(",")) for name, values in (part.split("=", 1) for part in args.grid.split(";"))]
    gpu = GpuBackend()
    names = {p.name for p in variant.params}
    plan = []
    for layer in args.layers.split(" " if " " in args.layers or "=" in args.layers else ","):
        name, _, shape = layer.partition("=")
        problem = get_problem(name, shape=shape or None)
        for precision in args.precisions.split(","):
            for values in itertools.product(*(v for _, v in axes)):
                text = [f"{name}={value}" for (name, _), value in zip(axes, values, strict=True)]
                own = {k: v for k, v in PRECISION_PARAMS[precision].items() if k in names}
                params = {**own, **parse_param_args(text)}
                try:
                    kernel = variant.render(problem, params)
                except UserError:
                    continue  # refused (a hardware limit): not part of the grid
                if kernel.precision == precision:  # a variant of one precision (wgmma_halo: TF32) runs in that one
                    plan.append((problem, precision, params, kernel))
    started = time.monotonic()
    print(f"compiled {gpu.precompile([k for *_, k in plan], os.cpu_count())} sources in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    rows, best = [], {}
    last = axes[-1][0]
    for problem, precision, _, kernel in plan:
        params = {name: kernel.params[name] for name in (*PRECISION_PARAMS[precision], *(n for n, _ in axes))
                  if name in names}
        result = gpu.run(Job.make(args.variant, params, problem, "gpu", warmup=3, repeats=args.repeats), None, kernel)
        ms = result.metrics["time_ms"] if result.status == "passed" else None
        rows.append({"layer": problem.name, "precision": precision, **{n: params[n] for n, _ in axes},
                     "status": result.status, "ms": ms})
        if ms is None:
            print(f"FAILED {problem.name} {params}: {result.status} {result.reason[:200]}", flush=True)
            continue
        cell = best.setdefault((problem.name, precision), {})
        if params[last] not in cell or ms < cell[params[last]][0]:
            cell[params[last]] = (ms, ",".join(str(params[n]) for n, _ in axes[:-1]))
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    columns = list(dict.fromkeys(row[last] for row in rows))
    print(f"{'layer':30} {'precision':9} {'cuDNN ms':>8} " + " ".join(f"{last}={c}".rjust(18) for c in columns)
          + "  best/cuDNN")
    for (name, precision), cell in best.items():
        cudnn = time_cudnn(next(p for p, *_ in plan if p.name == name), args.repeats, precision)
        cells = " ".join((f"{cell[c][0]:.4f} ({cell[c][1]})" if c in cell else "-").rjust(18) for c in columns)
        ratio = f"{min(v[0] for v in cell.values()) / cudnn:.3f}" if cudnn else "-"
        print(f"{name:30} {precision:9} {cudnn or float('nan'):8.4f} {cells}  {ratio}", flush=True)
    return 1 if any(row["ms"] is None for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
