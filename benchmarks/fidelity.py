"""How close the simulator is to the GPU on layers of real size (simflow.analysis.fidelity), per simulator config.

Both sides are sweeps of the same jobs:
  simulator (this machine, sampled):  simflow sweep benchmarks/fidelity_sim.toml --results SIM
  GPU (the lent H200, one call):      bash benchmarks/fidelity_gpu.sh   (results in .scratch/fidelity-gpu)
then
  python benchmarks/fidelity.py SIM .scratch/fidelity-gpu -o benchmarks/results/fidelity-....md

prints (and writes as markdown) per config: the median per-layer Spearman of the variants' time ranks, the share
of pairs ordered alike, the median absolute time error (simulated cycles over the simulated clock against the
GPU's CUDA-event time), each counter's median ratio simulated / measured and its Spearman; per layer the pairs
the two order differently; per job the figures themselves.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simflow import api  # noqa: E402
from simflow.analysis.fidelity import fidelity  # noqa: E402
from simflow.tables import render  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results folders: the simulator's and the GPU's")
    parser.add_argument("-o", "--output", help="also write the tables here (markdown)")
    args = parser.parse_args()
    runs = [run for folder in args.results for run in api.find_runs(results=folder)]
    found = fidelity(runs)
    sims = [r for r in runs if r.backend == "gpgpusim" and r.status == "passed"]
    gpus = sorted({r.environment.get("gpu", "") for r in runs if r.backend == "gpu"} - {""})
    head = [f"# Simulator vs GPU on layers of real size, {datetime.now(UTC):%Y-%m-%d}", "",
            f"Runs: {len(sims)} passed simulator runs ({sum(bool(r.estimate) for r in sims)} sampled estimates) "
            f"from {', '.join(args.results)}; GPU: {', '.join(gpus) or 'unknown'}.",
            "Time ranks: simulated cycles against the GPU's CUDA-event time (backend gpu); time error: cycles over "
            "the config's core clock against that time; counters: simulator stats against Nsight Compute's "
            "(backend gpu-ncu), normalised as `simflow correlate` says.", ""]
    parts = [("Per config", found.summary), ("Per layer", found.layers), ("Per counter", found.counters),
             ("Per job", found.points)]
    text = "\n".join(head) + "\n".join(f"\n## {title}\n\n{render(frame, 'markdown')}" for title, frame in parts)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(render(found.layers.drop(columns=["ordered_differently"]), "table"))
    print()
    print(render(found.counters, "table"))
    print()
    print(render(found.summary, "table"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
