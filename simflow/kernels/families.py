"""The variant families: the code behind the `family` of each [variants.NAME] table in variants.toml
(direct, shared tiles, register tiles, implicit GEMM and its fused, im2col, WMMA, mma.sync, wgmma and async
forms): how each checks a layer, extends its template's context and launches its kernels. The transform-domain
families (Winograd, FFT) are in transforms.py; variants.py maps each family name to its class.
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
class SharedTileVariant(Variant):
    """The direct family with the block's input tile (+ K-1 halo, rows optionally padded) staged in
    shared memory, and the filter too when the variant fixes weights = shared."""

    def smem_floats(self, problem: Problem, params: dict) -> int:
        tile_in = (params["tile"] - 1) * problem.stride + problem.K
        floats = tile_in * (tile_in + (1 if params["pad_row"] else 0))
        if self.fixed["weights"] == "shared":
            floats += problem.C * problem.K * problem.K
        return floats


@dataclass(frozen=True)
class RegTileVariant(Variant):
    """Direct convolution, register-blocked: a thread computes `outputs` consecutive outputs of a row
    for every output channel, or for `channels` of them (blockIdx.z picks which); a block computes up to
    `rows` whole output rows (an image's rows spread evenly over its blocks) of `images` images in turn,
    staging the input rows (+ halo) of one (image, channel) step in shared memory while the previous step
    computes; weights live in constant memory so most FMAs take the weight as an immediate constant operand.
    A layer of few pixels and many channels (k7net-conv2: 16x16 outputs, 24 channels) has too few threads
    with all channels each: 128 warps for 132 SMs at outputs=4."""

    # Sampled simulation: 32 one-warp blocks an SM start in step and fall out of it over several waves, which get
    # faster until the seventh (regtile-first on SM7_QV100_small: 53.5 k -> 48.3 k cycles a wave), and a sample's
    # drain grows with it. Samples of 1, 2, 3 waves read +10.3 % (that case) and -9.3 % (regtile-1x1, SM7_QV100);
    # of 2, 3, 5 waves +2.1 % and -2.8 %, under their bounds (benchmarks/results/sampling-regtile-2026-11-27.md).
    SAMPLE_WAVES = (2.0, 3.0, 5.0)
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
        in_w = self.block_x(problem, params) * params["outputs"] + problem.K - 1
        if params["outputs"] % 4 == 0:
            in_w = (in_w + 6) // 4 * 4  # 16-byte aligned rows (see the template)
        tile = self.stages(problem, params) * (self.block_rows(problem, params) + problem.K - 1) * in_w
        weights = self.group(problem, params) * problem.C * problem.K * problem.K
        return tile + (weights if params["weights"] == "shared" else 0)

    def check(self, problem: Problem, params: dict) -> None:
        _refuse_stride(self.name, problem, "its threads compute consecutive outputs from one staged input row")
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
class ImplicitGemmVariant(Variant):
    """The convolution as one GEMM (output channels x output pixels x C*K*K), im2col done while loading
    tiles: one kernel. Any layer shape; best where M and C*K*K are large (toycnn). precision fp16: half
    tiles and half2 FMAs (twice the fp32 rate), float accumulation after every k step."""

    def check(self, problem: Problem, params: dict) -> None:
        pass  # 256 threads and static shared memory under 48 KB for every tile choice

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "float32"

    def sim_unsupported(self, params: dict) -> str:
        if params["precision"] == "fp16" and not params.get("streams"):
            return ("GPGPU-Sim's PTX lexer reads the .f16x2 type as .f16 (src/cuda-sim/ptx.l, marked TODO), so a "
                    "half2 FMA computes one of its two halves; measured with the accel-sim fork dev@667834cf: "
                    "relative error 0.71 on batch3x3 (fp32 passes at 6e-8)")
        return super().sim_unsupported(params)

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
class FusedPoolVariant(ImplicitGemmVariant):
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
class Im2colGemmVariant(ImplicitGemmVariant):
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
class WmmaVariant(Variant):
    """Tensor cores (WMMA) on the implicit GEMM: fp16 inputs (m16n16k16) or TF32 (m16n16k8, GPU only),
    float accumulation. Output channels come in fragments of 16, so M must be a multiple of 16.

    fragments=shared stages tiles in shared memory and loads the fragments from there; fragments=global
    makes half copies of w and of the im2col matrix and loads every fragment from global memory (four
    kernels, slower on a GPU): the form upstream GPGPU-Sim computes correctly (simflow's probes)."""

    def check(self, problem: Problem, params: dict) -> None:
        if problem.M % 16:
            raise LimitError("output channels M for WMMA fragments (a multiple of 16)", str(problem.M),
                             f"{16 * math.ceil(problem.M / 16)} (pad the layer to it)",
                             "use implicit_gemm or regtile for this layer")
        if params.get("fragments") == "global":
            if params["precision"] != "fp16":
                raise LimitError("precision of wmma fragments=global (m16n16k16, half inputs)", "tf32", "fp16",
                                 "use fragments=shared for tf32")
            kp = 16 * math.ceil(problem.C * problem.K * problem.K / 16)
            if kp > 65535:
                raise LimitError("im2col rows C*K*K, padded to 16 (one grid row each)", f"{kp:,}", "65,535",
                                 "use fragments=shared, which never writes the im2col matrix")

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "tf32"

    def wmma_forms(self, params: dict) -> tuple[str, ...]:
        if params["precision"] != "fp16":
            return ()
        return (f"wmma_m16n16k16_row_row_f32_{params.get('fragments', 'shared')}",)

    def sim_unsupported(self, params: dict) -> str:
        if params.get("streams"):
            return super().sim_unsupported(params)
        if params["precision"] == "tf32":
            return ("TF32 WMMA (m16n16k8, sm_80+) is not in GPGPU-Sim's PTX parser, which knows wmma for f16 "
                    "shapes m16n16k16, m32n8k16, m8n32k16 only")
        return ""  # fp16: whether a build runs it is its probes' answer (wmma_forms)

    TILE = 128  # block tile, output channels x output pixels
    GLOBAL_TILE = 64  # fragments=global: block tile of its GEMM (4 warps of 32 x 32)

    def extra_context(self, problem: Problem, params: dict) -> dict:
        bk = 32 if params["precision"] == "fp16" else 16  # two buffers of each tile under 48 KB static
        a_per_thread = self.TILE * bk // 256
        return {"bm": self.TILE, "bn": self.TILE, "bk": bk,
                "vector_a": (problem.C * problem.K * problem.K) % 4 == 0 and a_per_thread % 4 == 0}

    def _padded(self, kernel: Kernel, batch: int) -> tuple[int, int, int]:
        """fragments=global: k, output channels and columns padded to the fragment and the block tile."""
        p, tile = kernel.problem, self.GLOBAL_TILE
        return (16 * math.ceil(p.C * p.K * p.K / 16), tile * math.ceil(p.M / tile),
                tile * math.ceil(_columns(p, batch) / tile))

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        if kernel.params.get("fragments") != "global":
            return super().workspace(kernel, batch)
        kp, mp, np_ = self._padded(kernel, batch)
        return {"col": math.ceil(kp * np_ / 2), "wh": math.ceil(mp * kp / 2), "gemm": mp * np_}  # half: 2 a float

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, tile = kernel.problem, self.TILE
        columns = _columns(p, batch)
        name = f"conv2d_{self.name}"
        if kernel.params.get("fragments") != "global":
            return [Launch(kernel=name, grid=(math.ceil(columns / tile), math.ceil(p.M / tile), 1),
                           block=(256, 1, 1), dynamic_smem=0, args=("x", "w", "y", "batch"))]
        kp, mp, np_ = self._padded(kernel, batch)
        return [
            Launch(kernel=f"{name}_x", grid=(math.ceil(np_ / 256), kp, 1), block=(256, 1, 1),
                   args=("x", "col", "batch")),
            Launch(kernel=f"{name}_w", grid=(math.ceil(mp * kp / 256), 1, 1), block=(256, 1, 1), args=("w", "wh")),
            Launch(kernel=name, grid=(np_ // self.GLOBAL_TILE, mp // self.GLOBAL_TILE, 1), block=(128, 1, 1),
                   args=("wh", "col", "gemm", "batch")),
            Launch(kernel=f"{name}_y", grid=(math.ceil(columns / 256), p.M, 1), block=(256, 1, 1),
                   args=("gemm", "y", "batch")),
        ]


@dataclass(frozen=True)
class WmmaNhwcVariant(WmmaVariant):
    """Tensor cores on channel-last copies of x and w (made by two small kernels), k ordered (ky, kx, c)
    so a k step is BK channels of one tap: 16-byte asynchronous copies straight into a multi-stage
    shared-memory pipeline, no per-element index arithmetic. The copies pad C with zero channels to a
    multiple of BK (3 input channels become 32: ten times the MACs of the stem, on tensor cores)."""

    def wmma_forms(self, params: dict) -> tuple[str, ...]:
        return ("wmma_m16n16k16_row_col_f32_shared",) if params["precision"] == "fp16" else ()

    def check(self, problem: Problem, params: dict) -> None:
        super().check(problem, params)
        if params["precision"] == "tf32" and (params["tile_n"] == 256 or params["bk"] == 64):
            raise LimitError("registers per thread (tf32 operands with 64 x 64 warp tiles or bk=64)", "more than 255",
                             "255 (ptxas spills to local memory)", "use tile_n=128 and bk=32 with tf32")

    @staticmethod
    def padded_channels(problem: Problem, params: dict) -> int:
        return _round_up(problem.C, params["bk"])

    @staticmethod
    def step_k(params: dict) -> int:
        """Channels a pipeline stage holds per row (the kernel's BK)."""
        return params["bk"]

    def block_m(self, params: dict) -> int:
        """Output channels of a GEMM block tile."""
        return self.TILE

    def extra_context(self, problem: Problem, params: dict) -> dict:
        vec, channels = self.x_copy_shape(problem, params)
        return {"bm": self.block_m(params), "bn": params["tile_n"], "bk": self.step_k(params),
                "cp": self.padded_channels(problem, params), "x_vec": vec, "x_channels": channels,
                "w_warps": _weight_copy_warps(problem.K)}

    def x_copy_shape(self, problem: Problem, params: dict) -> tuple[int, int]:
        """The channel-last copy's block: pixels a lane reads at once (two halves where an image's pixels come in
        pairs and none is skipped, else one) and channels (a 128-byte row of the copy where CP allows, else 32),
        16 bytes a thread's store. Against a half a load and a store, on an H100: the fp16 copy of VGG conv1_2
        99.3 -> 73.2 us, conv4_2 13.6 -> 11.3; float pairs were 1-3 % slower than one float a lane."""
        pairs = params.get("io") == "float16" and problem.H * problem.W % 2 == 0 and not self.subsample(problem)
        row = 128 // (2 if params["precision"] == "fp16" else 4)
        return (2 if pairs else 1), (row if self.padded_channels(problem, params) % row == 0 else 32)

    @staticmethod
    def subsample(problem: Problem) -> bool:
        """Whether the copy holds only the pixels a strided 1x1 window reads (mma_nhwc and wgmma_nhwc)."""
        return False

    @staticmethod
    def element_bytes(kernel: Kernel) -> int:
        return 2 if kernel.params["precision"] == "fp16" else 4

    def copy_pixels(self, problem: Problem) -> int:
        """Pixels an image of the channel-last copy of x holds: H x W, or HOUT x WOUT where it subsamples."""
        return problem.Hout * problem.Wout if self.subsample(problem) else problem.H * problem.W

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p, size = kernel.problem, self.element_bytes(kernel)
        cp = self.padded_channels(p, kernel.params)
        return {"xh": math.ceil(batch * cp * self.copy_pixels(p) * size / 4),
                "wh": math.ceil(p.M * cp * p.K * p.K * size / 4)}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, tile, tile_n = kernel.problem, self.block_m(kernel.params), kernel.params["tile_n"]
        columns = _columns(p, batch)
        cp = self.padded_channels(p, kernel.params)
        vec, channels = self.x_copy_shape(p, kernel.params)
        name = f"conv2d_{self.name}"
        return [
            Launch(kernel=f"{name}_x", grid=(math.ceil(self.copy_pixels(p) / (32 * vec)), cp // channels, batch),
                   block=(256, 1, 1), args=("x", "xh", "batch")),
            _weight_copy(name, p, cp),
            Launch(kernel=name, grid=(math.ceil(columns / tile_n), math.ceil(p.M / tile), 1), block=(256, 1, 1),
                   dynamic_smem=self.gemm_smem(kernel), args=("xh", "wh", "y", "batch")),
        ]

    def gemm_smem(self, kernel: Kernel) -> int:
        """The GEMM's dynamic shared memory: `stages` tiles of both operands, rows skewed by 16 bytes."""
        p = kernel.params
        ld = self.step_k(p) + 16 // self.element_bytes(kernel)
        return p["stages"] * (self.block_m(p) + p["tile_n"]) * ld * self.element_bytes(kernel)


@dataclass(frozen=True)
class MmaNhwcVariant(WmmaNhwcVariant):
    """Tensor cores through inline PTX mma.sync (m16n8k16 half, m16n8k8 TF32) on the same channel-last
    copies as wmma_nhwc: fragments loaded with ldmatrix, accumulators kept in registers and stored straight
    to y. Output channels past M are zero rows of the tile, so any M runs; C is padded to a multiple of BK.
    split-K as implicit_gemm_async (the 3x3 layers at 14x14 and 7x7 fill two fifths to three quarters of an H200's
    SMs with one block each); tile_n=64 for layers with few output tiles. io=float16 as mma_nchw's, on any layer.
    A 1x1 layer at stride > 1 (no padding) copies only the pixels its window reads and runs the GEMM at stride 1."""

    def check(self, problem: Problem, params: dict) -> None:
        # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch
        if params["io"] == "float16":
            _check_half_io(self.name, params)

    @staticmethod
    def step_k(params: dict) -> int:
        """bk counts halves: TF32 stages hold half as many channels, the same bytes a row (and registers: 32
        TF32 channels a stage made twice the copies per thread and spilled)."""
        return params["bk"] // (2 if params["precision"] == "tf32" else 1)

    @staticmethod
    def subsample(problem: Problem) -> bool:
        """A 1x1 layer without padding at stride > 1 reads one pixel in stride^2: the copy holds only those."""
        return problem.K == 1 and problem.pad == 0 and problem.stride > 1

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**super().extra_context(problem, params), "hw_even": (problem.Hout * problem.Wout) % 2 == 0,
                "half_io": params["io"] == "float16", "subsample": self.subsample(problem),
                "w_in_place": self.weights_in_place(problem, params)}

    def weights_in_place(self, problem: Problem, params: dict) -> bool:
        return _weights_in_place(problem, params, self.padded_channels(problem, params))

    def sim_unsupported(self, params: dict) -> str:
        return Variant.sim_unsupported(self, params) or _mma_sync_refusal(params)  # not WMMA's reasons

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        space = {**super().workspace(kernel, batch), **_split_sums(kernel, batch)}
        if self.weights_in_place(kernel.problem, kernel.params):
            del space["wh"]
        return space

    def gemm_smem(self, kernel: Kernel) -> int:
        """The GEMM's dynamic shared memory: its pipeline's stages, or the half-y epilogue's tiles if more."""
        smem = WmmaNhwcVariant.gemm_smem(self, kernel)
        if kernel.params["io"] == "float16":
            smem = max(smem, _half_epilogue_smem(self.block_m(kernel.params), kernel.params["tile_n"]))
        return smem

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        *copies, gemm = super().launches(kernel, batch)
        gemm = dataclasses.replace(gemm, grid=(*gemm.grid[:2], kernel.params.get("split", 1)))
        if self.weights_in_place(kernel.problem, kernel.params):
            copies = [launch for launch in copies if "wh" not in launch.args]
            gemm = dataclasses.replace(gemm, args=tuple("w" if a == "wh" else a for a in gemm.args))
        return _split_k_launches(copies, gemm, kernel, batch)


@dataclass(frozen=True)
class WgmmaNhwcVariant(MmaNhwcVariant):
    """Hopper's warpgroup MMA (wgmma, sm_90a) on mma_nhwc's channel-last half copies: a block of two warpgroups
    multiplies a 128 x tile_n tile with m64n{tile_n}k16 instructions (tile_m=64: both on the same 64 channels, tile_n
    / 2 pixels each, so a 64-channel layer multiplies no zero rows) that read both operands from shared memory,
    which the cp.async pipeline fills in wgmma's 128-byte swizzled layout (no ldmatrix, no register traffic for the
    operands). fp16 or TF32 inputs, float accumulation; a k step is one 128-byte row of one tap's channels (64 half,
    32 TF32). mma.sync peaks at about 640 fp16 TFLOP/s on an H200 and wgmma (cuBLAS) at 780-810: cuDNN's fp16
    convolutions run on wgmma."""

    ROW = 128  # bytes of a tile row: one period of the 128-byte swizzle
    SMEM_LIMIT = 227 * 1024  # an H100/H200 block's opt-in dynamic shared memory

    def check(self, problem: Problem, params: dict) -> None:
        if params["io"] == "float16":
            _check_half_io(self.name, params)
        if params["stream_k"] and params["split"] > 1:
            raise LimitError(f"{self.name} stream_k (it shares out the k steps itself)", f"split={params['split']}",
                             "split=1", "use stream_k with split=1, or split-K without stream_k")
        if params["persistent"] and (params["stream_k"] or params["split"] > 1):
            raise LimitError(f"{self.name} persistent (a block takes whole tiles in turn)",
                             f"split={params['split']}, stream_k={params['stream_k']}", "split=1, stream_k=false",
                             "use persistent alone, or split-K or stream-K without it")
        need = self.smem_bytes(params)
        if need > self.SMEM_LIMIT:
            tiles = f"stages={params['stages']} of {self.block_m(params)} + {params['tile_n']} rows of 128 bytes"
            if params["persistent"] and self.half_tile_bytes(params):
                tiles += f" and a {self.half_tile_bytes(params):,}-byte output tile (persistent, half y)"
            raise LimitError("shared memory per block (sm_90)", f"{need:,} bytes for {tiles}",
                             f"{self.SMEM_LIMIT:,} bytes", "use fewer stages or tile_n=128")

    def block_m(self, params: dict) -> int:
        return params["tile_m"]

    def pipeline_bytes(self, params: dict) -> int:
        """The pipeline's stages, and 1024 bytes to align them to the swizzle's period."""
        return params["stages"] * (self.block_m(params) + params["tile_n"]) * self.ROW + 1024

    def half_tile_bytes(self, params: dict) -> int:
        """The half-y epilogue's tiles: 8 warps' 16 x (pixels a warpgroup + 8) halves (none for float y)."""
        if params["io"] != "float16":
            return 0
        return 8 * 16 * (params["tile_n"] * self.block_m(params) // 128 + 8) * 2

    def smem_bytes(self, params: dict) -> int:
        """The GEMM's dynamic shared memory: the pipeline, whose stages the half-y tiles reuse once the k loop is
        done, or, in a persistent block (the next tile's copies in flight meanwhile), the tiles past the stages."""
        pipeline, tiles = self.pipeline_bytes(params), self.half_tile_bytes(params)
        return pipeline + tiles if params["persistent"] else max(pipeline, tiles)

    def arch(self, params: dict) -> str:
        return "sm_90a"

    def sim_unsupported(self, params: dict) -> str:
        return Variant.sim_unsupported(self, params) or (
            "GPGPU-Sim runs sm_70 code (SM7_QV100), and wgmma exists on sm_90a only; simulate wmma_nhwc or wmma "
            "(WMMA, sm_70) for the tensor-core path")

    @classmethod
    def step_k(cls, params: dict) -> int:
        return cls.ROW // (2 if params["precision"] == "fp16" else 4)

    @classmethod
    def padded_channels(cls, problem: Problem, params: dict) -> int:
        return _round_up(problem.C, cls.step_k(params))

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**super().extra_context(problem, params), "kslice": 16 if params["precision"] == "fp16" else 8}

    def gemm_smem(self, kernel: Kernel) -> int:
        return self.smem_bytes(kernel.params)

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """Stream-K: a persistent GEMM over every tile's k steps, at most one a block; persistent: one over the tiles
        (the GPU backend starts as many blocks as fit at once). Stream-K's pieces add into y zeroed first, as split-K's
        do."""
        launches = super().launches(kernel, batch)
        p, params = kernel.problem, kernel.params
        if params["stream_k"]:
            per_tile = self.padded_channels(p, params) // self.step_k(params) * p.K * p.K
        elif params["persistent"]:
            per_tile = 1
        else:
            return launches
        name = f"conv2d_{self.name}"
        return [dataclasses.replace(launch, grid=(launch.grid[0] * launch.grid[1] * per_tile, 1, 1), persistent=1)
                if launch.kernel == name else launch for launch in launches]


@dataclass(frozen=True)
class WgmmaNchwVariant(Variant):
    """wgmma on a 1x1 layer (no padding, any stride) with x read where it lies (NCHW): the product is taken
    transposed, out[pixel][channel], so that x's pixel-major rows are the A operand (half x: M-major in shared
    memory; float x: converted into registers, as wgmma cannot transpose a TF32 operand), and the weights' rows the
    K-major B operand in shared memory. On the 1x1 layers at 28x28 and 56x56 the channel-last copy wgmma_nhwc
    makes costs as much as cuDNN's whole layer, and mma.sync (mma_nchw) stays under two thirds of wgmma's rate.
    At stride > 1 or H*W % 4 != 0 (the 7x7 layers) x is copied a pixel at a time (float x only), or with gather=true
    a first launch copies the pixels the layer reads into a dense buffer (each image's padded to 16 bytes), which
    the GEMM copies 16 bytes at a time: the only way for half x there, as cp.async copies 4 bytes at least."""

    ROW = WgmmaNhwcVariant.ROW
    SMEM_LIMIT = WgmmaNhwcVariant.SMEM_LIMIT

    def check(self, problem: Problem, params: dict) -> None:
        if problem.K != 1 or problem.pad != 0:
            raise LimitError(f"layers {self.name} takes (the product of w and x's rows as they lie)",
                             f"K={problem.K}, pad={problem.pad}", "K=1, pad=0",
                             "use wgmma_nhwc or mma_nchw on this layer")
        if params["tile_n"] == 192 and params["tile_m"] > 128:
            raise LimitError(f"registers a thread of {self.name}'s three warpgroups (tile_n=192: 384 threads, at most "
                             "168 registers each)", f"tile_m={params['tile_m']}: {params['tile_m'] // 2} float sums "
                             "a thread", "tile_m <= 128", "use tile_m=128 or 64 with tile_n=192, or tile_n=128")
        if params["split"] > 1 and (params["persistent"] or params["io"] == "float16"):
            raise LimitError(f"split-K in {self.name} (blocks of one tile each, adding into float y)",
                             f"persistent={params['persistent']}, io={params['io']}", "persistent=false, io=float32",
                             "use split=1, or wgmma_nhwc's split-K for half y")
        ksteps = _round_up(problem.C, self.step_k(params)) // self.step_k(params)
        if ksteps % params["split"]:
            raise LimitError(f"split-K in {self.name} (equal k ranges)", f"{ksteps} k steps of "
                             f"{self.step_k(params)} channels, split={params['split']}",
                             f"a split that divides {ksteps}", "use a smaller split")
        if params["gather"] and vector_columns(problem):
            raise LimitError(f"gather=true in {self.name} (a dense copy of x for layers it cannot read in place by "
                             "16-byte copies)", f"stride=1, H*W={problem.H * problem.W}",
                             "stride > 1 or H*W not a multiple of 4", "use gather=false: x is read where it lies")
        if params["io"] == "float16":
            _check_half_io(self.name, params)
            if not vector_columns(problem) and not params["gather"]:  # cp.async copies 4 bytes at least
                raise LimitError(f"half x in {self.name} (copies of 4 or 8 pixels)", f"stride={problem.stride}, "
                                 f"H*W={problem.H * problem.W}", "stride=1, H*W a multiple of 4",
                                 "use gather=true (a dense copy of x first), io=float32, or wgmma_nhwc")
        need = self.smem_bytes(problem, params)
        if need > self.SMEM_LIMIT:
            raise LimitError("shared memory per block (sm_90)", f"{need:,} bytes for stages={params['stages']} of "
                             f"{params['tile_m']} weight rows of 128 bytes and a {self.step_k(params)} x "
                             f"{params['tile_n']} pixel tile" + (" and the output tile" * params["persistent"]),
                             f"{self.SMEM_LIMIT:,} bytes", "use fewer stages or a smaller tile_m")

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "tf32"

    def arch(self, params: dict) -> str:
        return "sm_90a"

    def sim_unsupported(self, params: dict) -> str:
        return WgmmaNhwcVariant.sim_unsupported(self, params)

    @classmethod
    def step_k(cls, params: dict) -> int:
        """Channels of a k step: one 128-byte weight row (64 half, 32 TF32)."""
        return cls.ROW // (2 if params["precision"] == "fp16" else 4)

    @staticmethod
    def x_bytes(params: dict) -> int:
        return 2 if params["io"] == "float16" else 4

    @staticmethod
    def gathered_pixels(problem: Problem, params: dict) -> int:
        """Pixels an image of x's dense copy holds (gather=true): the output's, padded to 16 bytes."""
        return _round_up(problem.Hout * problem.Wout, 8 if params["io"] == "float16" else 4)

    def layout(self, problem: Problem, params: dict) -> dict:
        """Template values: the k step, padded channels, a warpgroup's wgmma N, pixels of an x copy (8 half
        where H*W allows, else 4; 1 at stride > 1 or H*W % 4 != 0 unless gathered), pixels of a y store, and the x
        tile's row skew (conflict-free fragment reads, see the template; none for half x, which wgmma reads swizzled
        through a descriptor). gather: the GEMM's image is `hwp` pixels of the dense copy, of which the first HW
        are stored."""
        half_io, bk, gather = params["io"] == "float16", self.step_k(params), params["gather"]
        hw = problem.Hout * problem.Wout
        skew = 0 if half_io else 8 if params["precision"] == "tf32" else 4
        if gather:
            xv = 8 if half_io else 4
            yv = next(v for v in ((8, 4, 1) if half_io else (4, 1)) if hw % v == 0)
        else:
            xv = (8 if half_io and (problem.H * problem.W) % 8 == 0 else 4) if vector_columns(problem) else 1
            yv = xv if half_io else (4 if xv > 1 else 1)
        return {"bn": params["tile_m"], "bp": params["tile_n"], "bk": bk, "cp": _round_up(problem.C, bk),
                "nwg": params["tile_m"] // 2 if params["tile_n"] == 64 else params["tile_m"],
                "threads": self.threads(params),
                "kslice": 16 if params["precision"] == "fp16" else 8, "xv": xv, "yv": yv, "skew": skew,
                "half_io": half_io, "gather": gather, "split": params["split"],
                "hwp": self.gathered_pixels(problem, params) if gather else hw}

    @staticmethod
    def threads(params: dict) -> int:
        """A warpgroup (128 threads) for each 64 pixels of the tile, and two on the same 64 at tile_n=64."""
        return 128 * max(2, params["tile_n"] // 64)

    def smem_parts(self, problem: Problem, params: dict) -> tuple[int, int, int]:
        """Bytes of a weight tile (a k step of the block's output channels), an x tile (rounded to 1024) and the
        output tile."""
        v = self.layout(problem, params)
        x_tile = math.ceil(v["bk"] * (v["bp"] + v["skew"]) * self.x_bytes(params) / 1024) * 1024
        return v["bn"] * self.ROW, x_tile, v["bn"] * (v["bp"] + (8 if v["half_io"] else 4)) * self.x_bytes(params)

    def stationary_bytes(self, problem: Problem, params: dict) -> int:
        """Shared bytes of the weight-stationary layout: all the block's weights (every k step), the x stages, the
        output tile, and 1024 bytes of alignment."""
        w_tile, x_tile, out_tile = self.smem_parts(problem, params)
        ksteps = _round_up(problem.C, self.step_k(params)) // self.step_k(params)
        return ksteps * w_tile + params["stages"] * x_tile + out_tile + 1024

    def stationary(self, problem: Problem, params: dict) -> bool:
        """persistent, and the block's weights fit beside the x stages and the output tile: each block then keeps
        one channel tile and loads its weights once."""
        return params["persistent"] and self.stationary_bytes(problem, params) <= self.SMEM_LIMIT

    def smem_bytes(self, problem: Problem, params: dict) -> int:
        """The pipeline's stages (weight rows, then the x tile) and the output tile (over the stages, or beside them
        when persistent; weight-stationary: all the weights, the x stages, the output tile), and 1024 bytes to
        align them to the swizzle's period."""
        if self.stationary(problem, params):
            return self.stationary_bytes(problem, params)
        w_tile, x_tile, out_tile = self.smem_parts(problem, params)
        pipeline = params["stages"] * (w_tile + x_tile)
        return (pipeline + out_tile if params["persistent"] else max(pipeline, out_tile)) + 1024

    def weights_in_place(self, problem: Problem, params: dict) -> bool:
        return _weights_in_place(problem, params, _round_up(problem.C, self.step_k(params)))

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**self.layout(problem, params), "w_in_place": self.weights_in_place(problem, params),
                "w_warps": _weight_copy_warps(problem.K), "persistent": params["persistent"],
                "stationary": self.stationary(problem, params)}

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p, params = kernel.problem, kernel.params
        space = {}
        if params["gather"]:
            space["xg"] = math.ceil(batch * p.C * self.gathered_pixels(p, params) * self.x_bytes(params) / 4)
        if not self.weights_in_place(p, params):
            size = 2 if params["precision"] == "fp16" else 4
            space["wh"] = math.ceil(p.M * _round_up(p.C, self.step_k(params)) * size / 4)
        return space

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params = kernel.problem, kernel.params
        name = f"conv2d_{self.name}"
        channel_tiles = math.ceil(p.M / params["tile_m"])
        gather = params["gather"]
        columns = _columns(p, batch, self.gathered_pixels(p, params) if gather else 0)
        launches = []
        if gather:  # 16 bytes of one image's channel row a thread
            stores = columns * p.C * self.x_bytes(params) // 16
            launches.append(Launch(kernel=f"{name}_x", grid=(math.ceil(stores / 256), 1, 1), block=(256, 1, 1),
                                   args=("x", "xg", "batch")))
        tiles = math.ceil(columns / params["tile_n"]) * channel_tiles
        every = (channel_tiles if self.stationary(p, params) else 1) if params["persistent"] else 0
        x = "xg" if gather else "x"
        w = "w" if self.weights_in_place(p, params) else "wh"
        gemm = Launch(kernel=name, grid=(tiles, 1, params["split"]), block=(self.threads(params), 1, 1),
                      dynamic_smem=self.smem_bytes(p, params), args=(x, w, "y", "batch"), persistent=every)
        if w == "wh":
            launches.insert(0, _weight_copy(name, p, _round_up(p.C, self.step_k(params))))
        return _split_k_launches(launches, gemm, kernel, batch)


@dataclass(frozen=True)
class WgmmaHaloVariant(Variant):
    """TF32 wgmma on a K x K stride-1 layer with x read where it lies (NCHW), each pixel once a block: a tile is tile_n
    consecutive output positions of one image (rows of pitch W + Z, Z zero slots a row) x tile_m output channels; a k
    step copies its channels' input rows, halo included, a bulk copy (cp.async.bulk) a row counted on an mbarrier, and
    every tap is a shifted read of that tile into wgmma's A registers. wgmma_nhwc first makes a channel-last copy of x
    (a quarter of its time on VGG-16's large 3x3 layers) and its GEMM reads every pixel once a tap, from L2;
    wgmma_nchw's tap-by-tap form (session 32) copied 4 bytes at a time and ran 1.4-2x slower. The weights are laid out
    once (a `_w` kernel) as the stages hold them: for each tap and 8 channels, a K-major tile of tile_m rows of 32
    bytes."""

    SMEM_LIMIT = WgmmaNhwcVariant.SMEM_LIMIT
    ACCUMULATORS = 128  # float sums a thread (tile_m x tile_n / 256): one block an SM, 255 registers a thread

    def check(self, problem: Problem, params: dict) -> None:
        if problem.stride != 1:
            raise LimitError(f"stride of {self.name} (every tap is the x tile shifted by whole pixels)",
                             str(problem.stride), "1", "use wgmma_nhwc on this layer")
        if problem.W % 4:
            raise LimitError(f"image width of {self.name} (each x row one bulk copy of whole 16-byte units, "
                             "16-byte aligned)", f"W={problem.W}", "a multiple of 4", "use wgmma_nhwc on this layer")
        sums = params["tile_m"] * params["tile_n"] // 256
        if sums > self.ACCUMULATORS:
            raise LimitError(f"float sums a thread of {self.name} (tile_m x tile_n / 256 threads)",
                             f"{sums} (tile_m={params['tile_m']}, tile_n={params['tile_n']})",
                             str(self.ACCUMULATORS), "halve tile_m or tile_n")
        need = self.smem_bytes(problem, params)
        if need > self.SMEM_LIMIT:
            v = self.layout(problem, params)
            raise LimitError("shared memory per block (sm_90)", f"{need:,} bytes for stages={params['stages']} of "
                             f"{v['w_bytes']:,} bytes of weights and a {v['x_bytes']:,}-byte x tile ({params['bk']} "
                             f"channels x {v['nrmax']} rows of {v['wq']} slots)", f"{self.SMEM_LIMIT:,} bytes",
                             "use fewer stages, bk=8, or a smaller tile_m or tile_n")

    def precision_of(self, params: dict) -> str:
        return "tf32"

    def arch(self, params: dict) -> str:
        return "sm_90a"

    def sim_unsupported(self, params: dict) -> str:
        return WgmmaNhwcVariant.sim_unsupported(self, params)

    @staticmethod
    def layout(problem: Problem, params: dict) -> dict:
        """Template values: the zero slots a row (Z: at least the padding, a multiple of 4), the row pitch WQ, the
        most input rows a tile reads, the x tile's channel stride (it covers every slot a junk position reads too;
        % 32 == 8 for conflict-free fragment reads), the taps whose wgmmas go out together, and the bytes of a
        stage's parts (a tap's weights: tile_m rows of 8 channels, 32 bytes, for each 8 channels)."""
        k, bn, bp, bk = problem.K, params["tile_m"], params["tile_n"], params["bk"]
        z = _round_up(problem.pad, 4)
        wq = problem.W + z
        nrmax = (wq + bp - 2) // wq + k
        last_read = (wq - 1) + (bp - 1) + (k - 1) * (wq + 1) + z - problem.pad
        plane = max(nrmax * wq + z, last_read + 1)
        pitch = plane + (8 - plane) % 32
        w_bytes = bk // 8 * k * k * bn * 32
        x_bytes = _round_up(bk * pitch * 4, 1024)
        msub = bp // 128
        # taps whose wgmmas go out together between waits: about 12 m64n64k8's worth (384 cycles of tensor work at
        # the full rate), with at most 48 fragment registers
        tb = max(1, min(k * k, math.ceil(12 / (msub * bn // 64)), 12 // msub))
        return {"bn": bn, "bp": bp, "bk": bk, "msub": msub, "tb": tb, "z": z, "wq": wq, "nrmax": nrmax,
                "pitch": pitch, "w_bytes": w_bytes, "x_bytes": x_bytes,
                "tiles_img": math.ceil(problem.Hout * wq / bp), "yv": 4 if problem.Wout % 4 == 0 else 1}

    def smem_bytes(self, problem: Problem, params: dict) -> int:
        """The stages (weights, then the x tile), or the output tile that reuses them after the k loop, the stages'
        mbarriers, and 1024 bytes to align the tiles."""
        return self.barriers_at(problem, params) + 8 * params["stages"] + 1024

    def barriers_at(self, problem: Problem, params: dict) -> int:
        """Where the stages' mbarriers lie: past the stages, or the output tile that reuses them."""
        v = self.layout(problem, params)
        return max(params["stages"] * (v["w_bytes"] + v["x_bytes"]), v["bn"] * (v["bp"] + 4) * 4)

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**self.layout(problem, params), "bars": self.barriers_at(problem, params)}

    def weight_bytes(self, problem: Problem, params: dict) -> int:
        v = self.layout(problem, params)
        return math.ceil(problem.C / params["bk"]) * math.ceil(problem.M / params["tile_m"]) * v["w_bytes"]

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        return {"wt": self.weight_bytes(kernel.problem, kernel.params) // 4}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params = kernel.problem, kernel.params
        name = f"conv2d_{self.name}"
        tiles = math.ceil(p.M / params["tile_m"]) * batch * self.layout(p, params)["tiles_img"]
        parts = self.weight_bytes(p, params) // 16  # a thread of the _w kernel writes 16 bytes
        return [Launch(kernel=f"{name}_w", grid=(math.ceil(parts / 256), 1, 1), block=(256, 1, 1), args=("w", "wt")),
                Launch(kernel=name, grid=(tiles, 1, 1), block=(256, 1, 1), dynamic_smem=self.smem_bytes(p, params),
                       args=("x", "wt", "y", "batch"))]


@dataclass(frozen=True)
class ImplicitGemmAsyncVariant(Variant):
    """fp32 implicit GEMM with k ordered tap-major, so a k step is BK channels of one tap: each thread's column
    is decomposed once and a step costs one bounds test, no division (the route that made wmma_nhwc fast),
    with x read where it lies by cp.async copies (4 bytes, or 16 of four pixels on a 1x1 stride-1 layer) into a
    multi-stage pipeline; weights reordered once
    (wt[k][m], a small kernel). split > 1 divides the k steps among blocks that add into y (layers with few
    output tiles and long k: the 7x7 and 14x14 ResNet layers). tile_m=256: 16 x 8 outputs a thread, one block an
    SM, fewer shared-memory reads per FMA, for layers with many output channels (toycnn)."""

    def check(self, problem: Problem, params: dict) -> None:
        pass  # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch

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
        gemm = Launch(kernel=name, grid=(math.ceil(columns / params["tile_n"]), math.ceil(p.M / params["tile_m"]),
                                         params["split"]),
                      block=(256, 1, 1), dynamic_smem=smem, args=("x", "wt", "y", "batch"))
        return _split_k_launches([weights], gemm, kernel, batch)


@dataclass(frozen=True)
class MmaNchwVariant(Variant):
    """Tensor cores through inline PTX mma.sync reading x in place (float32, NCHW) as implicit_gemm_async
    does, converting to half or TF32 as fragments are loaded: no channel-last copy of x (that pass cost more
    than cuDNN's whole 1x1 layer). Weights are copied once (wh[m][tap][c], 16-byte rows for ldmatrix).
    Any M (rows past it are zeros), C padded to a multiple of bk; split-K as implicit_gemm_async. io=float16:
    x, w and y are half in device memory (what a half network passes between layers), x copied 8 bytes (four
    pixels) at a time and B fragments loaded by ldmatrix.trans; on 1x1 stride-1 layers with H*W a multiple of 4
    (memory-bound, where the bytes are the time); with split-K the blocks add into float32 sums, rounded once."""

    def check(self, problem: Problem, params: dict) -> None:
        # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch
        if params["io"] == "float16":
            _check_half_io(self.name, params)
            if not vector_columns(problem):
                raise LimitError("layers mma_nchw io=float16 takes (8-byte copies of four pixels)",
                                 f"K={problem.K}, stride={problem.stride}, pad={problem.pad}, "
                                 f"H*W={problem.H * problem.W}", "K=1, stride=1, pad=0, H*W a multiple of 4",
                                 "use io=float32 on this layer")

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "tf32"

    def sim_unsupported(self, params: dict) -> str:
        return super().sim_unsupported(params) or _mma_sync_refusal(params)

    @staticmethod
    def element_bytes(params: dict) -> int:
        return 2 if params["precision"] == "fp16" else 4

    @staticmethod
    def kdim(problem: Problem, params: dict) -> int:
        """GEMM depth: taps x channels padded to a multiple of bk, or, with fewer channels than bk (a first
        layer), K * K * C itself padded to a multiple of bk (a thread steps its rows' (ky, kx, c) on)."""
        if problem.C < params["bk"]:
            return _round_up(problem.K * problem.K * problem.C, params["bk"])
        return _round_up(problem.C, params["bk"]) * problem.K * problem.K

    @staticmethod
    def padded_channels(problem: Problem, params: dict) -> int:
        """Channels of wh a tap: C padded to a multiple of bk, or C itself when gathered (C < bk)."""
        return problem.C if problem.C < params["bk"] else _round_up(problem.C, params["bk"])

    def extra_context(self, problem: Problem, params: dict) -> dict:
        gather = problem.C < params["bk"]
        return {"bm": params["tile_m"], "bn": params["tile_n"], "gather": gather, "kdim": self.kdim(problem, params),
                "half_io": params["io"] == "float16",
                "cp": self.padded_channels(problem, params),
                "hw_even": (problem.Hout * problem.Wout) % 2 == 0, "vector": not gather and vector_columns(problem),
                "w_in_place": self.weights_in_place(problem, params), "w_warps": _weight_copy_warps(problem.K)}

    def weights_in_place(self, problem: Problem, params: dict) -> bool:
        return _weights_in_place(problem, params, self.kdim(problem, params))

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        kdim = self.kdim(kernel.problem, kernel.params)
        space = {} if self.weights_in_place(kernel.problem, kernel.params) else {
            "wh": math.ceil(kernel.problem.M * kdim * self.element_bytes(kernel.params) / 4)}
        return {**space, **_split_sums(kernel, batch)}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params = kernel.problem, kernel.params
        columns = _columns(p, batch)
        eb, bk, bm, bn = self.element_bytes(params), params["bk"], params["tile_m"], params["tile_n"]
        if params["io"] == "float16":  # Bs in half, rows skewed by 16 bytes
            b_tile = bk * (bn + 8) * 2
        else:
            b_tile = bk * (bn + (4 if params["precision"] == "fp16" else 8)) * 4
        smem = params["stages"] * (bm * (bk + 16 // eb) * eb + b_tile)
        if params["io"] == "float16":
            smem = max(smem, _half_epilogue_smem(bm, bn))
        name = f"conv2d_{self.name}"
        weights = _weight_copy(name, p, self.padded_channels(p, params))
        in_place = self.weights_in_place(p, params)
        gemm = Launch(kernel=name, grid=(math.ceil(columns / bn), math.ceil(p.M / bm), params["split"]),
                      block=(256, 1, 1), dynamic_smem=smem, args=("x", "w" if in_place else "wh", "y", "batch"))
        return _split_k_launches([] if in_place else [weights], gemm, kernel, batch)


def vector_columns(problem: Problem) -> bool:
    """Whether four consecutive GEMM columns are four consecutive, 16-byte aligned input pixels of one image (a 1x1
    layer with stride 1, no padding, HW % 4 == 0): the kernels that read x in place then copy 16 bytes at a time."""
    return problem.K == 1 and problem.stride == 1 and problem.pad == 0 and (problem.H * problem.W) % 4 == 0


def _mma_sync_refusal(params: dict) -> str:
    return ("GPGPU-Sim runs sm_70 code (SM7_QV100), and this kernel needs ldmatrix (sm_75+) and mma.sync "
            f"m16n8k{16 if params['precision'] == 'fp16' else 8} with {params['precision']} inputs (sm_80+)")


def _check_half_io(variant: str, params: dict) -> None:
    """io=float16 (half x, w, y) computes in fp16."""
    if params["precision"] != "fp16":
        raise LimitError(f"{variant} io=float16 (half tensors in, half out)", f"precision={params['precision']}",
                         "precision=fp16", "use io=float32 for TF32")


def _round_up(n: int, multiple: int) -> int:
    """n padded to a multiple (channels to the GEMM's k step, output channels to a row of 16 bytes)."""
    return multiple * math.ceil(n / multiple)


def _weights_in_place(problem: Problem, params: dict, kdim: int) -> bool:
    """w of a 1x1 layer whose C needs no padding (kdim == C) already is the GEMM's wh[m][c] where it is half
    (io=float16) or the kernel computes in TF32: the tensor-core kernels read it where it lies, one launch fewer
    (3-6 us of a 25-50 us layer: measured with ncu on the H100, 1x1 layers at 7 and 14). TF32 tensor cores read a
    float's top 19 bits, so w read in place is truncated to TF32 where the copy rounded it to nearest: a bias of at
    most 2^-10 of each weight, under a quarter of the TF32 check's tolerance (4e-3 of sum |x*w|)."""
    return (params.get("io") == "float16" or params.get("precision") == "tf32") and problem.K == 1 \
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
    if kernel.params.get("io") != "float16" or not _adds(kernel.params):
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


def _refuse_stride(variant: str, problem: Problem, why: str) -> None:
    if problem.stride != 1:
        raise LimitError(f"stride of {variant} ({why})", str(problem.stride), "1",
                         "use implicit_gemm, im2col_gemm, wmma, wmma_nhwc, global, constant or a shared variant")
