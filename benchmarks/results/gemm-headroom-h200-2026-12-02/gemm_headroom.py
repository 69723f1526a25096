"""How fast could the GEMM of a TF32 wgmma_nhwc layer be? For each suite row whose winner is wgmma_nhwc: the winner's
GEMM launch timed alone (GpuBackend's <kernel>.time_ms) and whole, against cuBLAS (torch.matmul, TF32) multiplying
the same matrices made explicit: w as M x K and the im2col columns as K x N (N = batch x output pixels, K = C x K x
K), both layouts of the columns tried, the faster kept. Inputs outside the timing; CUDA events, median of 20 after 5
warm-ups.

    python gemm_headroom.py SUITE.csv [...]
"""
import csv
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path.cwd()))
sys.path.insert(0, str(Path.cwd() / "benchmarks"))
from floor_reasons import parse_config  # noqa: E402

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = True


def cublas_us(m: int, k: int, n: int) -> float:
    w = torch.randn(m, k, device="cuda")
    best = float("inf")
    for layout in ("kn", "nk"):
        cols = torch.randn(k, n, device="cuda") if layout == "kn" else torch.randn(n, k, device="cuda")
        b = cols if layout == "kn" else cols.t()
        out = torch.empty(m, n, device="cuda")
        for _ in range(5):
            torch.matmul(w, b, out=out)
        times = []
        for _ in range(20):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(w, b, out=out)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        best = min(best, statistics.median(times))
        del cols, b, out
    return best


gpu = GpuBackend()
print("layer | winner | whole us | GEMM alone us | cuBLAS us (M x K x N) | GEMM / cuBLAS | cuBLAS TFLOP/s")
for path in sys.argv[1:]:
    for r in csv.DictReader(open(path)):
        col = next(c for c in r if c.endswith(" best"))
        variant, params = parse_config(r[col])
        if variant != "wgmma_nhwc":
            continue
        problem = get_problem(shape=r["shape"])
        kernel = VARIANTS[variant].render(problem, params)
        res = gpu.run(Job.make(variant, params, problem, "gpu", warmup=3, repeats=20), None, kernel)
        assert res.status == "passed", res.reason
        gemm = res.metrics[f"conv2d_{variant}.time_ms"] * 1e3
        m, k = problem.M, problem.C * problem.K * problem.K
        n = problem.B * problem.Hout * problem.Wout
        blas = cublas_us(m, k, n)
        text = ",".join(f"{a}={b}" for a, b in params.items())
        print(f"{r['layer']} | {text} | {res.metrics['time_ms'] * 1e3:.1f} | {gemm:.1f} | {blas:.1f} ({m} x {k} x {n}) "
              f"| {gemm / blas:.2f} | {2 * m * k * n / blas / 1e6:.0f}", flush=True)
        torch.cuda.empty_cache()
