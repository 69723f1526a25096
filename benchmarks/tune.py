"""Tuner benchmark: how close `simflow tune`'s strategies (Optuna TPE, random sampling) get to the
exhaustive search's best on one layer, and at what fraction of its cost.

The exhaustive search measures every configuration of the space once, into a fresh store. Each
strategy then runs with budgets of N configurations for several seeds against that store, so its
choices are answered with the measurements the exhaustive search made (the same times, no new
noise): its cost is the configurations it chose (N of the space), its result the measured time of
the best it found, over the exhaustive best.

    python benchmarks/tune.py [--problem resnet50-3x3-256-256-14] [--variants global,shared,...]
                              [--budgets 5,10,20] [--seeds 5] [--backend gpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.run.tune import tune  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="resnet50-3x3-256-256-14")
    parser.add_argument("--variants", default="global,shared,shared_weights,implicit_gemm,im2col_gemm")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--budgets", default="5,10,20")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--backend", default="gpu")
    args = parser.parse_args()
    problem = get_problem(args.problem)
    variants = args.variants.split(",")
    results = Path(tempfile.mkdtemp(prefix="simflow-tune-"))
    started = time.monotonic()
    full = tune(problem, variants, backend=args.backend, precision=args.precision, strategy="exhaustive",
                results=results)
    wall = time.monotonic() - started
    best = full.best
    passed = sum(t.status == "passed" for t in full.trials)
    print(f"{problem.describe()} on {args.backend}, {args.precision}: {full.space} configurations, {passed} passed, "
          f"{sum(t.status == 'refused' for t in full.trials)} refused; exhaustive search {wall:.0f} s")
    print(f"exhaustive best: {best.variant} {best.params}: {full.metric} {best.value:.4g}")
    ranked = sorted(t.value for t in full.trials if t.status == "passed")
    print(f"median configuration: {statistics.median(ranked):.4g} ({statistics.median(ranked) / best.value:.2f}x the "
          f"best); worst passing: {ranked[-1] / best.value:.2f}x")
    print("\nstrategy  budget  cost (of the space)  best found / exhaustive best: mean, worst over seeds  "
          "found the best")
    for strategy in ("tpe", "random"):
        for budget in (int(b) for b in args.budgets.split(",")):
            ratios = []
            for seed in range(args.seeds):
                found = tune(problem, variants, backend=args.backend, precision=args.precision, strategy=strategy,
                             budget_runs=budget, seed=seed, results=results)
                assert found.as_dict()["measured"] == 0  # every answer from the exhaustive search's store
                ratios.append(found.best.value / best.value if found.best else float("inf"))
            print(f"{strategy:9} {budget:6}  {budget / full.space:19.0%}  {statistics.fmean(ratios):10.3f}, "
                  f"{max(ratios):.3f}  {sum(r == 1.0 for r in ratios)} of {args.seeds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
