"""fma_to_load_kernel.cu on the GPU (PyCUDA), 8 blocks of 256 an SM: shared-memory loads an SM a cycle at NF FMAs a
load (0, 2, 6, 10, 16) and ways-way bank conflicts (1, 2, 4). Run from the repository root on the GPU machine."""

import statistics
from pathlib import Path

import numpy as np
import pycuda.autoinit  # noqa: F401
import pycuda.driver as drv
from pycuda.compiler import SourceModule

SRC = (Path(__file__).parent / "fma_to_load_kernel.cu").read_text()
SPIN = ('extern "C" __global__ void spin(long long c, long long *o)'
        '{long long s = clock64(), n = s; while (n - s < c) n = clock64(); o[0] = n - s;}')

sms = drv.Context.get_device().get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
spin = SourceModule(SPIN, no_extern_c=True, arch="sm_90").get_function("spin")
ticks, start, stop = drv.mem_alloc(8), drv.Event(), drv.Event()


def ms(launch) -> float:
    launch()
    times = []
    for _ in range(5):
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(stop.time_since(start))
    return statistics.median(times)


mhz = 200e6 / (ms(lambda: spin(np.int64(200_000_000), ticks, block=(1, 1, 1), grid=(1, 1))) * 1e3)
print(f"clock {mhz:.0f} MHz")
sink, iters, blocks = drv.mem_alloc(4), 2048, sms * 8
for nf in (0, 2, 6, 10, 16):
    kernel = SourceModule(f"#define NF {nf}\n" + SRC, no_extern_c=True, options=["-O3"],
                          arch="sm_90").get_function("cal_mix")
    row = []
    for ways in (1, 2, 4):
        cycles = ms(lambda k=kernel, w=ways: k(np.int32(iters), np.int32(w), sink, block=(256, 1, 1),
                                               grid=(blocks, 1))) * 1e-3 * mhz * 1e6
        loads = blocks * 256 * iters * 32 / sms
        row.append(f"ways {ways}: {loads / cycles:6.2f} loads, {loads * (1 + nf) / 32 / cycles:5.2f} warp insn")
    print(f"NF {nf:2d} | " + " | ".join(row))
