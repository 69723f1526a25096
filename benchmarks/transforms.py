"""Direct vs FFT vs Winograd vs cuDNN as the filter grows: the users' report asked whether FFT convolution,
10x slower than direct on the fmnist layers, wins for large masks.

Two layers of fixed size with "same" padding (pad = (K-1)/2, so the output stays H x W whatever K):
`small` has the report's fmnist-conv2 channels (C=4, M=16, batch 100, 64 x 64) and `wide` a ResNet-like
block (C=M=64, batch 16, 64 x 64). For each K in 3, 5, 7, 11, 15, 31, in float32 (cuDNN with TF32 off):
- direct: the fastest passing of simflow's direct-sum variants (implicit_gemm tile 64 and 128, regtile);
- fft: the fastest passing FFT tile (16, 32, 64 where N >= K);
- winograd: F(2x2) and F(4x4) (K = 3 only);
- cuDNN: PyTorch conv2d in benchmark mode, and the algorithm it picked, named by its kernels (profiler).
Every simflow run is checked elementwise against the float64 reference on the GPU (every element up to
20 GFLOP, a seeded sample of 4096 above: the float64 reference of the K=31 layers would take longer than
the runs; tests/test_gpu.py checks these variants in full); a wrong one never counts. Times are medians
of event-timed repeats of all of a variant's launches. GFLOP/s counts the direct
sum's 2 B M C K^2 HOUT WOUT for every method (so it is a speed, not what the FFT executes). The last lines
give, per layer, the crossover: the smallest K from which fft beats direct.

    python benchmarks/transforms.py [--ks 3,5,7,11,15,31] [--layers small,wide] [--repeats 10] [--csv FILE]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from native import time_cudnn  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import Problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

LAYERS = {"small": dict(B=100, C=4, M=16, H=64, W=64), "wide": dict(B=16, C=64, M=64, H=64, W=64)}
FULL_CHECK_FLOPS = 20e9
METHODS = {
    "direct": [("implicit_gemm", {"tile": 64}), ("implicit_gemm", {"tile": 128}), ("regtile", {})],
    "fft": [("fft", {"tile": 16}), ("fft", {"tile": 32}), ("fft", {"tile": 64})],
    "winograd": [("winograd", {"m": 2}), ("winograd", {"m": 4})],
}


def cudnn_algorithm(problem: Problem) -> str:
    """What cuDNN ran for this layer in float32 (TF32 off) after benchmark mode chose: a family read from
    its kernels' names (FFT, Winograd, implicit GEMM), then the names themselves."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return "-"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    x = torch.rand(problem.input_shape, device="cuda") * 2 - 1
    w = torch.rand(problem.weight_shape, device="cuda") * 2 - 1
    with torch.no_grad():
        for _ in range(3):
            torch.nn.functional.conv2d(x, w, padding=problem.pad)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            torch.nn.functional.conv2d(x, w, padding=problem.pad)
            torch.cuda.synchronize()
    names = [e.key for e in prof.key_averages() if e.device_time_total > 0]
    return f"{algorithm_family(names)}: " + " + ".join(n[:50] for n in names)


def algorithm_family(names: list[str]) -> str:
    text = " ".join(names).lower()
    for word, family in (("fft", "FFT"), ("winograd", "Winograd"), ("implicit_gemm", "implicit GEMM"),
                         ("implicit_convolve_sgemm", "implicit GEMM"), ("gemm", "GEMM")):
        if word in text:
            return family
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="3,5,7,11,15,31")
    parser.add_argument("--layers", default="small,wide")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--csv", help="write the table here")
    args = parser.parse_args()
    gpu = GpuBackend()
    rows, failed = [], []
    started = time.monotonic()
    for layer in args.layers.split(","):
        for k in map(int, args.ks.split(",")):
            problem = Problem(K=k, pad=(k - 1) // 2, name=f"{layer}-k{k}", **LAYERS[layer])
            row = {"layer": layer, "K": k, "GFLOP": round(problem.flops / 1e9, 2)}
            for method, configs in METHODS.items():
                best = None
                for variant, params in configs:
                    try:
                        kernel = VARIANTS[variant].render(problem, params)
                    except UserError:
                        continue  # refused by name (winograd past K=5, an FFT tile under K, regtile's limits)
                    job = Job.make(variant, params, problem, "gpu", warmup=2, repeats=args.repeats,
                                   sample_check=problem.flops > FULL_CHECK_FLOPS)
                    result = gpu.run(job, None, kernel)
                    if result.status != "passed":
                        failed.append(f"{problem.name} {variant} {params}: {result.status} {result.reason[:100]}")
                        continue
                    if best is None or result.metrics["time_ms"] < best[1]:
                        label = f"{variant}:" + ",".join(f"{a}={b}" for a, b in params.items())
                        best = (label, result.metrics["time_ms"])
                row[f"{method} ms"] = round(best[1], 4) if best else math.nan
                row[f"{method} config"] = best[0] if best else "-"
            row["cuDNN ms"] = round(time_cudnn(problem, args.repeats, "float32") or math.nan, 4)
            row["cuDNN algorithm"] = cudnn_algorithm(problem)
            times = {m: row[f"{m} ms"] for m in (*METHODS, "cuDNN") if not math.isnan(row[f"{m} ms"])}
            row["fastest"] = min(times, key=times.get)
            rows.append(row)
            print(" | ".join(f"{a}={b}" for a, b in row.items()), flush=True)
    print(f"\n{len(rows)} layers in {time.monotonic() - started:.0f} s on {gpu.limits.name}; float32, TF32 off")
    print("layer    K   GFLOP   direct ms      fft ms  winograd ms    cuDNN ms  fft/direct  fastest  cuDNN algorithm")
    for r in rows:
        print(f"{r['layer']:6} {r['K']:3} {r['GFLOP']:7.1f} {r['direct ms']:11.4f} {r['fft ms']:11.4f} "
              f"{r['winograd ms']:12.4f} {r['cuDNN ms']:11.4f} {r['fft ms'] / r['direct ms']:11.2f}  "
              f"{r['fastest']:8} {r['cuDNN algorithm'].split(':')[0]}")
    for layer in args.layers.split(","):
        wins = [r["K"] for r in rows if r["layer"] == layer and r["fft ms"] < r["direct ms"]]
        print(f"crossover {layer}: " + (f"fft beats simflow's direct from K = {min(wins)}" if wins
                                        else "fft never beats direct here"))
    print(f"wrong or failed runs: {len(failed)}" + "".join(f"\n  {f}" for f in failed))
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
