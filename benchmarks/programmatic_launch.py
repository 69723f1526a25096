"""Programmatic dependent launch against plain launches: each suite winner of several launches, run by the GPU
backend both ways in the same process, interleaved, the faster round of each kept.

A variant marks its launches after the first programmatic (simflow.kernels.wgmma): on sm_90 and newer the GPU
backend lets each start before the one before it ends, and its kernels wait for that one themselves
(_async.cu.j2 programmatic). Off (GpuBackend.programmatic = False), every launch waits for the one before it,
as before. Every run is checked against the float64 reference; the table ends with the median and geometric
mean of on / off.

    python benchmarks/programmatic_launch.py results/suite_resnet50_tf32_session55_h200_2026-12-02.csv [...]
        [--rounds 3] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floor_reasons import winners  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", type=Path, help="suite CSVs (benchmarks/suite.py --csv)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, help="one JSON line a configuration")
    args = parser.parse_args()
    gpu = GpuBackend()
    runs = []
    for path in args.suites:
        for layer, shape, precision, variant, params in winners(path):
            problem = get_problem(layer, shape=shape)
            kernel = VARIANTS[variant].render(problem, params)
            if any(launch.programmatic for launch in kernel.launches(problem.B)):
                runs.append((layer, precision, variant, params, problem, kernel))
    started = time.monotonic()
    print(f"compiled {gpu.precompile([run[-1] for run in runs])} sources in {time.monotonic() - started:.0f} s",
          flush=True)
    rows = []
    for layer, precision, variant, params, problem, kernel in runs:
        params = dict(kernel.params)  # the text's values, parsed
        job = Job.make(variant, params, problem, "gpu", warmup=3, repeats=args.repeats)
        times, failed = {True: [], False: []}, []
        for r in range(args.rounds):
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                gpu.programmatic = on
                result = gpu.run(job, None, kernel)
                if result.status != "passed":
                    failed.append(f"{'on' if on else 'off'}: {result.status} {result.reason[:200]}")
                    continue
                times[on].append(result.metrics["time_ms"])
        gpu.programmatic = True
        row = {"layer": layer, "precision": precision, "variant": variant, "params": params,
               "launches": [launch.kernel for launch in kernel.launches(problem.B)],
               "on_ms": times[True], "off_ms": times[False], "failed": failed}
        if times[True] and times[False]:
            row["ratio"] = min(times[True]) / min(times[False])
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    print(f"\n{'layer':30} {'precision':9} {'launches':>8} {'off us':>8} {'on us':>8} {'on/off':>7}")
    for row in rows:
        if "ratio" in row:
            print(f"{row['layer']:30} {row['precision']:9} {len(row['launches']):8} {1e3 * min(row['off_ms']):8.1f} "
                  f"{1e3 * min(row['on_ms']):8.1f} {row['ratio']:7.3f}")
        else:
            print(f"{row['layer']:30} {row['precision']:9} failed: {row['failed']}")
    ratios = [row["ratio"] for row in rows if "ratio" in row]
    if ratios:
        print(f"{len(ratios)} configurations: on/off median {statistics.median(ratios):.3f}, geomean "
              f"{math.exp(statistics.fmean(map(math.log, ratios))):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
    failures = sum(bool(row["failed"]) for row in rows)
    print(f"wrong or failed: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
