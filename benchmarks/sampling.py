"""Validation of sampled simulation (simflow.sampling) against full simulation, on layers small enough to
simulate whole.

For each case: one image is simulated to learn the wave (simulated SMs x CTAs per SM, over the CTAs of
one image), then batches of about 1, 2 and 3 waves, whose fit gives estimates at every full batch of the
case (2 to 64 waves), and each full batch is simulated too. The table gives, per full batch, the relative
error of cycles, instructions, L1D and L2 misses and IPC, whether the stated bound covers the cycle error,
and the speed-up (the full run's wall time over the three samples'). Runs are stored in --results.

    GPGPUSIM_ROOT=... python benchmarks/sampling.py [--config SM7_QV100_small] [--results DIR] [--cases N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simflow.api as sf  # noqa: E402
from simflow.problems import Problem  # noqa: E402
from simflow.sampling import extrapolate  # noqa: E402

# variant, params, layer (batch set per run), full batches in waves
CASES = [
    ("global", {"tile": 16}, dict(C=1, M=4, H=18, W=18, K=3), (8, 32, 64)),
    ("implicit_gemm", {"tile": 64}, dict(C=8, M=16, H=18, W=18, K=3), (2, 8, 32)),  # 2: simulated whole
    ("shared", {"tile": 16}, dict(C=4, M=16, H=40, W=40, K=7), (4, 16)),
    ("regtile", {}, dict(C=4, M=16, H=40, W=40, K=7), (4, 16, 64)),
]
REPORTED = [("gpu_sim_cycle", "cycles"), ("gpu_sim_insn", "insn"), ("L1D_total_cache_misses", "L1D miss"),
            ("L2_total_cache_misses", "L2 miss"), ("gpu_ipc", "IPC")]


def simulate(variant, params, layer, batch, config, results):
    started = time.monotonic()
    result = sf.sim(variant, Problem(B=batch, name="sampling", **layer), params=params, config=config,
                    results=results)
    if result.status != "passed":
        raise SystemExit(f"{variant} B={batch}: {result.status} {result.reason}")
    return result.metrics, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="SM7_QV100_small")
    parser.add_argument("--results", default="simflow-results-sampling")
    parser.add_argument("--cases", type=int, help="only the first N cases")
    args = parser.parse_args()
    rows = []
    for variant, params, layer, full_waves in CASES[: args.cases]:
        one, _ = simulate(variant, params, layer, 1, args.config, args.results)
        wave_images = one["simulated_sms"] * one["cta_per_core"] / one["gpu_tot_issued_cta"]
        sampled = sorted({max(k, round(k * wave_images)) for k in (1, 2, 3)})
        points, sample_wall = [], 0.0
        for b in sampled:
            metrics, wall = simulate(variant, params, layer, b, args.config, args.results)
            points.append((b, metrics))
            sample_wall += wall
        for waves in full_waves:
            batch = round(waves * wave_images)
            if batch <= sampled[-1]:
                print(f"{variant} {waves} waves (B={batch}): no larger than the samples, simulated whole", flush=True)
                continue
            truth, wall = simulate(variant, params, layer, batch, args.config, args.results)
            estimate = extrapolate(points, batch, wave_images)
            row = {"variant": variant, "batch": batch, "waves": round(batch / wave_images, 1),
                   "samples": ",".join(map(str, sampled)), "speedup": wall / sample_wall}
            for name, label in REPORTED:
                row[label] = 100 * (estimate[name].value / truth[name] - 1) if truth.get(name) else float("nan")
            row["bound %"] = 100 * estimate["gpu_sim_cycle"].relative_bound
            row["covered"] = abs(row["cycles"]) <= row["bound %"]
            rows.append(row)
            print(row, flush=True)
    print(f"\nsampled (about 1, 2, 3 waves) against full simulation, {args.config}; errors in %")
    print(f"{'variant':14} {'batch':>6} {'waves':>6} {'samples':>10} " + " ".join(f"{lab:>9}" for _, lab in REPORTED)
          + f" {'bound %':>8} {'covered':>8} {'speed-up':>9}")
    for r in rows:
        print(f"{r['variant']:14} {r['batch']:6} {r['waves']:6} {r['samples']:>10} "
              + " ".join(f"{r[lab]:9.2f}" for _, lab in REPORTED)
              + f" {r['bound %']:8.2f} {str(r['covered']):>8} {r['speedup']:9.1f}")
    covered = sum(r["covered"] for r in rows)
    print(f"bound covers the cycle error in {covered} of {len(rows)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
