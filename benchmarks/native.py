"""Native GPU benchmark: every variant on the fmnist layers (B=10000) and the toycnn layer.

For each run: median time of many event-timed repeats, GFLOP/s, effective GB/s (minimum
bytes over time), the percentage of the roofline floor, and the speed against PyTorch's
conv2d (cuDNN, TF32 off) timed in the same process. The two ceilings of the floor are
measured here too: device-to-device copy bandwidth (bytes read + written) and the fp32
FMA rate of a register-only kernel.

    python benchmarks/native.py [--problems fmnist-conv1:10000,...] [--variants ...] [--csv FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from simflow.backends import RunOptions  # noqa: E402
from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.problems import get_problem  # noqa: E402
from simflow.variants import VARIANTS  # noqa: E402

DEFAULT_PROBLEMS = "fmnist-conv1:10000,fmnist-conv2:10000,toycnn"

FMA_KERNEL = r"""
extern "C" __global__ void fma_peak(float* out, int iters)
{
  float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float s = 0.999f, t = 0.001f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      a0 = fmaf(a0, s, t); a1 = fmaf(a1, s, t); a2 = fmaf(a2, s, t); a3 = fmaf(a3, s, t);
      a4 = fmaf(a4, s, t); a5 = fmaf(a5, s, t); a6 = fmaf(a6, s, t); a7 = fmaf(a7, s, t);
    }
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
"""


def _median_ms(fn, repeats: int, warmup: int = 3) -> float:
    import pycuda.driver as drv

    for _ in range(warmup):
        fn()
    start, end = drv.Event(), drv.Event()
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.time_till(end))
    return statistics.median(times)


def measure_ceilings(gpu: GpuBackend) -> dict[str, float]:
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    nbytes = 2 << 30
    src, dst = drv.mem_alloc(nbytes), drv.mem_alloc(nbytes)
    drv.memset_d32(src, 0x3F800000, nbytes // 4)
    copy_ms = _median_ms(lambda: drv.memcpy_dtod(dst, src, nbytes), repeats=20)
    src.free()
    dst.free()
    bandwidth = 2 * nbytes / (copy_ms * 1e-3)

    func = SourceModule(FMA_KERNEL, no_extern_c=True, arch=gpu.limits.arch).get_function("fma_peak")
    blocks, threads, iters = gpu.limits.sm_count * 8, 256, 4096
    out = drv.mem_alloc(blocks * threads * 4)
    fma_ms = _median_ms(lambda: func(out, np.int32(iters), block=(threads, 1, 1), grid=(blocks, 1)), repeats=10)
    out.free()
    flops = 2 * 8 * 16 * iters * blocks * threads
    return {"copy_GBps": bandwidth / 1e9, "fp32_TFLOPs": flops / (fma_ms * 1e-3) / 1e12}


CUDNN_PRECISIONS = {"float32": "fp32, TF32 off", "tf32": "TF32", "float16": "fp16"}


def time_cudnn(problem, repeats: int, precision: str = "float32") -> float | None:
    """PyTorch conv2d (cuDNN) in float32 (TF32 off), TF32, or fp16; None when torch is not importable."""
    try:
        import torch
    except ImportError:
        return None
    tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True
    dtype = torch.float16 if precision == "float16" else torch.float32
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.rand(problem.input_shape, device="cuda", generator=gen) * 2 - 1).to(dtype)
    w = (torch.rand(problem.weight_shape, device="cuda", generator=gen) * 2 - 1).to(dtype)
    conv = torch.nn.functional.conv2d
    with torch.no_grad():
        for _ in range(3):
            conv(x, w, padding=problem.pad)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(repeats):
            start.record()
            conv(x, w, padding=problem.pad)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    del x, w
    torch.cuda.empty_cache()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return statistics.median(times)


def configs(names: list[str], tiles: list[int], unrolls: list[str], runs: str | None):
    """--runs 'variant:k=v,k=v variant ...' exactly; else the tile x unroll grid for the variants that take
    those parameters and each other variant with its defaults."""
    if runs:
        for item in runs.split():
            name, _, spec = item.partition(":")
            yield name, dict(kv.split("=", 1) for kv in spec.split(",") if kv)
        return
    for name in names:
        own = {p.name for p in VARIANTS[name].params}
        if {"tile", "unroll"} <= own:
            for tile in tiles:
                for unroll in unrolls:
                    yield name, {"tile": tile, "unroll": unroll}
        else:
            yield name, {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default=DEFAULT_PROBLEMS, help="PRESET[:BATCH],... (default %(default)s)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--tiles", default="8,16,32")
    ap.add_argument("--unroll", default="none,both")
    ap.add_argument("--runs", help="exact runs instead of the grid: 'regtile:outputs=4,rows=8 wmma:precision=tf32'")
    ap.add_argument("--cudnn", default="float32", help="cuDNN precisions to time: float32,tf32,float16")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--csv", help="write every row here")
    args = ap.parse_args(argv)

    import pandas as pd

    gpu = GpuBackend()
    env = gpu.environment()
    ceilings = measure_ceilings(gpu)
    print(f"device: {env['gpu']} (cc {env['compute_capability']}, driver CUDA {env['cuda_driver']}); "
          f"measured ceilings: copy {ceilings['copy_GBps']:.0f} GB/s, fp32 FMA {ceilings['fp32_TFLOPs']:.1f} TFLOP/s")

    rows = []
    for spec in args.problems.split(","):
        name, _, batch = spec.partition(":")
        problem = get_problem(name, batch=int(batch) if batch else None)
        floor_ms = 1e3 * max(problem.min_bytes() / (ceilings["copy_GBps"] * 1e9),
                             problem.flops / (ceilings["fp32_TFLOPs"] * 1e12))
        cudnn = {prec: time_cudnn(problem, args.repeats, prec) for prec in args.cudnn.split(",")}
        print(f"\n{problem.describe()}: {problem.flops / 1e9:.1f} GFLOP, {problem.min_bytes() / 1e9:.3f} GB minimum, "
              f"floor {floor_ms:.3f} ms (fp32), cuDNN " + ", ".join(
                  f"{CUDNN_PRECISIONS[k]} {'-' if v is None else f'{v:.3f} ms'}" for k, v in cudnn.items()))
        base = {"problem": problem.name, "B": problem.B, "floor_ms": round(floor_ms, 4)}
        for prec, ms in cudnn.items():
            if ms is not None:
                rows.append({**base, "variant": "cudnn (torch)", "params": CUDNN_PRECISIONS[prec],
                             "precision": prec, "status": "passed", "time_ms": ms, "gflops": problem.flops / ms / 1e6,
                             "gbps": problem.min_bytes() / ms / 1e6, "pct_floor": 100 * floor_ms / ms,
                             "vs_cudnn": 1.0})
        for variant, params in configs(args.variants.split(","), [int(t) for t in args.tiles.split(",")],
                                       args.unroll.split(","), args.runs):
            label = " ".join(f"{k}={v}" for k, v in params.items())
            t0 = time.time()
            try:
                kernel = VARIANTS[variant].render(problem, params)
            except UserError as exc:
                rows.append({**base, "variant": variant, "params": label, "status": "refused", "reason": str(exc)})
                print(f"  {variant:16s} {label:22s} refused: {exc}")
                continue
            result = gpu.run(kernel, problem.B, RunOptions(seed=0, warmup=3, repeats=args.repeats))
            m = result.metrics
            row = {**base, "variant": variant, "params": label, "precision": kernel.precision,
                   "status": result.status, "reason": result.reason,
                   "time_ms": m.get("time_ms"), "gflops": m.get("gflops"), "gbps": m.get("gbps"),
                   "rel_error": m.get("rel_error"), "registers": m.get("registers"),
                   "occupancy": m.get("theoretical_occupancy")}
            if m.get("time_ms"):
                row["pct_floor"] = 100 * floor_ms / m["time_ms"]
                same = cudnn.get(kernel.precision)  # cuDNN in the same precision, when timed
                row["vs_cudnn"] = same / m["time_ms"] if same else None
            rows.append(row)
            print(f"  {variant:16s} {label:22s} {result.status:12s} "
                  f"{m.get('time_ms', float('nan')):9.3f} ms  {m.get('gflops', float('nan')):9.1f} GFLOP/s  "
                  f"({time.time() - t0:.1f} s)")

    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    passed = table[table.status == "passed"]
    ours = passed[passed.variant != "cudnn (torch)"].sort_values("time_ms")
    groups = ours.groupby(["problem", "precision"], sort=False)
    best = pd.concat([passed[passed.variant == "cudnn (torch)"], groups.head(1), groups.tail(1)])
    best = best.drop_duplicates().sort_values(["problem", "time_ms"], kind="stable")
    cols = ["problem", "variant", "params", "precision", "time_ms", "gflops", "gbps", "pct_floor", "vs_cudnn"]
    print("\ncuDNN, then simflow's fastest and slowest per problem (vs_cudnn > 1: faster than cuDNN);"
          " every row is in the CSV:")
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(best[[c for c in cols if c in best]].to_string(index=False))
    failed = table[~table.status.isin(["passed", "refused"])]
    if len(failed):
        print(f"\n{len(failed)} runs did not pass:\n" + failed[["problem", "variant", "params", "status", "reason"]]
              .to_string(index=False))
    return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main())
