"""The variant families: the code behind the `family` of each [variants.NAME] table in variants.toml
(direct, shared tiles, register tiles, implicit GEMM and its fused, im2col and async forms): how each checks a
layer, extends its template's context and launches its kernels, and the helpers the tensor-core families
(tensor_cores.py: WMMA, mma.sync, wgmma) share with them. The transform-domain families (Winograd, FFT) are in
transforms.py; variants.py maps each family name to its class.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import LimitError
from .limits import check_threads
from .problems import Problem
from .variant_types import GENERIC_LIMITS, Kernel, Launch, Variant


@dataclass(frozen=True)
class SharedTileVariant(Variant, family="shared_tile"):
    """The direct family with the block's input tile (+ K-1 halo, rows optionally padded) staged in
    shared memory, and the filter too when the variant fixes weights = shared."""

    def smem_floats(self, problem: Problem, params: dict) -> int:
        tile_in = (params["tile"] - 1) * problem.stride + problem.K
        floats = tile_in * (tile_in + (1 if params["pad_row"] else 0))
        if self.fixed["weights"] == "shared":
            floats += problem.C * problem.K * problem.K
        return floats


@dataclass(frozen=True)
class RegTileVariant(Variant, family="regtile"):
    """Direct convolution, register-blocked: a thread computes `outputs` consecutive outputs of a row
    for every output channel, or for `channels` of them (blockIdx.z picks which); a block computes up to
    `rows` whole output rows (an image's rows spread evenly over its blocks) of `images` images in turn,
    staging the input rows (+ halo) of one (image, channel) step in shared memory while the previous step
    computes; weights live in constant memory so most FMAs take the weight as an immediate constant operand.
    With stride S a thread's window of a row is (outputs - 1) * S + K inputs, and a block stages the
    (rows - 1) * S + K input rows its output rows read (a 3-channel stride-2 stem).
    A layer of few pixels and many channels (k7net-conv2: 16x16 outputs, 24 channels) has too few threads
    with all channels each: 128 warps for 132 SMs at outputs=4."""

    # Sampled simulation: 32 one-warp blocks an SM start in step and fall out of it over several waves, which get
    # faster until the seventh (regtile-first on SM7_QV100_small: 53.5 k -> 48.3 k cycles a wave), and a sample's
    # drain grows with it. Samples of 1, 2, 3 waves read +10.3 % (that case) and -9.3 % (regtile-1x1, SM7_QV100);
    # of 2, 3, 5 waves +2.1 % and -2.8 %, under their bounds (benchmarks/results/sampling-regtile-2026-11-27.md).
    SAMPLE_WAVES = (2.0, 3.0, 5.0)
    # Its rate past the largest sample may then be up to that speed-up (9.7 %) off: regtile on 3 -> 6 channels at
    # 12 waves read +7.31 % under the 6 % floor's 5.40 % (benchmarks/results/sampling-widened-2026-11-29.md).
    SAMPLE_DRIFT = 0.10
    MAX_ACCUMULATORS = 128  # channels x outputs floats per thread, beyond which registers spill
    UNROLL_FMAS = 4096  # channels are unrolled (weights as immediate operands) up to this many FMAs; past it
    # the code outgrows the instruction cache (fmnist-conv2 with 6,272 unrolled FMAs ran 8x slower on the H200)

    @staticmethod
    def block_x(problem: Problem, params: dict) -> int:
        return math.ceil(problem.Wout / params["outputs"])

    @staticmethod
    def block_rows(problem: Problem, params: dict) -> int:
        """`rows` at most, the same in every block: rows=16 on 34 output rows is 3 blocks of 12, not 16+16+2."""
        return math.ceil(problem.Hout / math.ceil(problem.Hout / params["rows"]))

    @staticmethod
    def stages(problem: Problem, params: dict) -> int:
        return 2 if problem.C * params["images"] > 1 else 1

    @staticmethod
    def group(problem: Problem, params: dict) -> int:
        """Output channels of a thread (and block): `channels`, or all M for 0."""
        return params["channels"] or problem.M

    def smem_floats(self, problem: Problem, params: dict) -> int:
        in_w = (self.block_x(problem, params) * params["outputs"] - 1) * problem.stride + problem.K
        if params["outputs"] % 4 == 0:
            in_w = (in_w + 6) // 4 * 4  # 16-byte aligned rows (see the template)
        in_h = (self.block_rows(problem, params) - 1) * problem.stride + problem.K
        tile = self.stages(problem, params) * in_h * in_w
        weights = self.group(problem, params) * problem.C * problem.K * problem.K
        return tile + (weights if params["weights"] == "shared" else 0)

    def check(self, problem: Problem, params: dict) -> None:
        check_threads((self.block_x(problem, params), self.block_rows(problem, params), 1), GENERIC_LIMITS,
                      "use more outputs per thread or fewer rows per block")
        if problem.M % self.group(problem, params):
            divisors = [str(g) for g in self.param("channels").choices if g and problem.M % g == 0]
            raise LimitError("output channels of a regtile block (channels, a divisor of M)",
                             f"channels={params['channels']}", f"a divisor of M={problem.M}",
                             "use channels=0 (all)" + (f" or one of {', '.join(divisors)}" if divisors else ""))
        accumulators = self.group(problem, params) * params["outputs"]
        if accumulators > self.MAX_ACCUMULATORS:
            raise LimitError("accumulators per thread (channels x outputs)", str(accumulators),
                             str(self.MAX_ACCUMULATORS), "use fewer outputs or channels per thread, or a GEMM "
                             "variant (implicit_gemm) for layers with many output channels")
        static = 4 * self.smem_floats(problem, params)
        if static > 48 * 1024:
            raise LimitError("static shared memory per block", f"{static:,} bytes", "49,152 bytes",
                             "use a smaller block" + (", fewer channels per block or weights=constant"
                                                      if params["weights"] == "shared" else ""))

    def extra_context(self, problem: Problem, params: dict) -> dict:
        group = self.group(problem, params)
        fmas = problem.C * group * problem.K * problem.K * params["outputs"]
        outputs = params["outputs"]
        # y stored in whole 16- or 8-byte pieces when the row length and a thread's run allow it
        vector = next(v for v in (4, 2, 1) if outputs % v == 0 and problem.Wout % v == 0)
        return {"unroll_channels": params["weights"] == "constant" and fmas <= self.UNROLL_FMAS, "group": group,
                "block_x": self.block_x(problem, params), "block_rows": self.block_rows(problem, params),
                "stages": self.stages(problem, params), "store_vector": vector}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params = kernel.problem, kernel.params
        args = ("x", "y", "batch") if params["weights"] == "constant" else ("x", "w", "y", "batch")
        rows = self.block_rows(p, params)
        grid = (math.ceil(p.Hout / rows), math.ceil(batch / params["images"]), p.M // self.group(p, params))
        return [Launch(kernel=f"conv2d_{self.name}", grid=grid, block=(self.block_x(p, params), rows, 1),
                       dynamic_smem=0, args=args)]


@dataclass(frozen=True)
class ImplicitGemmVariant(Variant, family="implicit_gemm"):
    """The convolution as one GEMM (output channels x output pixels x C*K*K), im2col done while loading
    tiles: one kernel. Any layer shape; best where M and C*K*K are large (toycnn). precision fp16: half
    tiles and half2 FMAs (twice the fp32 rate), float accumulation after every k step."""

    def check(self, problem: Problem, params: dict) -> None:
        pass  # 256 threads and static shared memory under 48 KB for every tile choice

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "float32"

    def features(self, params: dict) -> tuple[str, ...]:
        return super().features(params) + (("half2:",) if params["precision"] == "fp16" else ())

    @staticmethod
    def tile_m(params: dict) -> int:
        """Output channels of a block: `tile_m` where the variant has it and sets it, else the square tile."""
        return params.get("tile_m") or params["tile"]

    def extra_context(self, problem: Problem, params: dict) -> dict:
        a_per_thread = self.tile_m(params) * params["bk"] // 256
        # weights read as float4 when a thread's k run is whole float4s of 16-byte aligned rows
        vector_a = (problem.C * problem.K * problem.K) % 4 == 0 and a_per_thread % 4 == 0
        return {"pool": False, "vector_a": vector_a, "bm": self.tile_m(params)}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """The kernel launches of one run on `batch` images, in order: name, grid, block, dynamic
        shared memory and argument names (x, w, y, batch, or a workspace buffer)."""
        p, tile = kernel.problem, kernel.params["tile"]
        columns = _columns(p, batch)
        grid = (math.ceil(columns / tile), math.ceil(p.M / self.tile_m(kernel.params)), 1)
        return [Launch(kernel=f"conv2d_{self.name}", grid=grid,
                       block=(256, 1, 1), dynamic_smem=0, args=("x", "w", "y", "batch"))]


@dataclass(frozen=True)
class FusedPoolVariant(ImplicitGemmVariant, family="conv_relu_pool"):
    """conv + ReLU + 2x2 max-pool in one kernel: the implicit GEMM with its columns ordered so that
    each group of 4 is one pooling window; a thread pools its TN/4 windows x TM channels in registers."""

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**super().extra_context(problem, params), "pool": True}

    def check(self, problem: Problem, params: dict) -> None:
        if problem.Hout < 2 or problem.Wout < 2:
            raise LimitError("conv output size for a 2x2 max-pool", f"{problem.Hout}x{problem.Wout}", "2x2 or more",
                             "use a larger layer")

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """The kernel launches of one run on `batch` images, in order: name, grid, block, dynamic
        shared memory and argument names (x, w, y, batch, or a workspace buffer)."""
        p, tile = kernel.problem, kernel.params["tile"]
        _columns(p, batch)  # the 32-bit column limit of the GEMM
        columns = 4 * batch * (p.Hout // 2) * (p.Wout // 2)  # one group of 4 per pooled output
        return [Launch(kernel=f"conv2d_{self.name}", grid=(math.ceil(columns / tile), math.ceil(p.M / tile), 1),
                       block=(256, 1, 1), dynamic_smem=0, args=("x", "w", "y", "batch"))]


@dataclass(frozen=True)
class Im2colGemmVariant(ImplicitGemmVariant, family="im2col_gemm"):
    """im2col into a workspace, the GEMM on it, and a permute into y's layout: three kernels."""

    def check(self, problem: Problem, params: dict) -> None:
        kdim = problem.C * problem.K * problem.K
        if kdim > 65535:
            raise LimitError("im2col rows C*K*K (one grid row each)", f"{kdim:,}", "65,535",
                             "use implicit_gemm, which never writes the im2col matrix")

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p = kernel.problem
        columns = _columns(p, batch)
        return {"col": p.C * p.K * p.K * columns, "gemm": p.M * columns}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """The kernel launches of one run on `batch` images, in order: name, grid, block, dynamic
        shared memory and argument names (x, w, y, batch, or a workspace buffer)."""
        p, tile = kernel.problem, kernel.params["tile"]
        columns = _columns(p, batch)
        name = f"conv2d_{self.name}"
        return [
            Launch(kernel=f"{name}_im2col", grid=(math.ceil(columns / 256), p.C * p.K * p.K, 1), block=(256, 1, 1),
                   dynamic_smem=0, args=("x", "col", "batch")),
            Launch(kernel=f"{name}_gemm", grid=(math.ceil(columns / tile), math.ceil(p.M / tile), 1),
                   block=(256, 1, 1), dynamic_smem=0, args=("col", "w", "gemm", "batch")),
            Launch(kernel=f"{name}_permute", grid=(math.ceil(p.Hout * p.Wout / 256), p.M, batch), block=(256, 1, 1),
                   dynamic_smem=0, args=("gemm", "y", "batch")),
        ]


@dataclass(frozen=True)
class ImplicitGemmAsyncVariant(Variant, family="implicit_gemm_async"):
    """fp32 implicit GEMM with k ordered tap-major, so a k step is BK channels of one tap: each thread's column
    is decomposed once and a step costs one bounds test, no division (the route that made wmma_nhwc fast),
    with x read where it lies by cp.async copies (4 bytes, or 16 of four pixels on a 1x1 stride-1 layer) into a
    multi-stage pipeline; weights reordered once
    (wt[k][m], a small kernel). split > 1 divides the k steps among blocks that add into y (layers with few
    output tiles and long k: the 7x7 and 14x14 ResNet layers). tile_m=256: 16 x 8 outputs a thread, one block an
    SM, fewer shared-memory reads per FMA, for layers with many output channels (toycnn). stream_k: as many
    blocks as fit at once share the k steps of all tiles evenly (the 1x1 layers at 7x7, whose tiles fill 0.79 of a
    wave)."""

    def check(self, problem: Problem, params: dict) -> None:
        # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch
        if params["stream_k"] and params["split"] > 1:
            raise LimitError(f"{self.name} stream_k (it shares out the k steps itself)", f"split={params['split']}",
                             "split=1", "use stream_k with split=1, or split-K without stream_k")

    def features(self, params: dict) -> tuple[str, ...]:
        return super().features(params) + (("stream_k:",) if params["stream_k"] else ())

    @staticmethod
    def dims(problem: Problem, params: dict) -> tuple[int, int]:
        """Channels padded to a multiple of BK, output channels to a multiple of 4 (wt's row length)."""
        return _round_up(problem.C, params["bk"]), _round_up(problem.M, 4)

    def extra_context(self, problem: Problem, params: dict) -> dict:
        cp, mp = self.dims(problem, params)
        return {"bm": params["tile_m"], "bn": params["tile_n"], "cp": cp, "mp": mp,
                "hw4": (problem.Hout * problem.Wout) % 4 == 0, "vector": vector_columns(problem)}

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p = kernel.problem
        cp, mp = self.dims(p, kernel.params)
        return {"wt": cp * p.K * p.K * mp}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params = kernel.problem, kernel.params
        cp, mp = self.dims(p, params)
        columns = _columns(p, batch)
        name = f"conv2d_{self.name}"
        smem = 4 * params["stages"] * params["bk"] * (params["tile_m"] + params["tile_n"])
        weights = Launch(kernel=f"{name}_w", grid=(math.ceil(cp * p.K * p.K * mp / 256), 1, 1),
                         block=(256, 1, 1), args=("w", "wt"))
        tiles = (math.ceil(columns / params["tile_n"]), math.ceil(p.M / params["tile_m"]))
        gemm = Launch(kernel=name, grid=(*tiles, params["split"]), block=(256, 1, 1), dynamic_smem=smem,
                      args=("x", "wt", "y", "batch"))
        if params["stream_k"]:  # a block a k step of a tile at most; the launcher starts as many as fit at once
            steps = p.K * p.K * cp // params["bk"]
            gemm = dataclasses.replace(gemm, grid=(tiles[0] * tiles[1] * steps, 1, 1), persistent=1)
        return _split_k_launches([weights], gemm, kernel, batch)


def vector_columns(problem: Problem) -> bool:
    """Whether four consecutive GEMM columns are four consecutive, 16-byte aligned input pixels of one image (a 1x1
    layer with stride 1, no padding, HW % 4 == 0): the kernels that read x in place then copy 16 bytes at a time."""
    return problem.K == 1 and problem.stride == 1 and problem.pad == 0 and (problem.H * problem.W) % 4 == 0


TENSOR_PRECISIONS = {"fp16": "float16", "bf16": "bfloat16", "tf32": "tf32"}  # a tensor-core param -> its precision


def tensor_precision(precision: str) -> str:
    """What a tensor-core kernel's inputs are rounded to (its check's tolerance): float16, bfloat16 or tf32."""
    return TENSOR_PRECISIONS[precision]


IO16 = {"float16": ("half", "fp16"), "bfloat16": ("__nv_bfloat16", "bf16")}  # 16-bit io: its CUDA type, precision


def io16(params: dict) -> bool:
    """x, w and y 16-bit in device memory (io=float16 or io=bfloat16): the kernels' half_io paths."""
    return params.get("io") in IO16


def t16(params: dict) -> str:
    """The CUDA type of a 16-bit io's tensors (half where io is not 16-bit: the templates name it only then)."""
    return IO16.get(params.get("io"), IO16["float16"])[0]


def input_bytes(precision: str) -> int:
    """Bytes of a tensor-core input element: 2 (fp16, bf16), 4 (TF32 kept in a float)."""
    return 4 if precision == "tf32" else 2


# What to use instead, by (io, precision) where the two do not go together
_IO16_HINTS = {("float16", "tf32"): "use io=float32 for TF32",
               ("float16", "bf16"): "use io=float32 for bf16, or io=bfloat16 for bf16",
               ("bfloat16", "tf32"): "use io=float32 for TF32",
               ("bfloat16", "fp16"): "use io=float16 for fp16 (or io=float32)"}


def _check_half_io(variant: str, params: dict) -> None:
    """io=float16 (half x, w, y) computes in fp16, io=bfloat16 in bf16."""
    io, precision = params["io"], params["precision"]
    need = IO16[io][1]
    if precision != need:
        what = "half tensors in, half out" if io == "float16" else "bf16 tensors in, bf16 out"
        raise LimitError(f"{variant} io={io} ({what})", f"precision={precision}", f"precision={need}",
                         _IO16_HINTS[io, precision])


def _round_up(n: int, multiple: int) -> int:
    """n padded to a multiple (channels to the GEMM's k step, output channels to a row of 16 bytes)."""
    return multiple * math.ceil(n / multiple)


def _weights_in_place(problem: Problem, params: dict, kdim: int) -> bool:
    """w of a 1x1 layer whose C needs no padding (kdim == C) already is the GEMM's wh[m][c] where it is half
    (io=float16) or the kernel computes in TF32: the tensor-core kernels read it where it lies, one launch fewer
    (3-6 us of a 25-50 us layer: measured with ncu on the H100, 1x1 layers at 7 and 14). TF32 tensor cores read a
    float's top 19 bits, so w read in place is truncated to TF32 where the copy rounded it to nearest: a bias of at
    most 2^-10 of each weight, under a quarter of the TF32 check's tolerance (4e-3 of sum |x*w|)."""
    return (io16(params) or params.get("precision") == "tf32") and problem.K == 1 \
        and kdim == problem.C


def _weight_copy(gemm: str, problem: Problem, cp: int) -> Launch:
    """The launch of a template's `_w` kernel (_async.cu.j2 channel_last_w): w [M][C][K][K] -> wh [M][K][K][cp],
    a warp for each 32 channels of each output channel."""
    warps = _weight_copy_warps(problem.K)
    return Launch(kernel=f"{gemm}_w", grid=(math.ceil(problem.M * math.ceil(cp / 32) / warps), 1, 1),
                  block=(32, warps, 1), args=("w", "wh"))


def _weight_copy_warps(k: int) -> int:
    """Warps a block of the weight copy: 8 while their shared tiles (32 channels x K*K, odd, floats a warp) stay
    under 48 KB of static shared memory (K <= 5), else 1 (7x7 and 11x11 first layers: small weights)."""
    return 8 if 8 * 32 * ((k * k) | 1) * 4 <= 48 * 1024 else 1


def _half_epilogue_smem(bm: int, bn: int) -> int:
    """Shared bytes of the half-y epilogue (mma_store_half): 8 warps' (bm / 2) x (bn / 4 + 8) half tiles."""
    return 8 * (bm // 2) * (bn // 4 + 8) * 2


def _adds(params: dict) -> bool:
    """Split-K or stream-K: blocks add their partial sums into y (or into float32 sums for half y)."""
    return params.get("split", 1) > 1 or params.get("stream_k", False)


def _split_sums(kernel: Kernel, batch: int) -> dict[str, int]:
    """Split-K or stream-K into half y: the pieces add into float32 sums `acc`, rounded to half once at the end
    (adding partial sums in half would round each)."""
    if not io16(kernel.params) or not _adds(kernel.params):
        return {}
    p = kernel.problem
    return {"acc": batch * p.M * p.Hout * p.Wout}


def _split_k_launches(before: list[Launch], gemm: Launch, kernel: Kernel, batch: int) -> list[Launch]:
    """The operand copies, then the GEMM; with split-K or stream-K (blocks adding into y), y zeroed between;
    with half y, the blocks add into float32 sums instead, rounded into y by a last kernel."""
    if not _adds(kernel.params):
        return [*before, gemm]
    p = kernel.problem
    outputs = batch * p.M * p.Hout * p.Wout
    grid = (min(math.ceil(outputs / 1024), 4096), 1, 1)  # 256 threads of 4 sums each (a grid-stride loop past that)
    sums = "acc" if _split_sums(kernel, batch) else "y"
    zero = Launch(kernel=f"{gemm.kernel}_zero", grid=grid, block=(256, 1, 1), args=(sums, "batch"))
    gemm = dataclasses.replace(gemm, args=tuple(sums if a == "y" else a for a in gemm.args))
    if sums == "y":
        return [*before, zero, gemm]
    return [*before, zero, gemm, Launch(kernel=f"{gemm.kernel}_half", grid=grid, block=(256, 1, 1),
                                        args=("acc", "y", "batch"))]


def _columns(problem: Problem, batch: int, pixels: int = 0) -> int:
    """GEMM columns (output pixels of the batch, or `pixels` an image); the GEMM kernels index them with 32-bit
    ints."""
    columns = batch * (pixels or problem.Hout * problem.Wout)
    if columns >= 2**31:
        what = f"B x {pixels} (the gathered pixels of an image)" if pixels else "B x HOUT x WOUT"
        raise LimitError(f"output pixels per launch, {what} (32-bit GEMM column index)", f"{columns:,}",
                         f"{2**31 - 1:,}", "run a smaller batch (--batch) or split it")
    return columns
