"""Prototype: programmatic dependent launch (PDL) between a variant's launches, A/B against PyCUDA's plain launches.

Arms, interleaved, each a median of REPEATS event pairs behind a hold kernel, inputs rotated over 2x the L2:
  plain: PyCUDA launches of the unpatched source (what simflow times)
  ex:    cuLaunchKernelEx of the unpatched source, no attribute (the launch path alone)
  pdl:   cuLaunchKernelEx of the patched source, every launch after the first with programmatic stream
         serialization; each kernel but the last triggers its dependents at its start, each but the first waits
         (griddepcontrol.wait) at its start.
Checks: pdl's y against plain's y (max abs diff over max abs).
"""
import ctypes
import json
import math
import re
import statistics
import sys
import time

import numpy as np
import pycuda.driver as drv
from pycuda.compiler import compile as nvcc_compile

from simflow.backends.gpu import HOLD_SOURCE, GpuBackend
from simflow.kernels.problems import get_problem
from simflow.kernels.reference import host_dtype, make_inputs
from simflow.kernels.variants import VARIANTS

cu = ctypes.CDLL("libcuda.so.1")


class Attr(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class Config(ctypes.Structure):
    _fields_ = [("gx", ctypes.c_uint32), ("gy", ctypes.c_uint32), ("gz", ctypes.c_uint32),
                ("bx", ctypes.c_uint32), ("by", ctypes.c_uint32), ("bz", ctypes.c_uint32),
                ("smem", ctypes.c_uint32), ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(Attr)),
                ("nattrs", ctypes.c_uint32)]


def ok(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what}: CUresult {rc}")


def load(cubin: bytes, names):
    mod = ctypes.c_void_p()
    ok(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(cubin)), "cuModuleLoadData")
    fns = {}
    for n in names:
        f = ctypes.c_void_p()
        ok(cu.cuModuleGetFunction(ctypes.byref(f), mod, n.encode()), "cuModuleGetFunction " + n)
        fns[n] = f
    return fns


ARMS = ("plain", "ex", "pdl", "pdl_last")
PDL_ATTR = Attr(id=6)
ctypes.memmove(ctypes.addressof(PDL_ATTR) + 8, ctypes.byref(ctypes.c_int(1)), 4)


def launch_ex(f, launch, args, pdl: bool):
    cfg = Config(*launch.grid, *launch.block, launch.dynamic_smem, None,
                 ctypes.pointer(PDL_ATTR) if pdl else None, 1 if pdl else 0)
    vals = [ctypes.c_int32(int(a)) if isinstance(a, np.int32) else ctypes.c_uint64(int(a)) for a in args]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    ok(cu.cuLaunchKernelEx(ctypes.byref(cfg), f, ptrs, None), "cuLaunchKernelEx")


def patch(source: str, names: list[str]) -> str:
    """griddepcontrol at the start of each kernel body: launch_dependents in all but the last, wait in all but the
    first."""
    for i, n in enumerate(names):
        m = re.search(r'extern "C" __global__ void[^{;]*?\b' + re.escape(n) + r'\s*\([^)]*\)\s*(//[^\n]*\n\s*)?\{',
                      source, re.S)
        if not m:
            raise RuntimeError(f"kernel {n} not found")
        ins = ""
        if i > 0:
            ins += '\n  asm volatile("griddepcontrol.wait;" ::: "memory");'
        if i < len(names) - 1:
            ins += '\n  asm volatile("griddepcontrol.launch_dependents;");'
        source = source[:m.end()] + ins + source[m.end():]
    return source


def _compile(job):
    source, karch = job
    try:
        nvcc_compile(source, options=["-O3"], no_extern_c=True, arch=karch)
    except Exception as exc:  # reported when the layer runs
        print("compile failed:", str(exc)[:2000], flush=True)


def main():
    layers = json.load(open(sys.argv[1]))  # [[layer, precision, variant, params, suite ms], ...]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    backend = GpuBackend()
    arch = backend.limits.arch
    hold_mod = drv.module_from_buffer(nvcc_compile(HOLD_SOURCE, no_extern_c=True, arch=arch))
    hold = hold_mod.get_function("simflow_hold")
    l2 = backend.device.get_attribute(drv.device_attribute.L2_CACHE_SIZE)
    out = []
    # compile every source first, 16 nvcc at a time (pycuda's cache keeps the cubins)
    from concurrent.futures import ProcessPoolExecutor
    jobs = []
    for layer, _precision, variant, params, *_ in layers:
        kernel = VARIANTS[variant].render(get_problem(layer), dict(params))
        names = list(dict.fromkeys(lch.kernel for lch in kernel.launches(get_problem(layer).B)))
        karch = kernel.build_arch(arch)
        jobs += [(kernel.source, karch), (patch(kernel.source, names), karch)]
    t0 = time.time()
    with ProcessPoolExecutor(16) as pool:
        list(pool.map(_compile, jobs))
    print(f"compiled {len(jobs)} sources in {time.time() - t0:.0f} s", flush=True)
    for layer, precision, variant, params, *_ in layers:
        problem = get_problem(layer)
        kernel = VARIANTS[variant].render(problem, dict(params))
        karch = kernel.build_arch(arch)
        names = [lch.kernel for lch in kernel.launches(problem.B)]
        t0 = time.time()
        cubin_a = nvcc_compile(kernel.source, options=["-O3"], no_extern_c=True, arch=karch)
        cubin_b = nvcc_compile(patch(kernel.source, list(dict.fromkeys(names))), options=["-O3"], no_extern_c=True,
                               arch=karch)
        mod_a = drv.module_from_buffer(cubin_a)
        funcs_a = [mod_a.get_function(n) for n in names]
        launches = kernel.launches(problem.B)
        for fn, lch in zip(funcs_a, launches, strict=True):
            if lch.dynamic_smem > 48 * 1024:
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, lch.dynamic_smem)
        from simflow.backends import driver as sfdriver
        dm = sfdriver.Module(cubin_a)
        dfs = [dm.function(n) for n in names]
        for fn, lch in zip(dfs, launches, strict=True):
            if lch.dynamic_smem > 48 * 1024:
                fn.allow_dynamic_smem(lch.dynamic_smem)
        launches = backend._resident(dfs, launches)
        ex_a = load(cubin_a, set(names))
        ex_b = load(cubin_b, set(names))
        for fns in (ex_a, ex_b):
            for n, lch in zip(names, launches, strict=True):
                if lch.dynamic_smem > 48 * 1024:
                    ok(cu.cuFuncSetAttribute(fns[n], 8, lch.dynamic_smem), "cuFuncSetAttribute")
        io = host_dtype(kernel.io)
        x, w = make_inputs(problem, 1, kernel.io)
        out_elems = int(np.prod(kernel.output_shape(problem.B)))
        sets = max(1, min(32, math.ceil(2 * l2 / problem.min_bytes(kernel.io))))
        workspace = {k: drv.mem_alloc(4 * c) for k, c in kernel.workspace(problem.B).items()}
        bufs = [{"x": drv.to_device(x), "w": drv.to_device(w), "y": drv.mem_alloc(out_elems * io.itemsize)}
                for _ in range(sets)]

        def args_of(lch, b, workspace=workspace, problem=problem):
            named = {**workspace, **b}
            return [np.int32(problem.B) if a == "batch" else named[a] for a in lch.args]

        def run(arm, b, names=names, funcs_a=funcs_a, launches=launches, ex_a=ex_a, ex_b=ex_b):
            for i, (n, fa, lch) in enumerate(zip(names, funcs_a, launches, strict=True)):
                a = args_of(lch, b)
                if arm == "plain":
                    fa(*a, block=lch.block, grid=lch.grid, shared=lch.dynamic_smem)
                elif arm == "ex":
                    launch_ex(ex_a[n], lch, a, False)
                elif arm == "pdl_last":
                    launch_ex(ex_b[n], lch, a, i == len(names) - 1)
                else:
                    launch_ex(ex_b[n], lch, a, i > 0)

        ys = {}
        for arm in ARMS:
            drv.memset_d8(bufs[0]["y"], 0xFF, out_elems * io.itemsize)
            run(arm, bufs[0])
            drv.Context.synchronize()
            y = np.empty(out_elems, dtype=io)
            drv.memcpy_dtoh(y, bufs[0]["y"])
            ys[arm] = y.astype(np.float64)
        scale = float(np.max(np.abs(ys["plain"])))
        err = {arm: float(np.max(np.abs(ys[arm] - ys["plain"]))) / scale for arm in ARMS}
        finite = all(np.isfinite(v).all() for v in ys.values())
        times = {arm: [] for arm in ARMS}
        start, end = drv.Event(), drv.Event()
        for r in range(rounds):
            for arm in (ARMS if r % 2 == 0 else ARMS[::-1]):
                for i in range(5):
                    run(arm, bufs[i % sets])
                drv.Context.synchronize()
                ts = []
                for i in range(20):
                    hold(np.uint64(300_000), block=(1, 1, 1), grid=(1, 1, 1))
                    start.record()
                    run(arm, bufs[i % sets])
                    end.record()
                    end.synchronize()
                    ts.append(start.time_till(end))
                times[arm].append(statistics.median(ts))
        med = {arm: min(v) for arm, v in times.items()}
        row = {"layer": layer, "precision": precision, "variant": variant, "params": params, "launches": names,
               "err": err, "finite": finite, "ms": med, "rounds": times,
               "pdl/plain": med["pdl"] / med["plain"], "compile_s": round(time.time() - t0, 1)}
        print(json.dumps(row), flush=True)
        out.append(row)
        for b in bufs:
            for v in b.values():
                v.free()
        for v in workspace.values():
            v.free()
    print(f"{'layer':34s} {'prec':5s} {'launches':9s} {'plain us':>9s} {'ex us':>8s} {'pdl us':>8s} "
          f"{'pdl/plain':>9s} err")
    for r in out:
        print(f"{r['layer']:34s} {r['precision']:5s} {len(r['launches']):9d} {1e3 * r['ms']['plain']:9.1f} "
              f"{1e3 * r['ms']['ex']:8.1f} {1e3 * r['ms']['pdl']:8.1f} {r['pdl/plain']:9.3f} {r['err']['pdl']:.1e}"
              f" last {1e3 * r['ms']['pdl_last']:8.1f} {r['ms']['pdl_last'] / r['ms']['plain']:6.3f}"
              f"{'' if r['finite'] else ' NONFINITE'}")
    ratios = [r["pdl/plain"] for r in out]
    print("median pdl/plain", round(statistics.median(ratios), 4), "geomean",
          round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4))


if __name__ == "__main__":
    main()
