"""Native GPU benchmark: every variant on the fmnist layers (B=10000) and the toycnn layer.

For each run: median time of many event-timed repeats, GFLOP/s, effective GB/s (minimum
bytes over time), the percentage of the roofline floor, and the speed against PyTorch's
conv2d (cuDNN, TF32 off) timed in the same process. The two ceilings of the floor are
measured here too: device-to-device copy bandwidth (bytes read + written) and the peak rate of
the unit each kernel computes on, from register-only kernels: fp32 FMA, half2 FMA (fp16
arithmetic), and WMMA mma_sync in fp16 and TF32 (tensor cores). A row's floor uses its own unit.
With streams=S in a run's parameters, the row also has the host-to-host times (copies + kernels
on S streams, and on one stream) from the same run.

    python benchmarks/native.py [--problems fmnist-conv1:10000,...] [--variants ...] [--csv FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from simflow.backends.gpu import CACHE_ROTATION_BYTES, HOLD_US, GpuBackend  # noqa: E402
from simflow.errors import UserError  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402
from simflow.kernels.variants import VARIANTS  # noqa: E402

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


HFMA2_KERNEL = r"""
#include <cuda_fp16.h>
extern "C" __global__ void hfma2_peak(float* out, int iters)
{
  half2 a[8];
  for (int j = 0; j < 8; ++j) a[j] = __float2half2_rn(threadIdx.x * 1e-3f + j);
  const half2 s = __float2half2_rn(0.999f), t = __float2half2_rn(0.001f);
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int r = 0; r < 16; ++r)
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] = __hfma2(a[j], s, t);
  }
  float sum = 0.0f;
  for (int j = 0; j < 8; ++j) sum += __low2float(a[j]) + __high2float(a[j]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"""

# Each warp keeps 4 independent accumulators (the tensor pipes need several mma in flight). One body for
# both precisions: In is the fragment's input type, T how the tile is stored, FK the shape's k.
MMA_KERNEL = r"""
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;
__device__ half stored(float v, half) { return __float2half(v); }
__device__ __nv_bfloat16 stored(float v, __nv_bfloat16) { return __float2bfloat16(v); }
__device__ float stored(float v, float) { return wmma::__float_to_tf32(v); }

template <typename In, typename T, int FK> __device__ void mma_peak(float* out, int iters)
{
  __shared__ __align__(32) T tile[16 * 16];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) tile[i] = stored(1e-3f * (i % 7), T());
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, FK, In, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, FK, In, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, FK, float> c[4];
  wmma::load_matrix_sync(a, tile, FK);
  wmma::load_matrix_sync(b, tile, 16);
  for (int j = 0; j < 4; ++j) wmma::fill_fragment(c[j], 0.0f);
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::mma_sync(c[j], a, b, c[j]);
  __shared__ __align__(32) float res[8][256];
  const int warp = threadIdx.x / 32;
  for (int j = 1; j < 4; ++j)
    for (int e = 0; e < c[0].num_elements; ++e) c[0].x[e] += c[j].x[e];
  wmma::store_matrix_sync(res[warp], c[0], 16, wmma::mem_row_major);
  if (threadIdx.x % 32 == 0) out[blockIdx.x * 8 + warp] = res[warp][0];
}
extern "C" __global__ void mma_peak_fp16(float* out, int iters) { mma_peak<half, half, 16>(out, iters); }
extern "C" __global__ void mma_peak_bf16(float* out, int iters)
{
  mma_peak<__nv_bfloat16, __nv_bfloat16, 16>(out, iters);
}
extern "C" __global__ void mma_peak_tf32(float* out, int iters)
{
  mma_peak<wmma::precision::tf32, float, 8>(out, iters);
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

    blocks, threads, iters = gpu.limits.sm_count * 8, 256, 4096
    out = drv.mem_alloc(blocks * threads * 4)

    def rate(source: str, name: str, flops_per_thread: int) -> float:
        func = SourceModule(source, no_extern_c=True, arch=gpu.limits.arch).get_function(name)
        ms = _median_ms(lambda: func(out, np.int32(iters), block=(threads, 1, 1), grid=(blocks, 1)), repeats=10)
        return flops_per_thread * blocks * threads / (ms * 1e-3) / 1e12

    warps_mma = 4 * 2 * 16 * 16 * 16 / 32  # per thread: 4 mma of 2*16*16*16 FLOPs per warp per iteration
    # The launch floor: an empty kernel of one full wave (every SM full of 256-thread blocks), timed as the runs
    # are (CUDA events, each launch queued behind a hold kernel): no layer's kernel can take less.
    empty = SourceModule('extern "C" __global__ void empty() {}', no_extern_c=True,
                         arch=gpu.limits.arch).get_function("empty")
    hold, wave = gpu._hold(), gpu.limits.sm_count * (gpu.limits.max_threads_per_sm // threads)
    start, end, launches = drv.Event(), drv.Event(), []
    for _ in range(53):
        hold(np.uint64(1000 * HOLD_US), block=(1, 1, 1), grid=(1, 1, 1))
        start.record()
        empty(block=(threads, 1, 1), grid=(wave, 1))
        end.record()
        end.synchronize()
        launches.append(start.time_till(end))
    ceilings = {
        "launch_ms": statistics.median(launches[3:]),
        "copy_GBps": bandwidth / 1e9,
        "float32": rate(FMA_KERNEL, "fma_peak", 2 * 8 * 16 * iters),
        "float16": rate(HFMA2_KERNEL, "hfma2_peak", 2 * 2 * 8 * 16 * iters),
        "tensor_float16": rate(MMA_KERNEL, "mma_peak_fp16", warps_mma * iters),
        "tensor_bfloat16": rate(MMA_KERNEL, "mma_peak_bf16", warps_mma * iters),
        "tensor_tf32": rate(MMA_KERNEL, "mma_peak_tf32", warps_mma / 2 * iters),
    }
    out.free()
    return ceilings


def matmul_rates(repeats: int = 10) -> dict[str, float]:
    """TFLOP/s of an 8192^3 torch.matmul (cuBLAS) in fp32 (TF32 off), TF32 and fp16; {} without torch."""
    try:
        import torch
    except ImportError:
        return {}
    n, rates = 8192, {}
    for unit, dtype, tf32 in (("float32", torch.float32, False), ("tensor_tf32", torch.float32, True),
                              ("tensor_float16", torch.float16, False), ("tensor_bfloat16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        gen = torch.Generator(device="cuda").manual_seed(0)
        a = torch.rand(n, n, device="cuda", generator=gen).to(dtype)
        b = torch.rand(n, n, device="cuda", generator=gen).to(dtype)
        for _ in range(3):
            a @ b
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(repeats):
            start.record()
            a @ b
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        rates[unit] = 2 * n**3 / (statistics.median(times) * 1e-3) / 1e12
        del a, b
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.empty_cache()
    return rates


def unit_of(variant: str, precision: str) -> str:
    """The ceiling a kernel's FLOPs count against: tensor cores for wmma and mma, else the FMA unit of its
    precision."""
    return f"tensor_{precision}" if variant.startswith(("wmma", "mma_", "wgmma")) else precision


def unit_ceilings(gpu: GpuBackend) -> dict[str, float]:
    """Each unit's ceiling, measured now and printed: copy GB/s, and TFLOP/s per unit, the faster of the
    register-only kernel and cuBLAS's 8192^3 matmul."""
    env = gpu.environment()
    ceilings = measure_ceilings(gpu)
    cublas = matmul_rates()
    print("register-only kernels (TFLOP/s): " + ", ".join(f"{k} {v:.1f}" for k, v in ceilings.items()
                                                          if k not in ("copy_GBps", "launch_ms")))
    print("cuBLAS 8192^3 matmul (TFLOP/s): " + (", ".join(f"{k} {v:.1f}" for k, v in cublas.items()) or "no torch"))
    for unit, rate in cublas.items():  # a unit's ceiling: the faster of the two measurements
        ceilings[unit] = max(ceilings[unit], rate)
    print(f"device: {env['gpu']} (cc {env['compute_capability']}, driver CUDA {env['cuda_driver']}); "
          f"measured ceilings: copy {ceilings['copy_GBps']:.0f} GB/s, fp32 FMA {ceilings['float32']:.1f}, "
          f"half2 FMA {ceilings['float16']:.1f}, WMMA fp16 {ceilings['tensor_float16']:.1f}, "
          f"WMMA bf16 {ceilings['tensor_bfloat16']:.1f}, "
          f"WMMA tf32 {ceilings['tensor_tf32']:.1f} TFLOP/s; launch floor (empty one-wave kernel) "
          f"{1e3 * ceilings['launch_ms']:.1f} us", flush=True)
    return ceilings


def floor_by(problem, ceilings: dict, unit: str, io: str = "float32") -> str:
    """Which of floor()'s three terms sets it: compute, copy or launch."""
    terms = {"launch": ceilings.get("launch_ms", 0.0),
             "copy": 1e3 * problem.min_bytes(io) / (ceilings["copy_GBps"] * 1e9),
             "compute": 1e3 * problem.flops / (ceilings[unit] * 1e12)}
    return max(terms, key=terms.get)


def floor(problem, ceilings: dict, unit: str, io: str = "float32") -> float:
    """ms at the unit's measured rate, or at the copy rate over the tensors' bytes (half ones with io=float16 and
    for cuDNN fp16, which takes and gives half tensors), or the launch floor (an empty one-wave kernel), whichever
    is longest."""
    copy, compute = problem.min_bytes(io) / (ceilings["copy_GBps"] * 1e9), problem.flops / (ceilings[unit] * 1e12)
    return max(ceilings.get("launch_ms", 0.0), 1e3 * max(copy, compute))


PIPELINE = ("h2d_ms", "d2h_ms", "pipeline_serial_ms", "pipeline_ms", "pipeline_speedup")
CUDNN_PRECISIONS = {"float32": "fp32, TF32 off", "tf32": "TF32", "float16": "fp16", "bfloat16": "bf16"}


def time_cudnn(problem, repeats: int, precision: str = "float32") -> float | None:
    """PyTorch conv2d (cuDNN) in float32 (TF32 off), TF32, fp16 or bf16; None when torch is not importable.
    The faster of cuDNN's two ways to choose a kernel: benchmark mode (it times its candidates once, on the first
    call, and its pick varies from one process to the next: ResNet-50's TF32 1x1 1024->256 at 14 took 23.3 us in one
    suite run and 30.4 in the next, 512->256 at 28 53.0 and 36.9) and its heuristics (benchmark off). The faster
    one is what a user who tries both gets, so a ratio against it does not depend on which pick a run drew."""
    try:
        import torch
    except ImportError:
        return None
    tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        return min(_time_cudnn_choice(torch, problem, repeats, precision, benchmark) for benchmark in (True, False))
    finally:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = False


def _time_cudnn_choice(torch, problem, repeats: int, precision: str, benchmark: bool) -> float:
    """The median time of conv2d with cuDNN choosing its kernel in benchmark mode or by its heuristics."""
    torch.backends.cudnn.benchmark = benchmark
    dtype = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(precision, torch.float32)
    gen = torch.Generator(device="cuda").manual_seed(0)
    # Timed as simflow's runs are (GpuBackend._execute): input sets rotated so that they cover twice the L2
    # (a small layer's input would otherwise be read from the cache), each repeat queued behind a hold kernel
    # so that the host's enqueue time is not timed.
    elem = 2 if dtype in (torch.float16, torch.bfloat16) else 4
    layer_bytes = elem * sum(math.prod(s) for s in (problem.input_shape, problem.weight_shape, problem.output_shape))
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 64 << 20)
    sets = max(1, min(32, math.ceil(CACHE_ROTATION_BYTES * l2 / layer_bytes)))
    inputs = [((torch.rand(problem.input_shape, device="cuda", generator=gen) * 2 - 1).to(dtype),
               (torch.rand(problem.weight_shape, device="cuda", generator=gen) * 2 - 1).to(dtype)) for _ in range(sets)]
    conv = torch.nn.functional.conv2d
    with torch.no_grad():
        enqueue = []
        for i in range(3):
            t0 = time.perf_counter()
            conv(*inputs[i % sets], padding=problem.pad, stride=problem.stride)
            enqueue.append(time.perf_counter() - t0)
            torch.cuda.synchronize()
        # the last warm-up's enqueue: the first call also picks cuDNN's algorithm (benchmark mode), synchronously
        hold_cycles = int(2e9 * max(HOLD_US * 1e-6, 4 * enqueue[-1]))  # cycles at ~2 GHz: a longer hold is harmless
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for i in range(repeats):
            torch.cuda._sleep(hold_cycles)
            start.record()
            conv(*inputs[i % sets], padding=problem.pad, stride=problem.stride)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    del inputs
    torch.cuda.empty_cache()
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
    ceilings = unit_ceilings(gpu)

    rows = []
    for spec in args.problems.split(","):
        name, _, batch = spec.partition(":")
        problem = get_problem(name, batch=int(batch) if batch else None)
        floor_ms = floor(problem, ceilings, "float32")
        cudnn = {prec: time_cudnn(problem, args.repeats, prec) for prec in args.cudnn.split(",")}
        print(f"\n{problem.describe()}: {problem.flops / 1e9:.1f} GFLOP, {problem.min_bytes() / 1e9:.3f} GB minimum, "
              f"floor {floor_ms:.3f} ms (fp32), cuDNN " + ", ".join(
                  f"{CUDNN_PRECISIONS[k]} {'-' if v is None else f'{v:.3f} ms'}" for k, v in cudnn.items()))
        base = {"problem": problem.name, "B": problem.B, "floor_ms": round(floor_ms, 4)}
        for prec, ms in cudnn.items():
            if ms is not None:
                unit = "float32" if prec == "float32" else f"tensor_{prec}"  # cuDNN's TF32 and fp16 kernels use them
                io = "float16" if prec == "float16" else "float32"
                at = floor(problem, ceilings, unit, io)
                rows.append({**base, "floor_ms": round(at, 4), "unit": unit, "variant": "cudnn (torch)",
                             "params": CUDNN_PRECISIONS[prec], "precision": prec, "status": "passed", "time_ms": ms,
                             "gflops": problem.flops / ms / 1e6, "gbps": problem.min_bytes(io) / ms / 1e6,
                             "pct_floor": 100 * at / ms, "vs_cudnn": 1.0})
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
            result = gpu.run(Job.make(variant, params, problem, "gpu", warmup=3, repeats=args.repeats), None, kernel)
            m = result.metrics
            unit = unit_of(variant, kernel.precision)
            row = {**base, "floor_ms": round(floor(problem, ceilings, unit, kernel.io), 4), "unit": unit,
                   "variant": variant, "params": label,
                   "precision": kernel.precision, "status": result.status, "reason": result.reason,
                   "time_ms": m.get("time_ms"), "gflops": m.get("gflops"), "gbps": m.get("gbps"),
                   "rel_error": m.get("rel_error"), "registers": m.get("registers"),
                   "occupancy": m.get("theoretical_occupancy"),
                   **{k: m.get(k) for k in PIPELINE if k in m}}
            if m.get("time_ms"):
                row["pct_floor"] = 100 * row["floor_ms"] / m["time_ms"]
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
    cols = ["problem", "variant", "params", "precision", "unit", "floor_ms", "time_ms", "gflops", "gbps", "pct_floor",
            "vs_cudnn"]
    print("\ncuDNN, then simflow's fastest and slowest per problem (vs_cudnn > 1: faster than cuDNN);"
          " every row is in the CSV:")
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(best[[c for c in cols if c in best]].to_string(index=False))
    piped = passed[passed["pipeline_ms"].notna()] if "pipeline_ms" in passed else passed.iloc[:0]
    if len(piped):
        print("\nhost to host (x in, kernels, y out; weights resident), split over the run's streams vs one stream:")
        with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
            print(piped[["problem", "variant", "params", "time_ms", *PIPELINE]].to_string(index=False))
    failed = table[~table.status.isin(["passed", "refused"])]
    if len(failed):
        print(f"\n{len(failed)} runs did not pass:\n" + failed[["problem", "variant", "params", "status", "reason"]]
              .to_string(index=False))
    return 1 if len(failed) else 0


if __name__ == "__main__":
    sys.exit(main())
