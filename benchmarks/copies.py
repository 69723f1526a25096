"""Candidate channel-last copies of x (NCHW -> [B][pixels][C], what the nhwc GEMMs read), each checked against
numpy and timed against a device-to-device copy of the same bytes in the same run: which load and store widths
and block shapes move the copy nearer the memory's speed, on ordinary and on strided 1x1 layers.

    python benchmarks/copies.py [--layers vgg-conv4_2-fp16,r50-512-28-s2-fp16]

Candidates, by column name:
  PxCvS   TP pixels x TC channels a block, a pixel a lane a load, S channels a store (32x32v1: the kernel simflow
          had before session 30)
  LvxC    v pixels a lane a load (one vector), C channels a block, 16 bytes a store (L2x64 on half x: simflow's now)
  Sv_r    strided 1x1 only: whole input rows streamed in v-element vectors, r output rows a block
Each time is the median of 30 launches, each behind a 300 us hold kernel, over 8 rotated copies of x (cold L2);
the memcpy column copies (bytes read + bytes written) / 2 bytes, counting x / stride^2 for a strided layer.
"""

from __future__ import annotations

import argparse
import itertools
import statistics

import numpy as np

LAYERS = {  # name: B, C, H, W, subsample stride, x type, copy type
    "vgg-conv1_2-tf32": (16, 64, 224, 224, 1, "float", "float"),
    "vgg-conv3_2-tf32": (16, 256, 56, 56, 1, "float", "float"),
    "vgg-conv4_2-tf32": (16, 512, 28, 28, 1, "float", "float"),
    "vgg-conv5_2-tf32": (16, 512, 14, 14, 1, "float", "float"),
    "vgg-conv4_2-fp16": (16, 512, 28, 28, 1, "half", "half"),
    "r50-512-28-s2-fp16": (32, 512, 28, 28, 2, "half", "half"),
    "r50-512-28-s2-tf32": (32, 512, 28, 28, 2, "float", "float"),
    "r50-1024-14-s2-fp16": (32, 1024, 14, 14, 2, "half", "half"),
    "r50-256-56-s2-fp16": (32, 256, 56, 56, 2, "half", "half"),
}
DTYPES = {"float": np.float32, "half": np.float16}

SOURCE = r"""
#include <cuda_fp16.h>
template <typename T> __device__ __forceinline__ float tof(T v) { return static_cast<float>(v); }
template <typename T> __device__ __forceinline__ T fromf(float v);
template <> __device__ __forceinline__ float fromf<float>(float v) { return v; }
template <> __device__ __forceinline__ half fromf<half>(float v) { return __float2half(v); }
template <typename TI, int VL> struct __align__(VL * sizeof(TI)) xvec { TI e[VL]; };
template <typename TO, int N> struct __align__(N * sizeof(TO)) ovec { TO e[N]; };

template <typename TO, int TC, int TP, int VS>  // t[TC][TP + 1] -> xh: VS channels a thread a store
__device__ void store_rows(float (*t)[TP + 1], TO* xh, int b, int np, int p0, int c0, int CP)
{
  constexpr int TPP = TC / VS, PPP = 256 / TPP;
  const int cc = threadIdx.x % TPP * VS;
  for (int pp = threadIdx.x / TPP; pp < TP; pp += PPP) {
    const int pix = p0 + pp;
    if (pix >= np) break;
    ovec<TO, VS> o;
#pragma unroll
    for (int i = 0; i < VS; ++i) o.e[i] = fromf<TO>(t[cc + i][pp]);
    *reinterpret_cast<ovec<TO, VS>*>(xh + ((size_t)b * np + pix) * CP + c0 + cc) = o;
  }
}

// VL input elements a lane a load (PV output pixels), TC channels a block; S > 1: a strided 1x1 layer's pixels
template <typename TI, typename TO, int VL, int S, int TC, int VS>
__device__ void lanes(const TI* __restrict__ x, TO* __restrict__ xh, int C, int H, int W, int XH, int XW, int CP)
{
  constexpr int PV = S == 1 ? VL : (VL >= S ? VL / S : 1), TP = 32 * PV;
  __shared__ float t[TC][TP + 1];
  const int c0 = blockIdx.y * TC, b = blockIdx.z, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int np = XH * XW, op = (blockIdx.x * 32 + lane) * PV;
  const int src = S == 1 ? op : op / XW * S * W + op % XW * S;
#pragma unroll
  for (int k = 0; k < TC / 8; ++k) {
    const int c = c0 + warp + 8 * k;
    xvec<TI, VL> v;
    if (op < np && c < C) v = *reinterpret_cast<const xvec<TI, VL>*>(x + ((size_t)b * C + c) * (H * W) + src);
    else for (int e = 0; e < VL; ++e) v.e[e] = TI(0.0f);
#pragma unroll
    for (int j = 0; j < PV; ++j) t[warp + 8 * k][lane * PV + j] = tof(v.e[S == 1 ? j : j * S]);
  }
  __syncthreads();
  store_rows<TO, TC, TP, VS>(t, xh, b, np, blockIdx.x * TP, c0, CP);
}

// strided 1x1 only: input rows [oy0 S, (oy0 + R) S) streamed whole in VL-element vectors
template <typename TI, typename TO, int VL, int S, int TC, int R, int H, int W>
__device__ void rows(const TI* __restrict__ x, TO* __restrict__ xh, int C, int CP)
{
  constexpr int XH = (H - 1) / S + 1, XW = (W - 1) / S + 1, TP = R * XW;
  constexpr int NV = (R * S * W + VL - 1) / VL, ITER = (NV + 31) / 32, VS = 16 / sizeof(TO);
  __shared__ float t[TC][TP + 1];
  const int oy0 = blockIdx.x * R, c0 = blockIdx.y * TC, b = blockIdx.z;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, e0 = oy0 * S * W;
  xvec<TI, VL> v[TC / 8][ITER];
#pragma unroll
  for (int k = 0; k < TC / 8; ++k)
#pragma unroll
    for (int i = 0; i < ITER; ++i) {
      const int e = e0 + (lane + 32 * i) * VL;
      if (lane + 32 * i < NV && e < H * W && c0 + warp + 8 * k < C)
        v[k][i] = *reinterpret_cast<const xvec<TI, VL>*>(x + ((size_t)b * C + c0 + warp + 8 * k) * (H * W) + e);
    }
#pragma unroll
  for (int k = 0; k < TC / 8; ++k)
#pragma unroll
    for (int i = 0; i < ITER; ++i)
#pragma unroll
      for (int j = 0; j < VL; ++j) {
        const int rel = (lane + 32 * i) * VL + j, r = rel / W, col = rel % W;
        if (lane + 32 * i < NV && r < R * S && r % S == 0 && col % S == 0 && oy0 + r / S < XH)
          t[warp + 8 * k][r / S * XW + col / S] = c0 + warp + 8 * k < C ? tof(v[k][i].e[j]) : 0.0f;
      }
  __syncthreads();
  store_rows<TO, TC, TP, VS>(t, xh, b, XH * XW, oy0 * XW, c0, CP);
}

extern "C" __global__ void hold(unsigned long long ns)
{
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


def candidates(name: str, layer: tuple) -> list[dict]:
    """Every candidate a layer admits: its kernel's name, grid and C++ instantiation."""
    B, C, H, W, s, ti, to = layer
    size, osize = np.dtype(DTYPES[ti]).itemsize, np.dtype(DTYPES[to]).itemsize
    xh, xw = (H - 1) // s + 1, (W - 1) // s + 1
    out = []
    for vl, tc, vs in [(1, 32, 1), *((b // size, tc, 16 // osize) for b in (4, 8, 16) for tc in (32, 64))]:
        pv = vl if s == 1 else max(1, vl // s)
        aligned = (H * W) % vl == 0 if s == 1 else vl == 1 or (vl % s == 0 and W % vl == 0)
        if not aligned or C % tc or tc * (32 * pv + 1) * 4 > 48 * 1024:
            continue
        label = f"32x{tc}v1" if vs == 1 else f"L{vl}x{tc}"
        kernel = f"k_{name.replace('-', '_')}_{label}"
        out.append({"label": label, "kernel": kernel, "grid": ((xh * xw + 32 * pv - 1) // (32 * pv), C // tc, B),
                    "call": f"lanes<{ti}, {to}, {vl}, {s}, {tc}, {vs}>(x, xh, C, H, W, XH, XW, CP)"})
    if s > 1:
        for vb, tc, r in itertools.product((8, 16), (32, 64), (2, 4, 8)):
            vl = vb // size
            if (H * W) % vl or C % tc or tc * (r * xw + 1) * 4 > 48 * 1024:
                continue
            kernel = f"k_{name.replace('-', '_')}_S{vl}_{tc}_{r}"
            out.append({"label": f"S{vl}x{tc}_{r}", "kernel": kernel, "grid": ((xh + r - 1) // r, C // tc, B),
                        "call": f"rows<{ti}, {to}, {vl}, {s}, {tc}, {r}, {H}, {W}>(x, xh, C, CP)"})
    for c in out:
        c["source"] = (f'extern "C" __global__ void __launch_bounds__(256) {c["kernel"]}(const {ti}* x, {to}* xh, '
                       f"int C, int H, int W, int XH, int XW, int CP) {{ {c['call']}; }}\n")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=",".join(LAYERS), help=f"of {','.join(LAYERS)}")
    args = parser.parse_args()
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule

    names = args.layers.split(",")
    plans = {name: candidates(name, LAYERS[name]) for name in names}
    module = SourceModule(SOURCE + "".join(c["source"] for cs in plans.values() for c in cs), no_extern_c=True,
                          arch="sm_90a", options=["-O3"])
    hold, start, end = module.get_function("hold"), drv.Event(), drv.Event()

    def timed(launch) -> float:
        launch()
        drv.Context.synchronize()
        times = []
        for _ in range(30):
            hold(np.uint64(300_000), block=(1, 1, 1), grid=(1, 1, 1))
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(start.time_till(end))
        return 1000 * statistics.median(times)

    print(f"{'layer':20s} {'MB':>6s} {'memcpy us':>9s}  candidates: us (x memcpy), WRONG where the copy differs")
    for name in names:
        B, C, H, W, s, ti, to = LAYERS[name]
        xh_, xw_ = (H - 1) // s + 1, (W - 1) // s + 1
        x = np.random.default_rng(0).standard_normal((B, C, H, W)).astype(DTYPES[ti])
        want = x[:, :, ::s, ::s].transpose(0, 2, 3, 1).reshape(-1).astype(DTYPES[to])
        copies = [drv.to_device(x) for _ in range(8)]
        out = drv.mem_alloc(want.nbytes)
        moved = x.nbytes // (s * s) + want.nbytes
        a, b = drv.mem_alloc(moved // 2), drv.mem_alloc(moved // 2)
        memcpy = timed(lambda a=a, b=b, n=moved // 2: drv.memcpy_dtod(b, a, n))
        cells = []
        for c in plans[name]:
            f, grid, rotation = module.get_function(c["kernel"]), c["grid"], itertools.cycle(copies)
            ints = [np.int32(v) for v in (C, H, W, xh_, xw_, C)]

            def launch(f=f, grid=grid, rotation=rotation, ints=ints, out=out):
                f(next(rotation), out, *ints, block=(256, 1, 1), grid=grid)

            got = np.empty_like(want)
            f(copies[0], out, *ints, block=(256, 1, 1), grid=grid)
            drv.memcpy_dtoh(got, out)
            us = timed(launch)
            cells.append(f"{c['label']} {us:.1f} ({us / memcpy:.2f}){'' if np.array_equal(got, want) else ' WRONG'}")
        print(f"{name:20s} {moved / 1e6:6.1f} {memcpy:9.1f}  " + " | ".join(cells), flush=True)
        for buf in [*copies, out, a, b]:
            buf.free()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
