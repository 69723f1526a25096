"""What a job needs in memory, checked before anything starts: a layer too large for this machine (or for the
simulated GPU) is refused by name, with the figures, instead of growing until the machine swaps."""

from __future__ import annotations

import math
import os

from ..errors import LimitError

GIB = 2**30
SIMULATED_GPU_MEMORY = 32 * GIB  # SM7_QV100 models a Quadro GV100: 32 GB of HBM2
SIMULATED_GPU_NAME = "the simulated GPU (SM7_QV100, a Quadro GV100)"
HOST_SHARE = 0.8  # of the memory available now: the rest is the OS's, the simulator's own and Python's


def _elements(shape) -> int:
    return math.prod(int(d) for d in shape)


def device_bytes(kernel, problem) -> int:
    """Inputs, weights, output and workspace in device memory (float32 words; a half variant's copies fit in it)."""
    floats = sum(_elements(s) for s in (problem.input_shape, problem.weight_shape, kernel.output_shape(problem.B)))
    return 4 * (floats + sum(kernel.workspace(problem.B).values()))


def host_bytes(kernel, problem, simulated: bool) -> int:
    """The most host memory the job holds at once. On a GPU: the inputs and the output copied back (the reference
    runs on the device). Under the simulator, the larger of: the program's buffers and the simulated GPU's memory
    (GPGPU-Sim keeps it in host memory), or the float64 reference (the input, padded, the weights and the output
    twice: the sum and a product term) beside the float32 input and output."""
    x = _elements(problem.input_shape)
    y = _elements(kernel.output_shape(problem.B))
    if not simulated:
        return 4 * (x + _elements(problem.weight_shape) + y)
    padded = x // max(problem.H * problem.W, 1) * (problem.H + 2 * problem.pad) * (problem.W + 2 * problem.pad)
    reference = 8 * (x + padded + _elements(problem.weight_shape) + 2 * y) + 4 * (x + y)
    return max(reference, 2 * device_bytes(kernel, problem))


def host_available() -> int:
    """Bytes of memory available now (MemAvailable: free plus what the kernel can reclaim)."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0  # unknown: no check


INDEX_LIMIT = 2**31 - 1  # the kernels index inside one image with 32-bit ints (its batch offset is 64-bit)


def check(kernel, problem, simulated: bool) -> None:
    """Refuse a job whose memory the machine (or the simulated GPU) does not have, or whose one image is past the
    kernels' 32-bit indexing, naming the limit and figures."""
    fix = "run a smaller batch (--batch) or shape"
    out = kernel.output_shape(problem.B)
    for what, shape in (("input", problem.input_shape[1:]), ("output", out[1:])):
        if (elements := _elements(shape)) > INDEX_LIMIT:  # an H200 read past y at 50000 x 50000: illegal address
            raise LimitError(f"elements of one image's {what} (the kernels index within an image with 32-bit ints)",
                             f"{elements:,}", f"{INDEX_LIMIT:,}", "use a smaller image or fewer channels")
    if simulated and (need := device_bytes(kernel, problem)) > SIMULATED_GPU_MEMORY:
        raise LimitError(f"device memory of {SIMULATED_GPU_NAME} (inputs, output and workspace)",
                         f"{need / GIB:.1f} GiB", f"{SIMULATED_GPU_MEMORY / GIB:.0f} GiB", fix)
    available = host_available()
    if available and (need := host_bytes(kernel, problem, simulated)) > HOST_SHARE * available:
        what = ("the inputs, the program's and the simulated GPU's copies, the float64 reference" if simulated
                else "the inputs, the output and the float64 reference")
        raise LimitError(f"host memory ({what})", f"{need / GIB:.1f} GiB",
                         f"{HOST_SHARE * available / GIB:.1f} GiB ({HOST_SHARE:.0%} of the {available / GIB:.1f} GiB "
                         "available now)", fix)
