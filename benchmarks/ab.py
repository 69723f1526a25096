"""A/B of a change on the GPU: each suite winner of one variant as it ran (A) against B, the same configuration with
--set and --drop applied, or rendered by another variant (--against: e.g. a user variant holding the template as it
was, SIMFLOW_VARIANTS=DIR). Both run by the GPU backend in one process, in interleaved rounds (A first in even ones),
every run checked against the float64 reference; the fastest round of each is kept, and the table ends with B/A's
median, geometric mean and range. Scripts that time other sets of kernels (a result folder's grid against the
suite's winners) use `interleaved`, the same loop.

    python benchmarks/ab.py SUITE.csv [...] --variant wgmma_nhwc [--set k=v,...] [--drop k,...] [--against VARIANT]
        [--rounds 3] [--repeats 20] [--out FILE.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from floor_reasons import winners  # noqa: E402

from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402


def pairs(paths, variant: str, changes: dict[str, str], drop: list[str], against: str | None):
    """(label, problem, (A's variant, params, kernel), (B's ...)) for each winner of `variant` in the suite CSVs, and
    (label, reason) for each whose A or B is refused (B's parameters may not fit the layer)."""
    found, refused = [], []
    for path in paths:
        for layer, shape, precision, name, params in winners(path):
            if name != variant:
                continue
            problem = get_problem(layer, shape=shape)
            b_params = {k: v for k, v in params.items() if k not in drop} | changes
            label = f"{layer} {precision}"
            try:
                found.append((label, problem, (variant, params, VARIANTS[variant].render(problem, params)),
                              (against or variant, b_params, VARIANTS[against or variant].render(problem, b_params))))
            except UserError as exc:
                refused.append((label, str(exc)))
    return found, refused


def spread(ratios: list[float]) -> str:
    """Ratios' median, geometric mean and range, as the tables' last lines give them."""
    return (f"median {statistics.median(ratios):.3f}, geomean {math.exp(statistics.fmean(map(math.log, ratios))):.3f}, "
            f"range {min(ratios):.3f}-{max(ratios):.3f}")


def interleaved(gpu, cases, rounds: int, repeats: int, out=None, progress: bool = False):
    """Each case's kernels in `rounds` interleaved rounds on one GPU: a case's runs in order in even rounds and
    reversed in odd ones, so that none always runs first; every run checked against the float64 reference (3
    warm-ups, `repeats` timed launches). cases: [(label, problem, [(tag, variant, params, kernel), ...])]; out: a
    file that gets one JSON line a run. Returns the fastest passing time of each run, {(label, index of the run in
    its case): ms}, and a line for each run that did not pass."""
    best, failed, started = {}, [], time.monotonic()
    for r in range(rounds):
        for label, problem, runs in cases:
            order = list(enumerate(runs))
            for i, (tag, name, params, kernel) in order if r % 2 == 0 else order[::-1]:
                result = gpu.run(Job.make(name, params, problem, "gpu", warmup=3, repeats=repeats), None, kernel)
                ms = result.metrics.get("time_ms") if result.status == "passed" else None
                if out:
                    out.write(json.dumps({"layer": label, "tag": tag, "variant": name, "params": params,
                                          "status": result.status, "time_ms": ms}) + "\n")
                if ms is None:
                    failed.append(f"{label} {tag} {params}: {result.status} {result.reason[:200]}")
                    continue
                best[label, i] = min(best.get((label, i), ms), ms)
        if progress:
            print(f"round {r + 1} done at {time.monotonic() - started:.0f} s", flush=True)
    return best, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suites", nargs="+", type=Path, help="suite CSVs (benchmarks/suite.py --csv)")
    parser.add_argument("--variant", required=True, help="the winners compared: those of this variant")
    parser.add_argument("--set", default="", help="B's parameters changed: k=v,k=v")
    parser.add_argument("--drop", default="", help="B's parameters left at their defaults: k,k")
    parser.add_argument("--against", help="B rendered by this variant (the same parameters, changed as asked)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", type=Path, help="one JSON line a run")
    args = parser.parse_args()
    changes = dict(pair.split("=", 1) for pair in args.set.split(",") if pair)
    found, refused = pairs(args.suites, args.variant, changes, [k for k in args.drop.split(",") if k], args.against)
    for label, reason in refused:
        print(f"not compared: {label}: {reason}")
    if not found:
        print(f"no winner of {args.variant} to compare")
        return 1
    from simflow.backends.gpu import GpuBackend

    gpu = GpuBackend()
    started = time.monotonic()
    compiled = gpu.precompile([k for *_, a, b in found for k in (a[2], b[2])], os.cpu_count())
    print(f"{len(found)} pairs, compiled {compiled} sources in {time.monotonic() - started:.0f} s", flush=True)
    cases = [(label, problem, [("A", *a), ("B", *b)]) for label, problem, a, b in found]
    out = args.out.open("w") if args.out else None
    best, failed = interleaved(gpu, cases, args.rounds, args.repeats, out)
    if out:
        out.close()
    print(f"done in {time.monotonic() - started:.0f} s\nlayer | A | B | A us | B us | B/A")
    ratios = []
    for label, _, a, b in found:
        if (label, 0) in best and (label, 1) in best:
            ratios.append(best[label, 1] / best[label, 0])
            text = [f"{name}:" + ",".join(f"{k}={v}" for k, v in params.items()) for name, params, _ in (a, b)]
            print(f"{label} | {text[0]} | {text[1]} | {best[label, 0] * 1e3:.1f} | {best[label, 1] * 1e3:.1f} | "
                  f"{ratios[-1]:.3f}")
    if ratios:
        print(f"B/A over {len(ratios)}: {spread(ratios)}")
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
