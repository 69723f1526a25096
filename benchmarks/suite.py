"""Suite benchmark: every layer of a suite (simflow problems --suite NAME), simflow's variants that take
any stride against cuDNN in the same precision, timed in the same process.

For each layer and precision (fp32 with TF32 off, TF32, fp16, bf16): each configuration below is rendered,
run and checked elementwise against the float64 reference on the GPU (a wrong result never counts),
the fastest passing one is the layer's simflow time, and PyTorch's conv2d (cuDNN, benchmark mode)
is timed on the same shape, stride and padding. The ratio is simflow / cuDNN (above 1: slower);
the last lines give each precision's geometric mean and worst layer. Each layer's floor (ms) is the
longest of its FLOPs at its unit's ceiling (fp32 FMA, TF32 or fp16 tensor cores), its tensors' bytes
(half ones in fp16) at the copy rate, and the launch floor (an empty kernel of one full wave), all measured
at the start of the run; the table gives the share of it simflow's and cuDNN's times reach, and which of
the three sets it ("floor by"). The configurations are fixed (each won a layer); --tuned adds
what 'simflow tune' found best for each layer.

    python benchmarks/suite.py [--suite resnet50] [--layers N | --only NAME,...] [--repeats 20] [--csv FILE]
    python benchmarks/suite.py --shapes "NAME=B,C,M,H,W,K,pad,stride;..."     (layers of no suite)
    python benchmarks/suite.py --suite resnet50 --combine PART.csv ... --csv ALL.csv   (parts of one suite's run)

The CSVs are written again after each layer, so a run stopped part way (a time limit) keeps the layers it measured;
--combine joins the per-layer tables of runs that each measured a part of a suite (--only), in the suite's order,
into one table and prints its summary, as a whole run would (no GPU needed).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from native import floor, floor_by, time_cudnn, unit_ceilings  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem, suite  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402
from simflow.run.tune import best_config  # noqa: E402
from simflow.run.tune_starts import ADMITS, STARTS  # noqa: E402

UNITS = {"float32": "float32", "tf32": "tensor_tf32", "float16": "tensor_float16",  # a precision's floor's ceiling
         "bfloat16": "tensor_bfloat16"}

CONFIGS = STARTS  # precision -> (variant, params): what every tune tries first; cuDNN runs in the same precision


def _fixed(precision: str) -> list:
    """A precision's fixed configurations and those of the finer precisions it admits (a float32 kernel answers a
    TF32 or fp16 question too, as 'simflow tune' counts it), each once."""
    return [config for admitted in ADMITS[precision] for config in CONFIGS[admitted]]


def _configs(tuned: str | None, problem, precision: str, configs: list) -> list:
    """The fixed configurations, after what 'simflow tune' found best for this layer if asked and tuned."""
    if tuned:
        try:
            return [best_config(Path(tuned), problem, "gpu", "", precision), *configs]
        except UserError:
            pass  # not tuned in this precision: the fixed configurations only
    return configs


def _render(variant: str, problem, params: dict):
    try:
        return VARIANTS[variant].render(problem, params)
    except UserError:
        return None  # refused: the timed loop records why


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="resnet50")
    parser.add_argument("--layers", type=int, help="only the first N layers")
    parser.add_argument("--only", help="only these layers of the suite (names, comma-separated)")
    parser.add_argument("--shapes", help="instead of a suite: NAME=B,C,M,H,W,K,pad,stride layers, separated by ';'")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--csv", help="write the per-layer table here")
    parser.add_argument("--precisions", default=",".join(CONFIGS), help="which of float32,tf32,float16,bfloat16")
    parser.add_argument("--every-csv", help="write every passing configuration's time here (layer, precision, "
                                              "config, ms): which variant wins where")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(),
                        help="nvcc processes compiling every configuration before the timed runs")
    parser.add_argument("--tuned", metavar="RESULTS", help="also run what 'simflow tune' found best for each layer "
                                                            "(RESULTS/tuned.json), per precision")
    parser.add_argument("--combine", nargs="+", metavar="CSV", help="join these per-layer tables (parts of one run of "
                                                                    "--suite) into --csv and print the summary")
    args = parser.parse_args()
    if args.combine:
        if args.every_csv:
            parser.error("--combine joins the per-layer tables only: leave out --every-csv (each part has its own)")
        return _combine(args, parser)
    if args.shapes:
        args.suite = "shapes"
        layers = [get_problem(name.strip(), shape=shape) for name, _, shape in
                  (part.partition("=") for part in args.shapes.split(";") if part.strip())]
    else:
        layers = suite(args.suite)
    layers = layers[: args.layers]
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {problem.name for problem in layers})
        if unknown:
            parser.error(f"not layers of {args.suite}: {', '.join(unknown)}; its layers: "
                         f"{', '.join(problem.name for problem in layers)}")
        layers = [problem for problem in layers if problem.name in names]
    gpu = GpuBackend()
    ceilings = unit_ceilings(gpu)
    started = time.monotonic()
    precisions = args.precisions.split(",")
    plans = {problem.name: {precision: _configs(args.tuned, problem, precision, _fixed(precision))
                            for precision in precisions} for problem in layers}
    kernels = [kernel for problem in layers for plan in plans[problem.name].values()
               for kernel in (_render(variant, problem, params) for variant, params in plan) if kernel]
    print(f"compiled {gpu.precompile(kernels, args.jobs)} sources in {time.monotonic() - started:.0f} s "
          f"({args.jobs} nvcc processes)", flush=True)
    rows, every = [], []  # every: each passing configuration's time (--every-csv)
    for problem in layers:
        row = {"layer": problem.name, "shape": problem.shape_text, "GFLOP": round(problem.flops / 1e9, 3)}
        timed = {}  # variant:params -> run: a configuration two precisions share is timed once a layer
        for precision, configs in plans[problem.name].items():
            best = None
            for variant, params in configs:
                try:
                    kernel = VARIANTS[variant].render(problem, params)
                except UserError as exc:
                    row.setdefault("refused", []).append(f"{variant}: {str(exc)[:60]}")
                    continue
                key = f"{variant}:" + ",".join(f"{k}={v}" for k, v in params.items())
                if key not in timed:
                    job = Job.make(variant, params, problem, "gpu", warmup=3, repeats=args.repeats)
                    timed[key] = gpu.run(job, None, kernel)
                    if timed[key].status != "passed":
                        row.setdefault("failed", []).append(f"{variant} {params}: {timed[key].status} "
                                                            f"{timed[key].reason[:80]}")
                result = timed[key]
                if result.status != "passed":
                    continue
                label = key + (f" [{kernel.precision}]" if kernel.precision != precision else "")  # a finer one
                every.append({"layer": problem.name, "precision": precision, "config": label,
                              "ms": round(result.metrics["time_ms"], 4)})
                if best is None or result.metrics["time_ms"] < best[1]:
                    best = (label, result.metrics["time_ms"])
            cudnn = time_cudnn(problem, args.repeats, precision)
            row[f"{precision} best"] = best[0] if best else "-"
            row[f"{precision} ms"] = round(best[1], 4) if best else math.nan
            row[f"{precision} cuDNN ms"] = round(cudnn, 4) if cudnn else math.nan
            row[f"{precision} ratio"] = round(best[1] / cudnn, 3) if best and cudnn else math.nan
            io = "float16" if precision in ("float16", "bfloat16") else "float32"  # 2-byte tensors, as cuDNN's
            at = floor(problem, ceilings, UNITS[precision], io)
            row[f"{precision} floor ms"] = round(at, 4)
            row[f"{precision} floor by"] = floor_by(problem, ceilings, UNITS[precision], io)
            row[f"{precision} % floor"] = round(100 * at / best[1], 1) if best else math.nan
            row[f"{precision} cuDNN % floor"] = round(100 * at / cudnn, 1) if cudnn else math.nan
        rows.append(row)
        print(" | ".join(f"{k}={v}" for k, v in row.items() if k not in ("refused",)), flush=True)
        _write_csvs(args, rows, every)
    print(f"\n{args.suite}: {len(rows)} layers in {time.monotonic() - started:.0f} s on {gpu.limits.name}")
    _summary(rows, precisions)
    failed = [f for r in rows for f in r.get("failed", [])]
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


def _summary(rows: list[dict], precisions: list[str]) -> None:
    """Each precision's geometric mean of simflow / cuDNN, worst layer, best rate and median shares of the floor."""
    print("precision  layers  geomean simflow/cuDNN  worst (layer)          best simflow TFLOP/s  "
          "median % of floor: simflow, cuDNN")
    for precision in precisions:
        ratios = [(r[f"{precision} ratio"], r["layer"], r["GFLOP"] / r[f"{precision} ms"])
                  for r in rows if not math.isnan(r[f"{precision} ratio"])]
        if not ratios:
            print(f"{precision:9}  0")
            continue
        geomean = math.exp(statistics.fmean(math.log(r) for r, _, _ in ratios))
        worst = max(ratios)
        shares = [[r[f"{precision}{who} % floor"] for r in rows if not math.isnan(r[f"{precision}{who} % floor"])]
                  for who in ("", " cuDNN")]
        shares = [statistics.median(share) if share else math.nan for share in shares]
        print(f"{precision:9}  {len(ratios):6}  {geomean:21.3f}  {worst[0]:.2f} ({worst[1]})  "
              f"{max(t for _, _, t in ratios):.1f}  {shares[0]:.1f} %, {shares[1]:.1f} %")


def _combine(args, parser) -> int:
    """--combine: the parts' rows in the suite's order (each layer in one part only) to --csv, and the summary.
    Wrong or failed runs are not in the tables: each part's log lists its own."""
    order = [problem.name for problem in suite(args.suite)]
    rows, seen = [], {}
    for path in args.combine:
        with open(path, newline="") as handle:
            reader = csv.DictReader(handle)
            if rows and reader.fieldnames != list(rows[0]):
                parser.error(f"{path} has other columns than {args.combine[0]}: combine the parts of one run (the "
                             "same --precisions)")
            for row in reader:
                if row["layer"] in seen:
                    parser.error(f"{row['layer']} is in both {seen[row['layer']]} and {path}: give each layer once")
                if row["layer"] not in order:
                    parser.error(f"{row['layer']} ({path}) is not a layer of {args.suite}")
                seen[row["layer"]] = path
                rows.append({k: v if k in ("layer", "shape") or k.endswith((" best", " floor by")) else float(v)
                             for k, v in row.items()})
    if not rows:
        parser.error(f"no layers in {', '.join(args.combine)}")
    rows.sort(key=lambda row: order.index(row["layer"]))
    precisions = [k.removesuffix(" ratio") for k in rows[0] if k.endswith(" ratio")]
    if args.csv:
        _write_csvs(args, rows, [])
    print(f"{args.suite}: {len(rows)} of its {len(order)} layers, from {len(args.combine)} tables")
    _summary(rows, precisions)
    return 0


def _write_csvs(args, rows: list[dict], every: list[dict]) -> None:
    """The per-layer table (--csv) and every configuration's time (--every-csv) so far, each replaced whole (a
    temporary file renamed over it: a run stopped while writing leaves the last complete one)."""
    for path, fields, records in ((args.csv, [k for k in rows[0] if k not in ("refused", "failed")], rows),
                                  (args.every_csv, ["layer", "precision", "config", "ms"], every)):
        if not path:
            continue
        partial = f"{path}.part"
        with open(partial, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(records)
        os.replace(partial, path)


if __name__ == "__main__":
    sys.exit(main())
