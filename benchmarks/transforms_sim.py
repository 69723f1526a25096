"""Direct vs FFT vs Winograd under GPGPU-Sim as the filter grows: what each method executes and moves.

A small layer with the report's fmnist-conv2 channels (C=4, M=16), one 24 x 24 image, "same" padding,
for K in 3, 5, 7, 11: `global` (the course's direct kernel), `implicit_gemm` tile=64 (simflow's fastest
fp32 direct sum on the GPU), `fft` (the smallest tile that holds the filter) and `winograd` (K = 3).
Every run is checked elementwise; the table gives cycles, warp instructions, IPC, L1D and L2 misses and
DRAM traffic summed over each variant's kernels, then `simflow explain` of implicit_gemm vs fft at
--explain-k (where the cycles go). Runs are stored in --results, so diff, compare and report read them.

    GPGPUSIM_ROOT=... python benchmarks/transforms_sim.py [--ks 3,5,7,11] [--results DIR] [--explain-k 7]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simflow.api as sf  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.kernels.problems import Problem  # noqa: E402

METRICS = [("gpu_sim_cycle", "cycles"), ("gpu_sim_insn", "thread insn"), ("gpu_ipc", "IPC"),
           ("L1D_total_cache_misses", "L1D miss"), ("L2_total_cache_misses", "L2 miss"),
           ("total dram reads", "DRAM rd"), ("total dram writes", "DRAM wr"), ("gpgpu_n_shmem_insn", "shmem insn")]


def configs(k: int) -> list[tuple[str, dict]]:
    out = [("global", {}), ("implicit_gemm", {"tile": 64}), ("fft", {"tile": 16 if k <= 16 else 32})]
    return out + ([("winograd", {})] if k == 3 else [])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="3,5,7,11")
    parser.add_argument("--results", default="simflow-results-transforms")
    parser.add_argument("--explain-k", type=int, default=7)
    args = parser.parse_args()
    rows, ids, failed = [], {}, []
    started = time.monotonic()
    for k in map(int, args.ks.split(",")):
        problem = Problem(B=1, C=4, M=16, H=24, W=24, K=k, pad=(k - 1) // 2, name=f"small-k{k}")
        for variant, params in configs(k):
            try:
                result = sf.sim(variant, problem, params=params, results=args.results)
            except UserError as exc:
                failed.append(f"K={k} {variant}: {exc}")
                continue
            if result.status != "passed":
                failed.append(f"K={k} {variant}: {result.status} {result.reason[:100]}")
                continue
            ids[(k, variant)] = result.run_id
            rows.append({"K": k, "variant": variant, "kernels": len(result.kernels),
                         **{label: result.metrics.get(name, float("nan")) for name, label in METRICS}})
            print(rows[-1], flush=True)
    print(f"\n{len(rows)} runs in {time.monotonic() - started:.0f} s; C=4 M=16 24x24, batch 1, same padding, "
          "SM7_QV100; totals over each variant's kernels")
    labels = [label for _, label in METRICS]
    print(f"{'K':>3} {'variant':14} {'kernels':>7} " + " ".join(f"{label:>12}" for label in labels))
    for r in rows:
        print(f"{r['K']:3} {r['variant']:14} {r['kernels']:7} " + " ".join(
            f"{r[label]:12.3f}" if label == "IPC" else f"{r[label]:12.0f}" for label in labels))
    a, b = ids.get((args.explain_k, "implicit_gemm")), ids.get((args.explain_k, "fft"))
    if a and b:
        print(f"\nsimflow explain {a} {b}  (implicit_gemm -> fft, K={args.explain_k})", flush=True)
        subprocess.run([sys.executable, "-m", "simflow", "explain", a, b, "--results", args.results], check=False)
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
