"""The native GPU backend: PyCUDA compiles the rendered source, runs, checks and times it; the variant's kernels are
loaded and launched through the driver (simflow.backends.driver), where a launch after the first may be
programmatic."""

from __future__ import annotations

import atexit
import dataclasses
import math
import os
import shutil
import statistics
import time
from pathlib import Path

import numpy as np

from ..errors import LimitError, MissingTool
from ..kernels import footprint
from ..kernels.limits import KNOWN_DEVICES, DeviceLimits, check_launches, theoretical_occupancy
from ..kernels.reference import Check, as_float32, check_output, host_dtype, make_inputs, verdict
from ..kernels.variant_types import Kernel, Launch, template_environment
from ..resources import cache_dir
from ..settings import current
from . import driver
from .base import Availability, Backend, Finding, Job, RunResult

try:
    import pycuda
    import pycuda.driver as drv
    from pycuda.compiler import SourceModule
    from pycuda.compiler import compile as nvcc_compile
except ImportError as exc:  # the error is raised only when the backend is created
    drv = None
    _IMPORT_ERROR = exc

PYCUDA_HELP = (
    "install PyCUDA: pip install 'simflow[gpu]' (it builds against the CUDA toolkit on PATH; "
    "on a machine without a package index, carry a wheel built there)"
)
COMPILE_OPTIONS = ("-O3",)
CACHE_ROTATION_BYTES = 2  # times the L2 size that rotated input sets must cover
# The check's grid: blocks of CHECK_THREADS stride over the output, at most CHECK_BLOCKS of them (enough to fill
# any GPU; each leaves 96 bytes of sums for the host).
CHECK_THREADS, CHECK_BLOCKS = 256, 2048
# Each timed repeat is queued behind a one-thread kernel that spins this long (or 4x the host enqueue time of
# the last warm-up, if longer), so the host's time to enqueue the launches - tens of microseconds from
# Python, per launch - is not timed as GPU idle between the events (a variant of several kernels on a small
# layer would otherwise be timed mostly as launch gaps).
HOLD_US = 200
LAUNCH_REPEATS = 10  # timed repeats of each launch alone (a variant of several kernels), after the whole
HOLD_SOURCE = r"""extern "C" __global__ void simflow_hold(unsigned long long ns)
{
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


def _no_gpu_reason() -> str | None:
    """None when PyCUDA imports and a CUDA device answers; else what is missing."""
    if drv is None:
        return f"PyCUDA is not importable ({_IMPORT_ERROR})"
    try:
        drv.init()
        if drv.Device.count() == 0:
            return "the CUDA driver reports no GPU"
    except drv.Error as exc:
        return f"no usable CUDA GPU (cuInit: {exc}); check the NVIDIA driver and that a GPU is visible"
    return None


_PRIMARY: list = []


def _primary_context():
    """The device's primary context, made current once per process and shared by every backend."""
    if not _PRIMARY:
        device = drv.Device(int(current().cuda_device))
        context = device.retain_primary_context()
        context.push()
        atexit.register(context.pop)
        _PRIMARY.append((device, context))
    return _PRIMARY[0]




class GpuBackend(Backend):
    name = "gpu"
    serial = True
    default_metrics = ("time_ms", "gflops", "gbps", "registers", "theoretical_occupancy")
    speed_metric = "time_ms"
    speed_unit = "ms"
    title, short = "GPU", "gpu"
    # Launches a variant marks programmatic start before the one before them ends (sm_90 and newer); off, every
    # launch waits for the one before it (benchmarks/programmatic_launch.py measures one against the other).
    programmatic = True
    better = {  # "" = neither direction is better: a fact, not a score
        "time_ms": "lower", "time_ms_min": "lower", "time_ms_max": "lower", "gflops": "higher", "gbps": "higher",
        "registers": "", "smem_static_bytes": "", "smem_dynamic_bytes": "", "local_bytes": "lower",
        "threads_per_block": "", "grid_blocks": "", "blocks_per_sm": "higher", "theoretical_occupancy": "higher",
        "repeats": "", "input_sets": "",
    }

    @classmethod
    def support(cls, variant) -> dict:
        arch = variant.arch(variant.resolve())
        return {"accepts_defaults": True, "refuses": [], "reason": f"{arch} GPUs only" if arch else ""}

    @classmethod
    def probe(cls) -> Availability:
        reason = _no_gpu_reason()
        if reason:
            return Availability(False, reason, PYCUDA_HELP if drv is None else "run on a machine with an NVIDIA GPU")
        dev = drv.Device(int(current().cuda_device))
        major, minor = dev.compute_capability()
        return Availability(True, f"{dev.name()} (sm_{major}{minor}), PyCUDA {pycuda.VERSION_TEXT}")

    @classmethod
    def doctor(cls, probe_builds: bool = True, refresh: bool = False) -> list[Finding]:
        """The GPU as PyCUDA sees it (what nvidia-smi sees where PyCUDA cannot), and PyCUDA itself."""
        from ..processes import run_quietly

        avail = cls.probe()
        gpu = Finding("GPU (PyCUDA)", avail.available, avail.detail, "" if avail.available else avail.how_to_get)
        if not avail.available and shutil.which("nvidia-smi"):
            code, out = run_quietly(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
            if code == 0 and out:
                gpu = Finding("GPU (PyCUDA)", False, f"nvidia-smi sees {out}, but: {avail.detail}", avail.how_to_get)
        if drv is None:  # the GPU finding says so already, with how to get it
            return [gpu]
        return [gpu, Finding("pycuda", True, f"PyCUDA {pycuda.VERSION_TEXT}")]

    @classmethod
    def check(cls, job: Job) -> None:
        reason = _no_gpu_reason()
        if reason:
            fix = PYCUDA_HELP if drv is None else "run on a machine with an NVIDIA GPU and driver"
            raise MissingTool(f"simflow cannot run on a GPU here: {reason}; {fix}")

    def __init__(self) -> None:
        self.check(None)
        self.device, self.context = _primary_context()
        self.limits = device_limits(self.device)
        self._modules: dict[str, object] = {}

    def environment(self) -> dict[str, str]:
        major, minor = self.device.compute_capability()
        driver = drv.get_driver_version()
        return {
            "gpu": self.device.name(),
            "compute_capability": f"{major}.{minor}",
            "cuda_driver": f"{driver // 1000}.{driver % 1000 // 10}",
            "pycuda": pycuda.VERSION_TEXT,
        }

    @classmethod
    def refusal_of(cls, job: Job, kernel: Kernel) -> str:
        try:
            footprint.check(kernel, job.problem, simulated=False)
        except LimitError as exc:
            return str(exc)
        return ""

    def check_memory(self, kernel: Kernel, problem) -> None:
        """Inputs, output and workspace must fit in the device memory free now."""
        floats = sum(int(np.prod(shape)) for shape in (problem.input_shape, problem.weight_shape,
                                                      kernel.output_shape(problem.B)))
        floats += sum(kernel.workspace(problem.B).values())
        free, _total = drv.mem_get_info()
        if 4 * floats > 0.9 * free:
            raise LimitError("device memory (inputs, output and workspace)", f"{4 * floats / 2**30:.1f} GiB",
                             f"{0.9 * free / 2**30:.1f} GiB free", "run a smaller batch (--batch) or a variant "
                             "without a workspace (implicit_gemm)")

    def _module(self, kernel: Kernel) -> driver.Module:
        """The rendered source compiled for the device's arch (PyCUDA's nvcc call, which caches the cubin), loaded
        through the driver."""
        key = kernel.fingerprint(COMPILE_OPTIONS)
        if key not in self._modules:
            folder = cache_dir() / "pycuda"
            folder.mkdir(parents=True, exist_ok=True)
            cubin = nvcc_compile(kernel.source, options=list(COMPILE_OPTIONS),
                                 no_extern_c=True,  # the kernels are extern "C" already
                                 arch=kernel.build_arch(self.limits.arch), cache_dir=str(folder))
            self._modules[key] = driver.Module(cubin)
        return self._modules[key]

    def _hold(self):
        if "hold" not in self._modules:
            folder = cache_dir() / "pycuda"
            folder.mkdir(parents=True, exist_ok=True)
            self._modules["hold"] = SourceModule(HOLD_SOURCE, no_extern_c=True, arch=self.limits.arch,
                                                 cache_dir=str(folder))
        return self._modules["hold"].get_function("simflow_hold")

    def precompile(self, kernels: list[Kernel], processes: int | None = None) -> int:
        """Compile these kernels' sources into PyCUDA's cubin cache, `processes` nvcc at a time, so that the
        runs that follow (one at a time: they share the GPU) only load them. A search over layers and
        configurations spends most of its time in nvcc otherwise. Compile errors are left for the run
        to report. Returns how many sources were compiled."""
        from concurrent.futures import ProcessPoolExecutor

        folder = cache_dir() / "pycuda"
        folder.mkdir(parents=True, exist_ok=True)
        builds = {}
        for k in kernels:
            try:
                builds[k.source] = k.build_arch(self.limits.arch)
            except LimitError:
                pass  # not for this device: the run refuses it
        sources = sorted(builds)
        with ProcessPoolExecutor(processes or os.cpu_count()) as pool:
            list(pool.map(_compile_into_cache, sources, [builds[s] for s in sources], [str(folder)] * len(sources)))
        return len(sources)

    def run(self, job: Job, folder: Path | None = None, kernel: Kernel | None = None) -> RunResult:
        """The job on this GPU; its files are the run folder's (the rendered source and job.json, written by
        the caller: the module itself stays in memory). `folder` may be None for a run that keeps nothing."""
        kernel = kernel or job.kernel()
        problem, batch = job.problem, job.problem.B
        result = RunResult.of(job, "passed", kernel.fingerprint(), environment=self.environment(),
                              kernels=kernel.kernel_names)
        try:
            launches = kernel.launches(batch)
            kernel.build_arch(self.limits.arch)
            check_launches(launches, self.limits)
            self.check_memory(kernel, problem)  # the host's memory: refusal_of, which run_job asks first
            streams = kernel.params.get("streams", 0)
            if streams > batch:
                raise LimitError("streams (one chunk of the batch each)", str(streams), f"the batch, {batch}",
                                 "use fewer streams or a larger batch")
        except LimitError as exc:
            result.status, result.reason = "refused", str(exc)
            return result
        try:
            module = self._module(kernel)
        except drv.CompileError as exc:
            result.status = "compile_error"
            result.reason = f"{exc}\n{getattr(exc, 'stderr', '')}".strip()
            return result
        functions = [module.function(launch.kernel) for launch in launches]
        for func, launch in zip(functions, launches, strict=True):
            if launch.dynamic_smem > self.limits.smem_per_block:
                func.allow_dynamic_smem(launch.dynamic_smem)
        launches = self._resident(functions, launches)
        self._resources(result, functions, launches)
        try:
            self._execute(kernel, problem, module, functions, launches, job, result)
        except (drv.Error, driver.DriverError) as exc:
            result.status, result.reason = "launch_error", f"CUDA error: {exc}"
        return result

    def _programmatic(self, launches: list[Launch]) -> bool:
        """Whether launches after the first the variant marks start before the one before them ends here."""
        return (self.programmatic and self.limits.compute_capability >= (9, 0)
                and any(launch.programmatic for launch in launches[1:]))

    def _launch(self, functions, launches: list[Launch], named: dict, batch: int, stream=None) -> None:
        """The launches in order, their buffers by name. A launch the variant marks programmatic may start before
        the one before it ends (its kernels wait for it: _async.cu.j2 programmatic), where the device has it
        (sm_90 and newer) and `programmatic` is on; the first (and a launch timed alone) waits as a plain one does."""
        ahead = self._programmatic(launches)
        for i, (func, launch) in enumerate(zip(functions, launches, strict=True)):
            args = [np.int32(batch) if a == "batch" else named[a] for a in launch.args]
            func.launch(launch.grid, launch.block, launch.dynamic_smem, args, stream,
                        programmatic=ahead and i > 0 and launch.programmatic)

    def _check(self, kernel: Kernel, problem, device: dict, y, job: Job) -> Check:
        """Every output element of `y` (device memory: the output as the kernel wrote it, in kernel.io) against
        a float64 reference computed and judged on this GPU from the float32 inputs in device["x"],
        device["w"] (cuda_templates/check.cu.j2); a seeded sample checked on the host instead when
        job.sample_check."""
        io = host_dtype(kernel.io)
        shape = kernel.output_shape(problem.B)
        if job.sample_check:
            y_host = np.empty(shape, dtype=io)
            drv.memcpy_dtoh(y_host, y)
            x, w = (as_float32(a, kernel.io) for a in make_inputs(problem, job.seed, kernel.io))
            return check_output(problem, x, w, as_float32(y_host, kernel.io), kernel.precision, seed=job.seed,
                                method="sample", op=kernel.output, tolerance=kernel.check_tolerance)
        source = check_source(problem, kernel.output, kernel.io)
        if source not in self._modules:
            folder = cache_dir() / "pycuda"
            folder.mkdir(parents=True, exist_ok=True)
            self._modules[source] = SourceModule(source, options=["-O3"], no_extern_c=True, arch=self.limits.arch,
                                                 cache_dir=str(folder))
        judge = self._modules[source].get_function("simflow_check")
        total = math.prod(shape)
        blocks = max(1, min(CHECK_BLOCKS, -(-total // CHECK_THREADS)))
        sums, counts = np.empty((blocks, 9), np.float64), np.empty((blocks, 3), np.int64)
        tol = kernel.check_tolerance
        judge(device["x"], device["w"], y, np.int64(total), np.float64(tol.atol), np.float64(tol.rtol),
              drv.Out(sums), drv.Out(counts), block=(CHECK_THREADS, 1, 1), grid=(blocks, 1, 1))
        parts = [{"diff2": s[0], "ref2": s[1], "max_abs": s[2], "max_rel": s[3], "max_scaled": s[4],
                  "worst_ratio": s[5], "worst_got": s[6], "worst_ref": s[7], "worst_bound": s[8],
                  "bad": int(n[0]), "unwritten": int(n[1]), "worst": int(n[2])}
                 for s, n in zip(sums.tolist(), counts.tolist(), strict=True)]
        return verdict(parts, total, shape, kernel.precision, "full", tolerance=tol)

    def _resident(self, functions, launches: list[Launch]) -> list[Launch]:
        """A persistent launch's grid: no more blocks than this GPU holds at once (each loops over the tiles), a
        multiple of launch.persistent."""
        fitted = []
        for func, launch in zip(functions, launches, strict=True):
            if launch.persistent:
                regs = func.attribute("num_regs")
                smem = func.attribute("shared_size_bytes") + launch.dynamic_smem
                per_sm = theoretical_occupancy(self.limits, launch.threads_per_block, regs, smem).blocks_per_sm
                every = launch.persistent
                blocks = min(launch.grid[0], max(every, self.limits.sm_count * max(1, per_sm) // every * every))
                launch = dataclasses.replace(launch, grid=(blocks, *launch.grid[1:]))
            fitted.append(launch)
        return fitted

    def _resources(self, result: RunResult, functions, launches: list[Launch]) -> None:
        several = len(launches) > 1
        for func, launch in zip(functions, launches, strict=True):
            prefix = RunResult.kernel_prefix(launch.kernel, several)
            regs = func.attribute("num_regs")
            static = func.attribute("shared_size_bytes")
            occ = theoretical_occupancy(self.limits, launch.threads_per_block, regs, static + launch.dynamic_smem)
            result.add(prefix + "registers", regs, "regs/thread")
            result.add(prefix + "smem_static_bytes", static, "B")
            result.add(prefix + "smem_dynamic_bytes", launch.dynamic_smem, "B")
            result.add(prefix + "local_bytes", func.attribute("local_size_bytes"), "B")
            result.add(prefix + "threads_per_block", launch.threads_per_block)
            result.add(prefix + "grid_blocks", launch.grid[0] * launch.grid[1] * launch.grid[2])
            result.add(prefix + "blocks_per_sm", occ.blocks_per_sm)
            result.add(prefix + "theoretical_occupancy", round(100 * occ.occupancy, 2), "%")
            result.environment[prefix + "occupancy_limited_by"] = occ.limited_by

    def _execute(self, kernel, problem, module, functions, launches, job: Job, result) -> None:
        io = host_dtype(kernel.io)  # x, w and y in device memory; the reference reads float32 copies of the same values
        x, w = make_inputs(problem, job.seed, kernel.io)
        out_shape = kernel.output_shape(problem.B)
        out_elems = int(np.prod(out_shape))
        # Inputs that fit in L2 would be timed from the cache: rotate over several copies.
        l2 = getattr(drv.device_attribute, "L2_CACHE_SIZE", None)
        l2_bytes = self.device.get_attribute(l2) if l2 is not None else 64 << 20
        sets = max(1, min(32, math.ceil(CACHE_ROTATION_BYTES * l2_bytes / problem.min_bytes(kernel.io))))
        workspace = {name: drv.mem_alloc(4 * count) for name, count in kernel.workspace(problem.B).items()}
        buffers = []
        for _ in range(sets):
            y = drv.mem_alloc(out_elems * io.itemsize)
            buffers.append({"x": drv.to_device(x), "w": drv.to_device(w), "y": y})
        reference = buffers[0] if io == np.float32 else {"x": drv.to_device(as_float32(x, kernel.io)),
                                                         "w": drv.to_device(as_float32(w, kernel.io))}
        for symbol, host in kernel.constant_symbols.items():
            ptr, size = module.global_symbol(symbol)
            data = {"w": w}[host]
            if size != data.nbytes:
                raise RuntimeError(f"{symbol}: {size} bytes on the device, {data.nbytes} on the host")
            drv.memcpy_htod(ptr, data)

        def launch_all(bufs) -> None:
            self._launch(functions, launches, {**workspace, **bufs}, problem.B)

        # Correctness: poison the output with NaN, run once, compare with the reference.
        if io.itemsize == 2:  # a 16-bit NaN: half's, or bf16's
            drv.memset_d16(buffers[0]["y"], 0x7FC0 if kernel.io == "bfloat16" else 0x7E00, out_elems)
        else:
            drv.memset_d32(buffers[0]["y"], 0x7FC00000, out_elems)
        launch_all(buffers[0])
        self.context.synchronize()
        result.judge(self._check(kernel, problem, reference, buffers[0]["y"], job))

        # Timing: warm-up, then one event pair per repeat, queued behind the hold kernel; median, min, max.
        enqueue_us = []
        for i in range(job.warmup):
            t0 = time.perf_counter()
            launch_all(buffers[i % sets])
            enqueue_us.append(1e6 * (time.perf_counter() - t0))
            self.context.synchronize()
        hold_us = max(HOLD_US, 4 * enqueue_us[-1] if enqueue_us else 0.0)  # the last: the first also loads the module
        hold = self._hold()
        start, end = drv.Event(), drv.Event()
        times, exposed = [], 0
        for i in range(job.repeats):
            hold(np.uint64(1000 * hold_us), block=(1, 1, 1), grid=(1, 1, 1))
            t0 = time.perf_counter()
            start.record()
            launch_all(buffers[i % sets])
            end.record()
            exposed += 1e6 * (time.perf_counter() - t0) > hold_us  # the GPU may have idled between the events
            end.synchronize()
            times.append(start.time_till(end))
        how = ", the later ones programmatic" if self._programmatic(launches) else ""
        result.environment["timing"] = (f"CUDA events around the launches{how}, queued behind a {hold_us:.0f} us "
                                        f"hold kernel; host enqueue outlasted it in {exposed} of {job.repeats}")
        median = statistics.median(times)
        result.add("time_ms", median, "ms")
        result.add("time_ms_min", min(times), "ms")
        result.add("time_ms_max", max(times), "ms")
        result.add("repeats", job.repeats)
        result.add("input_sets", sets)
        result.add("gflops", problem.flops / (median * 1e-3) / 1e9, "GFLOP/s")
        result.add("gbps", problem.min_bytes(kernel.io) / (median * 1e-3) / 1e9, "GB/s")
        if len(launches) > 1:
            self._time_each(functions, launches, workspace, buffers, problem, job, hold, hold_us, result)
        for buf in workspace.values():
            buf.free()
        streams = kernel.params.get("streams", 0)
        if streams:
            self._time_transfers(kernel, problem, functions, x, w, buffers[0], reference, streams, job, result)
        for bufs in buffers + ([] if reference is buffers[0] else [reference]):
            for buf in bufs.values():
                buf.free()

    def _time_each(self, functions, launches: list[Launch], workspace, buffers, problem, job: Job, hold,
                   hold_us: float, result: RunResult) -> None:
        """Each launch of a several-kernel variant timed alone (`<kernel>.time_ms`, the median of up to
        LAUNCH_REPEATS), so that a layer's time splits into its copies and its GEMM: where it goes, and which
        part one version saved. A kernel launched more than once gets the sum of its launches' medians."""
        start, end = drv.Event(), drv.Event()
        medians: dict[str, float] = {}
        for func, launch in zip(functions, launches, strict=True):
            times = []
            for i in range(min(job.repeats, LAUNCH_REPEATS)):
                hold(np.uint64(1000 * hold_us), block=(1, 1, 1), grid=(1, 1, 1))
                start.record()
                self._launch([func], [launch], {**workspace, **buffers[i % len(buffers)]}, problem.B)
                end.record()
                end.synchronize()
                times.append(start.time_till(end))
            prefix = RunResult.kernel_prefix(launch.kernel, True)
            medians[prefix] = medians.get(prefix, 0.0) + statistics.median(times)
        for prefix, ms in medians.items():
            result.add(prefix + "time_ms", ms, "ms")

    def _time_transfers(self, kernel, problem, functions, x, w, device: dict, reference: dict, streams: int,
                        job: Job, result: RunResult) -> None:
        """The whole layer from host to host: copy x in, run the kernels, copy y out, with the batch split into
        `streams` chunks on as many streams so one chunk's copies overlap another's kernels; timed against
        the same work on one stream (copies and kernels in series) and each copy alone, in this run. Host
        buffers are page-locked (copies from pageable memory cannot overlap). Weights stay on the device."""
        out_shape = kernel.output_shape(problem.B)
        x_host = drv.pagelocked_empty(x.shape, x.dtype)
        x_host[...] = x
        y_host = drv.pagelocked_empty(out_shape, x.dtype)
        x_image, y_image = x[0].nbytes, int(np.prod(out_shape[1:])) * x.dtype.itemsize

        def plan(count: int) -> list[tuple]:
            """Per stream: (stream, first image, images, launches, workspace); chunks differ by one image at most."""
            parts, first = [], 0
            for i in range(count):
                images = problem.B // count + (1 if i < problem.B % count else 0)
                space = {name: drv.mem_alloc(4 * n) for name, n in kernel.workspace(images).items()}
                parts.append((drv.Stream(), first, images, self._resident(functions, kernel.launches(images)), space))
                first += images
            return parts

        def pipeline(parts) -> None:
            for stream, first, images, launches, space in parts:
                x_dev, y_dev = int(device["x"]) + first * x_image, int(device["y"]) + first * y_image
                drv.memcpy_htod_async(x_dev, x_host[first:first + images], stream)
                named = {**space, "x": np.uintp(x_dev), "w": device["w"], "y": np.uintp(y_dev)}
                self._launch(functions, launches, named, images, stream)
                drv.memcpy_dtoh_async(y_host[first:first + images], y_dev, stream)

        def timed(fn, parts) -> float:
            """Median ms of fn(parts) from one event on the first stream to the last stream's end."""
            head, times = parts[0][0], []
            for i in range(job.warmup + job.repeats):
                start, stop = drv.Event(), drv.Event()
                start.record(head)
                for stream, *_ in parts[1:]:
                    stream.wait_for_event(start)
                fn(parts)
                for stream, *_ in parts[1:]:
                    done = drv.Event()
                    done.record(stream)
                    head.wait_for_event(done)
                stop.record(head)
                stop.synchronize()
                if i >= job.warmup:
                    times.append(start.time_till(stop))
            return statistics.median(times)

        def release(parts) -> None:  # one plan's workspaces at a time on the device
            for *_, space in parts:
                for buf in space.values():
                    buf.free()

        serial = plan(1)
        stream0 = serial[0][0]
        h2d = timed(lambda _: drv.memcpy_htod_async(device["x"], x_host, stream0), serial)
        d2h = timed(lambda _: drv.memcpy_dtoh_async(y_host, device["y"], stream0), serial)
        serial_ms = timed(pipeline, serial)
        release(serial)
        split = plan(streams)
        y_host.fill(np.nan)
        pipelined_ms = timed(pipeline, split)
        release(split)
        result.add("h2d_ms", h2d, "ms")
        result.add("d2h_ms", d2h, "ms")
        result.add("h2d_gbps", x_host.nbytes / (h2d * 1e-3) / 1e9, "GB/s")
        result.add("d2h_gbps", y_host.nbytes / (d2h * 1e-3) / 1e9, "GB/s")
        result.add("pipeline_serial_ms", serial_ms, "ms")
        result.add("pipeline_ms", pipelined_ms, "ms")
        result.add("pipeline_speedup", serial_ms / pipelined_ms, "x")
        # what the split run left in y_host, against the reference; the metrics stay the first run's
        y_dev = drv.to_device(np.asarray(y_host))
        try:
            check = self._check(kernel, problem, reference, y_dev, job)
        finally:
            y_dev.free()
        if not check.passed and result.status == "passed":
            result.status = "wrong_result"
            result.reason = f"with the batch split over {streams} streams: {check.reason}"


def check_source(problem, output: str, io: str) -> str:
    """The source of the check kernel that judges a run's `output` ("conv" or "conv_relu_pool") held in `io`
    ("float32", "float16" or "bfloat16") on this problem (cuda_templates/check.cu.j2)."""
    return template_environment().get_template("check.cu.j2").render(
        B=problem.B, C=problem.C, M=problem.M, H=problem.H, W=problem.W, K=problem.K, pad=problem.pad,
        stride=problem.stride, out_h=problem.Hout, out_w=problem.Wout, pool=output == "conv_relu_pool",
        out_t={"float16": "__half", "bfloat16": "__nv_bfloat16"}.get(io, "float"), threads=CHECK_THREADS)


def device_limits(dev) -> DeviceLimits:
    """The device's own limits, read through the driver; the sm table fills what it lacks."""
    a = drv.device_attribute
    major, minor = dev.compute_capability()
    base = KNOWN_DEVICES.get(f"sm_{major}{minor}", KNOWN_DEVICES["sm_90"])

    def attr(name: str, default: int) -> int:
        which = getattr(a, name, None)
        return dev.get_attribute(which) if which is not None else default

    return DeviceLimits(
        name=dev.name(),
        compute_capability=(major, minor),
        sm_count=attr("MULTIPROCESSOR_COUNT", base.sm_count),
        max_threads_per_block=attr("MAX_THREADS_PER_BLOCK", base.max_threads_per_block),
        max_block_dims=(attr("MAX_BLOCK_DIM_X", 1024), attr("MAX_BLOCK_DIM_Y", 1024), attr("MAX_BLOCK_DIM_Z", 64)),
        max_grid_dims=(attr("MAX_GRID_DIM_X", 2**31 - 1), attr("MAX_GRID_DIM_Y", 65535),
                       attr("MAX_GRID_DIM_Z", 65535)),
        smem_per_block=attr("MAX_SHARED_MEMORY_PER_BLOCK", base.smem_per_block),
        smem_per_block_optin=attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", base.smem_per_block_optin),
        smem_per_sm=attr("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", base.smem_per_sm),
        regs_per_sm=attr("MAX_REGISTERS_PER_MULTIPROCESSOR", base.regs_per_sm),
        max_threads_per_sm=attr("MAX_THREADS_PER_MULTIPROCESSOR", base.max_threads_per_sm),
        max_blocks_per_sm=attr("MAX_BLOCKS_PER_MULTIPROCESSOR", base.max_blocks_per_sm),
        const_bytes=attr("TOTAL_CONSTANT_MEMORY", base.const_bytes),
        warp_size=attr("WARP_SIZE", 32),
    )


def _compile_into_cache(source: str, arch: str, folder: str) -> None:
    from pycuda.compiler import compile as nvcc_compile

    try:
        nvcc_compile(source, options=list(COMPILE_OPTIONS), no_extern_c=True, arch=arch, cache_dir=folder)
    except Exception:  # noqa: BLE001 - the run compiles it again and reports the error with the result
        pass
