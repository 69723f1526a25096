"""Event-bracket overhead of a launch: PyCUDA's path against torch's, each behind its hold kernel."""
import statistics

import numpy as np
import torch

torch.zeros(1, device="cuda")  # the primary context, shared with PyCUDA below
import pycuda.autoprimaryctx  # noqa: E402,F401
import pycuda.driver as drv  # noqa: E402
from pycuda.compiler import SourceModule  # noqa: E402

SRC = r"""
extern "C" __global__ void hold(unsigned long long ns)
{ unsigned long long t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns); }
extern "C" __global__ void empty() {}
extern "C" __global__ void empty_smem() { extern __shared__ float s[]; if (threadIdx.x == 999) s[0] = 1; }
"""
mod = SourceModule(SRC, no_extern_c=True, arch="sm_90a")
hold, empty, empty_smem = (mod.get_function(n) for n in ("hold", "empty", "empty_smem"))
empty_smem.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 168 * 1024)


def pycuda_us(launch, n=60):
    s, e, out = drv.Event(), drv.Event(), []
    for _ in range(n):
        hold(np.uint64(200_000), block=(1, 1, 1), grid=(1, 1, 1))
        s.record()
        launch()
        e.record()
        e.synchronize()
        out.append(s.time_till(e) * 1000)
    return statistics.median(out[5:])


def torch_us(launch, n=60):
    s, e, out = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True), []
    for _ in range(n):
        torch.cuda._sleep(400_000)
        s.record()
        launch()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000)
    return statistics.median(out[5:])


x = torch.zeros(1, device="cuda")
big = torch.zeros(32 * 104 * 784, device="cuda", dtype=torch.float16)
rows = [
    ("pycuda: events only", pycuda_us(lambda: None)),
    ("pycuda: empty, 1 block", pycuda_us(lambda: empty(block=(32, 1, 1), grid=(1, 1)))),
    ("pycuda: empty, 131 x 384", pycuda_us(lambda: empty(block=(384, 1, 1), grid=(131, 1)))),
    ("pycuda: empty, 131 x 384, 165 KB smem",
     pycuda_us(lambda: empty_smem(block=(384, 1, 1), grid=(131, 1), shared=165 * 1024))),
    ("pycuda: empty 1 block, twice",
     pycuda_us(lambda: (empty(block=(32, 1, 1), grid=(1, 1)), empty(block=(32, 1, 1), grid=(1, 1))))),
    ("torch: events only", torch_us(lambda: None)),
    ("torch: add_ on 1 element", torch_us(lambda: x.add_(1))),
    ("torch: fill_ of y (2.6 M half)", torch_us(lambda: big.fill_(1))),
    ("torch events, pycuda empty 1 block", torch_us(lambda: empty(block=(32, 1, 1), grid=(1, 1)))),
]
for name, us in rows:
    print(f"{name:45s} {us:7.2f} us")
