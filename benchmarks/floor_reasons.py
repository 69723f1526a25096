"""Why a layer stays short of its floor, on the GPU: each large layer's winning configuration from a suite CSV
(benchmarks/suite.py --csv), profiled with Nsight Compute (`simflow profile`, backend gpu-ncu), and its counters put
in one line: the share of the floor the suite measured (CUDA events), the waves of blocks, the tensor pipe's busy
share, the issue slots used, where the other slots went (ncu's warp states, as `simflow explain` splits them), the
DRAM bytes against the layer's compulsory ones, the L2's sector throughput, the share of the time in launches other
than the GEMM's own (layout copies of x and w, zeroing, halving, Winograd's transforms) and the theoretical
occupancy with its limiter.

    python3 benchmarks/floor_reasons.py CSV [CSV ...] --precision bfloat16 [--suite resnet50] [--min-gflop 5]

The "limit" column names the first of these that holds, in this order (thresholds are judgement, stated here):
- "tensor pipe": the tensor pipe is active 60 % of the kernel's cycles or more: the math is the limit;
- "issue": 60 % or more of the issue slots issued an instruction: the instruction count is the limit;
- "DRAM": DRAM bytes moved at 60 % or more of the copy rate the suite measured (--copy-gbps);
- "L2": the L2 slices served 60 % or more of their peak sector rate (ncu's own percentage): the copies of tiles
  that other blocks copy too are the limit (larger tiles, or one copy shared by a cluster, read less);
- "few blocks": the block slots of the last wave left empty are a fifth or more of all the waves' (waves over
  waves rounded up below 0.8: 0.76 waves leave 24 % of the slots empty, 1.4 waves 30 %); a persistent kernel's
  tiles shared unevenly among its blocks are not seen here;
- else "latency: <state>": the warp state that lost the most issue slots (long scoreboard: global loads;
  barrier: block syncs; gmma: waiting on a wgmma; ...).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simflow import api  # noqa: E402
from simflow.backends import ncu  # noqa: E402
from simflow.kernels.problems import suite  # noqa: E402

PIPE, ISSUE, DRAM_SHARE, L2_SHARE, FULL = 60.0, 60.0, 60.0, 60.0, 0.8


def parse_config(label: str) -> tuple[str, dict[str, str]]:
    """'variant:k=v,k=v [precision]' (a suite CSV's best) -> (variant, params as the CLI's -P gives them)."""
    text = label.split(" [")[0]
    variant, _, rest = text.partition(":")
    return variant, dict(pair.split("=", 1) for pair in rest.split(",") if pair)


def winners(path) -> list[tuple]:
    """(layer, shape, precision, variant, params as text) of each row's best configuration in a suite CSV, every
    precision's; the shape as suite.py --shapes takes it, so that layers of no suite are found too."""
    with open(path, newline="") as f:
        return [(row["layer"], row["shape"], column.split()[0], *parse_config(text)) for row in csv.DictReader(f)
                for column, text in row.items() if column.endswith(" best") and text and text != "-"]


def limit(pipe: float, issued: float, dram_share: float, l2: float, waves: float, lost: dict[str, float]) -> str:
    """The docstring's rules, in order: `pipe`, `issued` (of the slots), `dram_share` and `l2` in % (NaN where a
    profile lacks the counter: that rule does not hold)."""
    if pipe >= PIPE:
        return "tensor pipe"
    if issued >= ISSUE:
        return "issue"
    if dram_share >= DRAM_SHARE:
        return "DRAM"
    if l2 >= L2_SHARE:
        return "L2"
    if waves > 0 and waves / math.ceil(waves) < FULL:
        return f"few blocks ({100 * (1 - waves / math.ceil(waves)):.0f} % of slots empty)"
    worst = max(lost, key=lost.get) if lost else "?"
    return f"latency: {worst}"


def reasons(result, problem, io_bytes: float, copy_gbps: float) -> dict:
    """One profiled run's line (see the module's docstring)."""
    metrics = result.metrics
    found = {what: value for _, what, value, _, _ in ncu.evidence(metrics)}
    times = {k.rpartition("ncu:")[0]: v for k, v in metrics.items() if k.endswith("ncu:gpu__time_duration.sum")}
    seconds = 1e-9 * sum(times.values())  # each kernel's
    gemm = min(times, key=len, default="")  # the helper launches are named after it: <kernel>_x, _w, _zero, _half
    others = sum(v for k, v in times.items() if k != gemm)
    slots = ncu.issue_slots(metrics)
    issued, lost = slots if slots else (math.nan, {})
    total = issued + sum(lost.values())
    top = sorted(lost.items(), key=lambda kv: -kv[1])[:2]
    dram = found.get("DRAM bytes read", math.nan) + found.get("DRAM bytes written", math.nan)
    dram_share = 100 * dram / seconds / (copy_gbps * 1e9) if seconds else math.nan
    waves = found.get("waves of blocks per SM", math.nan)
    pipe = found.get("tensor pipe active", math.nan)
    l2 = found.get("L2 sector throughput", math.nan)
    used = 100 * issued / total if total else math.nan
    return {"ncu us": round(1e6 * seconds, 1), "waves": round(waves, 2), "tensor pipe %": round(pipe, 1),
            "issued % of slots": round(used, 1),
            "slots lost to": ", ".join(f"{s} {100 * v / total:.0f} %" for s, v in top) if total else "",
            "DRAM MB": round(dram / 1e6, 1), "compulsory MB": round(io_bytes / 1e6, 1),
            "DRAM % of copy rate": round(dram_share, 1), "L2 % of peak": round(l2, 1),
            "other launches %": round(100 * 1e-9 * others / seconds, 1) if seconds else math.nan,
            "occupancy %": round(found.get("theoretical occupancy", math.nan), 1),
            "limit": limit(pipe, used, dram_share, l2, waves, lost)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="+", help="suite.py --csv outputs")
    parser.add_argument("--precision", required=True, help="the CSVs' precision column: tf32, float16, bfloat16")
    parser.add_argument("--suite", default="resnet50")
    parser.add_argument("--min-gflop", type=float, default=5.0)
    parser.add_argument("--copy-gbps", type=float, default=4200.0, help="the copy rate the suite measured")
    parser.add_argument("--results", help="results folder for the profiles (default: a temporary one)")
    parser.add_argument("--out", help="write the table as CSV here")
    args = parser.parse_args()
    layers = {problem.name: problem for problem in suite(args.suite)}
    rows = [row for path in args.csv for row in csv.DictReader(open(path))
            if float(row["GFLOP"]) >= args.min_gflop and row.get(f"{args.precision} best", "-") != "-"]
    results = args.results or tempfile.mkdtemp(prefix="floor-reasons-")
    out, started = [], time.monotonic()
    for row in rows:
        problem = layers[row["layer"]]
        variant, params = parse_config(row[f"{args.precision} best"])
        io = params.get("io", "float32")
        io_bytes = problem.min_bytes("float16" if io in ("float16", "bfloat16") else "float32")
        line = {"layer": problem.name, "GFLOP": row["GFLOP"], "config": row[f"{args.precision} best"],
                "% floor": row[f"{args.precision} % floor"], "floor by": row[f"{args.precision} floor by"]}
        result = api.run(variant, problem, backend="gpu-ncu", params=params, results=results)
        if result.status != "passed":
            line["limit"] = f"{result.status}: {result.reason[:80]}"
        else:
            line.update(reasons(result, problem, io_bytes, args.copy_gbps))
        out.append(line)
        print(" | ".join(f"{k}={v}" for k, v in line.items()), flush=True)
    if args.out and out:
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(k for line in out for k in line)))
            writer.writeheader()
            writer.writerows(out)
    print(f"\n{len(out)} layers of {args.suite} at {args.min_gflop:g} GFLOP or more ({args.precision}), "
          f"{time.monotonic() - started:.0f} s")
    print(f"{'layer':32} {'% floor':>7} {'waves':>5} {'tensor%':>7} {'issue%':>6} {'DRAM%':>5} {'L2%':>5} "
          f"{'other%':>6}  limit; slots lost to")
    for line in out:
        print(f"{line['layer']:32} {line['% floor']:>7} {line.get('waves', ''):>5} {line.get('tensor pipe %', ''):>7} "
              f"{line.get('issued % of slots', ''):>6} {line.get('DRAM % of copy rate', ''):>5} "
              f"{line.get('L2 % of peak', ''):>5} {line.get('other launches %', ''):>6}  {line['limit']}; "
              f"{line.get('slots lost to', '')}")
    shares = [float(line["% floor"]) for line in out if line["% floor"]]
    if shares:
        print(f"median % of floor: {statistics.median(shares):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
