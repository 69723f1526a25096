"""The tensor-core variant families before Hopper's: WMMA (the simulator runs its f16 forms) and mma.sync with
ldmatrix, channel-last (mma_nhwc) or reading x in place (mma_nchw): how each checks a layer, extends its template's
context and launches its kernels. wgmma is in wgmma.py; the helpers the families share are in families.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import LimitError
from .families import (
    _adds,
    _check_half_io,
    _columns,
    _half_epilogue_smem,
    _round_up,
    _split_k_launches,
    _split_sums,
    _weight_copy,
    _weight_copy_warps,
    _weights_in_place,
    input_bytes,
    io16,
    t16,
    tensor_precision,
    vector_columns,
)
from .problems import Problem
from .variant_types import Kernel, Launch, Variant


@dataclass(frozen=True)
class WmmaVariant(Variant, family="wmma"):
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
                raise LimitError("precision of wmma fragments=global (m16n16k16, half inputs)", params["precision"],
                                 "fp16", f"use fragments=shared for {params['precision']}")
            kp = 16 * math.ceil(problem.C * problem.K * problem.K / 16)
            if kp > 65535:
                raise LimitError("im2col rows C*K*K, padded to 16 (one grid row each)", f"{kp:,}", "65,535",
                                 "use fragments=shared, which never writes the im2col matrix")

    def precision_of(self, params: dict) -> str:
        return tensor_precision(params["precision"])

    def wmma_forms(self, params: dict) -> tuple[str, ...]:
        if params["precision"] != "fp16":
            return ()
        return (f"wmma_m16n16k16_row_row_f32_{params.get('fragments', 'shared')}",)

    def features(self, params: dict) -> tuple[str, ...]:
        return super().features(params) + (f"wmma:{params['precision']}",)

    TILE = 128  # block tile, output channels x output pixels
    GLOBAL_TILE = 64  # fragments=global: block tile of its GEMM (4 warps of 32 x 32)

    def extra_context(self, problem: Problem, params: dict) -> dict:
        bk = 16 if params["precision"] == "tf32" else 32  # two buffers of each tile under 48 KB static
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
class WmmaNhwcVariant(WmmaVariant, family="wmma_nhwc"):
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
        if params["precision"] == "bf16" and params["tile_n"] == 256 and params["bk"] == 64:
            raise LimitError("registers per thread (bf16 WMMA fragments with 64 x 64 warp tiles and bk=64)",
                             "more than 255", "255 (ptxas spills to local memory)", "use tile_n=128 or bk=32 with bf16")

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
        pairs = io16(params) and problem.H * problem.W % 2 == 0 and not self.subsample(problem)
        row = 128 // input_bytes(params["precision"])
        return (2 if pairs else 1), (row if self.padded_channels(problem, params) % row == 0 else 32)

    @staticmethod
    def subsample(problem: Problem) -> bool:
        """Whether the copy holds only the pixels a strided 1x1 window reads (mma_nhwc and wgmma_nhwc)."""
        return False

    @staticmethod
    def element_bytes(kernel: Kernel) -> int:
        return input_bytes(kernel.params["precision"])

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
class MmaNhwcVariant(WmmaNhwcVariant, family="mma_nhwc"):
    """Tensor cores through inline PTX mma.sync (m16n8k16 half, m16n8k8 TF32) on the same channel-last
    copies as wmma_nhwc: fragments loaded with ldmatrix, accumulators kept in registers and stored straight
    to y. Output channels past M are zero rows of the tile, so any M runs; C is padded to a multiple of BK.
    split-K as implicit_gemm_async (the 3x3 layers at 14x14 and 7x7 fill two fifths to three quarters of an H200's
    SMs with one block each); tile_n=64 for layers with few output tiles. io=float16 as mma_nchw's, on any layer.
    A 1x1 layer at stride > 1 (no padding) copies only the pixels its window reads and runs the GEMM at stride 1."""

    def check(self, problem: Problem, params: dict) -> None:
        # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch
        if io16(params):
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
        fuse_w, fuse_zero = self.fused(problem, params)
        return {**super().extra_context(problem, params), "hw_even": (problem.Hout * problem.Wout) % 2 == 0,
                "half_io": io16(params), "t16": t16(params), "subsample": self.subsample(problem),
                "w_in_place": self.weights_in_place(problem, params), "fuse_w": fuse_w, "fuse_zero": fuse_zero}

    def fused(self, problem: Problem, params: dict) -> tuple[bool, bool]:
        """Whether the weight copy (blocks of 8 warps: K <= 5) and the zeroing of the sums split-K or stream-K add
        into run as blocks of the x copy's launch, past its images, rather than launches of their own: a launch
        and its ramp fewer each (the weight copy left out of the 3x3 TF32 layers at 7 and 14 took 3.6-7.6 us of
        46-69 us, the zeroing 2.2-2.3 us more; H200, 2026-12-01, PERFORMANCE.md session 52)."""
        return (not self.weights_in_place(problem, params) and _weight_copy_warps(problem.K) == 8,
                _adds(params))

    def weights_in_place(self, problem: Problem, params: dict) -> bool:
        return _weights_in_place(problem, params, self.padded_channels(problem, params))

    def features(self, params: dict) -> tuple[str, ...]:
        return Variant.features(self, params) + (f"mma_sync:{params['precision']}",)  # no WMMA

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        space = {**super().workspace(kernel, batch), **_split_sums(kernel, batch)}
        if self.weights_in_place(kernel.problem, kernel.params):
            del space["wh"]
        return space

    def gemm_smem(self, kernel: Kernel) -> int:
        """The GEMM's dynamic shared memory: its pipeline's stages, or the half-y epilogue's tiles if more."""
        smem = WmmaNhwcVariant.gemm_smem(self, kernel)
        if io16(kernel.params):
            smem = max(smem, _half_epilogue_smem(self.block_m(kernel.params), kernel.params["tile_n"]))
        return smem

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        *copies, gemm = super().launches(kernel, batch)
        gemm = dataclasses.replace(gemm, grid=(*gemm.grid[:2], kernel.params.get("split", 1)))
        if self.weights_in_place(kernel.problem, kernel.params):
            copies = [launch for launch in copies if "wh" not in launch.args]
            gemm = dataclasses.replace(gemm, args=tuple("w" if a == "wh" else a for a in gemm.args))
        return _fuse_into_x_copy(_split_k_launches(copies, gemm, kernel, batch),
                                 *self.fused(kernel.problem, kernel.params))


def _fuse_into_x_copy(launches: list[Launch], fuse_w: bool, fuse_zero: bool) -> list[Launch]:
    """The x copy (the first launch) with the `_w` and `_zero` launches' blocks added as z slices past its images
    (_async.cu.j2 channel_last: those blocks find their work from their index past the images), their arguments
    after its own."""
    x, *rest = launches
    blocks, args, kept = 0, list(x.args), []
    for launch in rest:
        if (fuse_w and launch.kernel == f"{x.kernel[:-2]}_w") or (fuse_zero and launch.kernel.endswith("_zero")):
            blocks += math.prod(launch.grid)
            args += [a for a in launch.args if a != "batch"]
        else:
            kept.append(launch)
    if not blocks:
        return launches
    slab = x.grid[0] * x.grid[1]
    return [dataclasses.replace(x, grid=(*x.grid[:2], x.grid[2] + math.ceil(blocks / slab)), args=tuple(args)),
            *kept]


@dataclass(frozen=True)
class MmaNchwVariant(Variant, family="mma_nchw"):
    """Tensor cores through inline PTX mma.sync reading x in place (float32, NCHW) as implicit_gemm_async
    does, converting to half or TF32 as fragments are loaded: no channel-last copy of x (that pass cost more
    than cuDNN's whole 1x1 layer). Weights are copied once (wh[m][tap][c], 16-byte rows for ldmatrix).
    Any M (rows past it are zeros), C padded to a multiple of bk; split-K as implicit_gemm_async. io=float16:
    x, w and y are half in device memory (what a half network passes between layers), x copied 8 bytes (four
    pixels) at a time and B fragments loaded by ldmatrix.trans; on 1x1 stride-1 layers with H*W a multiple of 4
    (memory-bound, where the bytes are the time); with split-K the blocks add into float32 sums, rounded once."""

    def check(self, problem: Problem, params: dict) -> None:
        # 256 threads; the pipeline's dynamic shared memory is checked against the device at launch
        if io16(params):
            _check_half_io(self.name, params)
            if not vector_columns(problem):
                raise LimitError(f"layers mma_nchw io={params['io']} takes (8-byte copies of four pixels)",
                                 f"K={problem.K}, stride={problem.stride}, pad={problem.pad}, "
                                 f"H*W={problem.H * problem.W}", "K=1, stride=1, pad=0, H*W a multiple of 4",
                                 "use io=float32 on this layer")

    def precision_of(self, params: dict) -> str:
        return tensor_precision(params["precision"])

    def features(self, params: dict) -> tuple[str, ...]:
        return super().features(params) + (f"mma_sync:{params['precision']}",)

    @staticmethod
    def element_bytes(params: dict) -> int:
        return input_bytes(params["precision"])

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
                "half_io": io16(params), "t16": t16(params),
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
        if io16(params):  # Bs in half (or bf16), rows skewed by 16 bytes
            b_tile = bk * (bn + 8) * 2
        else:
            b_tile = bk * (bn + (8 if params["precision"] == "tf32" else 4)) * 4
        smem = params["stages"] * (bm * (bk + 16 // eb) * eb + b_tile)
        if io16(params):
            smem = max(smem, _half_epilogue_smem(bm, bn))
        name = f"conv2d_{self.name}"
        weights = _weight_copy(name, p, self.padded_channels(p, params))
        in_place = self.weights_in_place(p, params)
        gemm = Launch(kernel=name, grid=(math.ceil(columns / bn), math.ceil(p.M / bm), params["split"]),
                      block=(256, 1, 1), dynamic_smem=smem, args=("x", "w" if in_place else "wh", "y", "batch"))
        return _split_k_launches([] if in_place else [weights], gemm, kernel, batch)

