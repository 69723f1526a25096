"""The GPU in hand, measured: what a simulator config for it needs (cuda_templates/calibrate.cu, through PyCUDA).

Each figure is the median of a few repeats. Latencies come from one thread chasing a chain of indices (the
second pass over it timed in SM cycles), bandwidths from many blocks reading or copying with CUDA events
around them. Nothing here writes a config: simflow.calibrate.overlay does that, from these figures alone, so a
recorded measurement gives the same overlay on a machine without a GPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from ..errors import MissingTool, ToolError
from ..resources import cache_dir, templates_dir

LINE = 128  # bytes between a chain's successive entries: one cache line each
REPEATS = 5
VERSION = 4  # of the figures measure() gives: a cached set of another version is measured anew
LAUNCH_REPEATS = 50  # an empty kernel's time is a few microseconds: more repeats for a steady median
HOLD_US = 200  # the spin each timed launch waits behind, longer than the host takes to enqueue it
STREAM_OPS = 128  # operations an iteration a thread of cal_fma, cal_int_add, cal_int_mad, cal_shared
MIX_LOADS = 32  # shared-memory loads an iteration a thread of cal_shared_fma (4 steps of 8, 80 FMAs each)
L1_FOOTPRINTS_KB = (16, 32, 64, 96, 128, 160, 192, 208, 224, 240, 256, 320)


def _pycuda():
    try:
        import pycuda.autoinit  # noqa: F401  (a context on device 0)
        import pycuda.driver as drv
        from pycuda.compiler import SourceModule
    except ImportError as exc:
        raise MissingTool(f"calibrate measures the GPU through PyCUDA, which is not importable ({exc}); "
                        "pip install 'simflow[gpu]'") from None
    except Exception as exc:  # pycuda.autoinit raises the driver's own errors
        raise ToolError(f"no CUDA device could be opened for calibrate: {exc}") from None
    return drv, SourceModule


def _chain(n_lines: int, rng: np.random.Generator, stride: int = LINE) -> np.ndarray:
    """A random cycle through n_lines entries `stride` bytes apart (as uint32 indices into one array): random,
    so no prefetcher or stride pattern shortens it."""
    step = stride // 4
    order = rng.permutation(n_lines)
    chain = np.zeros(n_lines * step, dtype=np.uint32)
    chain[order * step] = np.roll(order, -1) * step
    return chain


def identity() -> str:
    """The GPU and driver measurements are cached under: 'NVIDIA H200, driver 13000'."""
    drv, _ = _pycuda()
    return f"{drv.Context.get_device().name()}, driver {drv.get_driver_version()}"


def measure(progress: Callable[[str], None] | None = None) -> dict:
    """Every figure, with the device's identity: a flat dict of numbers and names (see KEYS in overlay)."""
    drv, SourceModule = _pycuda()
    say = progress or (lambda _text: None)
    dev = drv.Context.get_device()
    attr = drv.device_attribute
    folder = cache_dir() / "pycuda"
    folder.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    major, minor = dev.compute_capability()
    try:
        module = SourceModule((templates_dir() / "calibrate.cu").read_text(), no_extern_c=True, options=["-O3"],
                              arch=f"sm_{major}{minor}", cache_dir=str(folder))
    except drv.CompileError as exc:
        raise ToolError(f"nvcc could not build calibrate's microbenchmarks for sm_{major}{minor}",
                        output=str(exc)) from None
    rng = np.random.default_rng(0)
    out: dict = {
        "version": VERSION, "gpu": dev.name(), "compute_capability": f"{major}.{minor}",
        "driver": drv.get_driver_version(),
        "sms": dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
        "clock_mhz_attribute": dev.get_attribute(attr.CLOCK_RATE) / 1000,
        "memory_clock_mhz_attribute": dev.get_attribute(attr.MEMORY_CLOCK_RATE) / 1000,
        "memory_bus_bits": dev.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH),
        "l2_bytes": dev.get_attribute(attr.L2_CACHE_SIZE),
        "shared_per_sm_bytes": dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
        "shared_per_block_optin_bytes": dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
        "registers_per_sm": dev.get_attribute(attr.MAX_REGISTERS_PER_MULTIPROCESSOR),
        "registers_per_block": dev.get_attribute(attr.MAX_REGISTERS_PER_BLOCK),
        "threads_per_sm": dev.get_attribute(attr.MAX_THREADS_PER_MULTIPROCESSOR),
        "blocks_per_sm": dev.get_attribute(attr.MAX_BLOCKS_PER_MULTIPROCESSOR),
        "memory_bytes": dev.total_memory(),
    }
    start, stop = drv.Event(), drv.Event()

    def timed(launch: Callable[[], None]) -> float:
        """Milliseconds of one call, the median of REPEATS after one warm-up."""
        launch()
        times = []
        for _ in range(REPEATS):
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(stop.time_since(start))
        return statistics.median(times)

    say("SM clock")
    spin, cycles = module.get_function("cal_spin"), 200_000_000
    ticks = drv.mem_alloc(8)
    ms = timed(lambda: spin(np.int64(cycles), ticks, block=(1, 1, 1), grid=(1, 1)))
    out["clock_mhz"] = cycles / (ms * 1e3)

    say("kernel launch")
    empty, hold = module.get_function("cal_empty"), np.int64(HOLD_US * out["clock_mhz"])

    def launch_us(blocks: int, threads: int) -> float:
        """Microseconds of an empty kernel between two events, the launch queued behind a spin (as simflow's GPU
        runs are timed, so the host's enqueue is not in it): the GPU's own cost of a launch and its blocks."""
        empty(block=(threads, 1, 1), grid=(blocks, 1))
        times = []
        for _ in range(LAUNCH_REPEATS):
            spin(hold, ticks, block=(1, 1, 1), grid=(1, 1))
            start.record()
            empty(block=(threads, 1, 1), grid=(blocks, 1))
            stop.record()
            stop.synchronize()
            times.append(1e3 * stop.time_since(start))
        return statistics.median(times)

    out["launch_us"] = launch_us(1, 32)
    wave = out["sms"] * min(out["blocks_per_sm"], out["threads_per_sm"] // 256)
    out["wave_launch_us"] = launch_us(wave, 256)  # every SM full of 256-thread blocks that do nothing

    def chase(name: str, chain: np.ndarray, steps: int, shared: int = 0, fresh: int = 0) -> float:
        """Cycles a step. fresh: the chain's entry spacing (in indices) when each repeat must meet entries no
        earlier load touched (DRAM): each starts at a random entry of the long chain (the chain's copy to the
        device leaves none of it in L2: a first chase of it times DRAM; its pages stay in the TLB)."""
        data, took, sink = drv.to_device(chain), drv.mem_alloc(8), drv.mem_alloc(4)
        kernel = module.get_function(name)
        values = []
        for _ in range(REPEATS):
            if shared:
                args = (data, np.int32(len(chain)), np.int32(steps))
            else:
                start = int(rng.integers(len(chain) // fresh)) * fresh if fresh else 0
                args = (data, np.uint32(start), np.int32(steps))
            kernel(*args, took, sink, block=(1, 1, 1), grid=(1, 1), shared=shared)
            values.append(int(drv.from_device(took, (1,), np.int64)[0]) / steps)
        data.free()
        return statistics.median(values)


    say("latencies (pointer chase)")
    out["l1_latency_cycles"] = chase("cal_chase", _chain(16 * 1024 // LINE, rng), 4096)
    out["shared_latency_cycles"] = chase("cal_chase_shared", _chain(16 * 1024 // LINE, rng), 4096,
                                         shared=16 * 1024)
    l2_lines = min(out["l2_bytes"] // 4, 8 << 20) // LINE  # well inside L2, far outside L1
    out["l2_latency_cycles"] = chase("cal_chase_cg", _chain(l2_lines, rng), l2_lines)
    # DRAM: 64 MiB, a line every KiB (few pages, so few TLB misses), 2048 fresh lines a repeat
    out["dram_latency_cycles"] = chase("cal_chase_cg", _chain((64 << 20) // 1024, rng, stride=1024), 2048,
                                       fresh=1024 // 4)
    say("L1 size")
    curve = {kb: chase("cal_chase", _chain(kb * 1024 // LINE, rng), 4 * kb * 1024 // LINE) for kb in L1_FOOTPRINTS_KB}
    out["l1_chase_cycles_by_kb"] = curve
    held = [kb for kb, lat in curve.items() if lat <= 1.5 * out["l1_latency_cycles"]]
    out["l1_bytes"] = max(held) * 1024 if held else 0

    say("bandwidths")
    read, sink = module.get_function("cal_read"), drv.mem_alloc(4)
    l2_buf_bytes = out["l2_bytes"] // 4
    l2_buf = drv.mem_alloc(l2_buf_bytes)
    drv.memset_d8(l2_buf, 1, l2_buf_bytes)
    reps, blocks = 20, 4 * out["sms"]
    ms = timed(lambda: read(l2_buf, np.int64(l2_buf_bytes // 16), np.int32(reps), sink, block=(512, 1, 1),
                            grid=(blocks, 1)))
    out["l2_bandwidth_gbs"] = l2_buf_bytes * reps / (ms * 1e6)
    l2_buf.free()
    copy_bytes = min(1 << 31, out["memory_bytes"] // 8)
    src, dst = drv.mem_alloc(copy_bytes), drv.mem_alloc(copy_bytes)
    drv.memset_d8(src, 1, copy_bytes)
    ms = timed(lambda: drv.memcpy_dtod(dst, src, copy_bytes))
    out["dram_bandwidth_gbs"] = 2 * copy_bytes / (ms * 1e6)  # bytes read plus bytes written
    src.free()
    dst.free()

    say("FMA, integer, issue and shared-memory rates")
    blocks = out["sms"] * (out["threads_per_sm"] // 256)  # every SM full of 256-thread blocks
    iters = 4096

    def per_sm_cycle(name: str, *args, ops: int = STREAM_OPS) -> float:
        """Operations an SM a cycle of a stream kernel, `ops` an iteration a thread (STREAM_OPS: 8 chains x 16)."""
        kernel = module.get_function(name)
        ms = timed(lambda: kernel(np.int32(iters), *args, sink, block=(256, 1, 1), grid=(blocks, 1)))
        return blocks * 256 * iters * ops / (ms * 1e-3) / out["sms"] / (out["clock_mhz"] * 1e6)

    out["fma_per_sm_per_cycle"] = per_sm_cycle("cal_fma")
    out["warp_fma_issue_per_sm_per_cycle"] = out["fma_per_sm_per_cycle"] / 32
    out["int_add_per_sm_per_cycle"] = per_sm_cycle("cal_int_add")
    out["int_mad_per_sm_per_cycle"] = per_sm_cycle("cal_int_mad", np.uint32(3), np.uint32(1))
    # 32-bit shared-memory loads: a warp's in one wavefront, then in four (4-way bank conflicts)
    out["shared_load_per_sm_per_cycle"] = per_sm_cycle("cal_shared", np.int32(1))
    out["shared_load_4way_per_sm_per_cycle"] = per_sm_cycle("cal_shared", np.int32(4))
    # the same loads among ten FMAs each: the shared-memory pipe and the FMA issue overlapped
    out["shared_fma_load_per_sm_per_cycle"] = per_sm_cycle("cal_shared_fma", np.int32(1), ops=MIX_LOADS)
    out["shared_fma_load_2way_per_sm_per_cycle"] = per_sm_cycle("cal_shared_fma", np.int32(2), ops=MIX_LOADS)
    out["seconds"] = round(time.monotonic() - began, 1)
    return out
