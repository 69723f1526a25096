"""Hopper's tensor-core variant families (wgmma, sm_90a): channel-last copies (wgmma_nhwc), x read in place for
1x1 layers (wgmma_nchw) and K x K layers with their halo (wgmma_halo): how each checks a layer, extends its
template's context and launches its kernels. WMMA and mma.sync are in tensor_cores.py, the helpers in families.py.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from ..errors import LimitError
from .families import (
    _check_half_io,
    _columns,
    _round_up,
    _split_k_launches,
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
from .tensor_cores import MmaNhwcVariant
from .variant_types import Kernel, Launch, Variant


@dataclass(frozen=True)
class WgmmaNhwcVariant(MmaNhwcVariant, family="wgmma_nhwc"):
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
        if io16(params):
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
        if not io16(params):
            return 0
        return 8 * 16 * (params["tile_n"] * self.block_m(params) // 128 + 8) * 2

    def smem_bytes(self, params: dict) -> int:
        """The GEMM's dynamic shared memory: the pipeline, whose stages the half-y tiles reuse once the k loop is
        done, or, in a persistent block (the next tile's copies in flight meanwhile), the tiles past the stages."""
        pipeline, tiles = self.pipeline_bytes(params), self.half_tile_bytes(params)
        return pipeline + tiles if params["persistent"] else max(pipeline, tiles)

    def arch(self, params: dict) -> str:
        return "sm_90a"

    def features(self, params: dict) -> tuple[str, ...]:
        # wgmma_halo has no precision parameter (TF32 only)
        return Variant.features(self, params) + (f"wgmma:{params.get('precision', 'tf32')}",)

    @classmethod
    def step_k(cls, params: dict) -> int:
        return cls.ROW // input_bytes(params["precision"])

    @classmethod
    def padded_channels(cls, problem: Problem, params: dict) -> int:
        """Channels a tap holds in the channel-last copies: C padded to a k step (one 128-byte row), or, on a K x K
        layer whose C fills at most half a row, to 8, 16 or 32 (of 16-byte copies, a divisor of the row), so that
        several taps share a k step (packed taps: 5x5 16->48 in fp16 multiplied 48 zero channels of every 64)."""
        step = cls.step_k(params)
        if problem.K > 1:
            for channels in (8, 16, 32):
                if problem.C <= channels < step:
                    return channels
        return _round_up(problem.C, step)

    @classmethod
    def kdim(cls, problem: Problem, params: dict) -> int:
        """Elements of a row of wh and k of the GEMM: the taps' channels, then zeros up to a whole k step."""
        return _round_up(cls.padded_channels(problem, params) * problem.K * problem.K, cls.step_k(params))

    def extra_context(self, problem: Problem, params: dict) -> dict:
        cp = self.padded_channels(problem, params)
        return {**super().extra_context(problem, params), "kslice": 8 if params["precision"] == "tf32" else 16,
                "kdim": self.kdim(problem, params), "packed": cp < self.step_k(params)}

    def x_copy_shape(self, problem: Problem, params: dict) -> tuple[int, int]:
        """As mma_nhwc's, and a block of all the channels where taps are packed (fewer than 32 a pixel). In TF32 a
        block takes 64 channels (256 bytes of a pixel) where CP allows: on the H200 the winners of ResNet-50's and
        VGG-16's TF32 layers ran 0.974-1.000 of their time with 32 (median 0.99); in fp16 128 halves took 0.99-1.07
        of the time of 64 (median 1.04), so fp16 keeps 64 (benchmarks/results/wgmma-nhwc-x-copy-h200-2026-12-02)."""
        vec, channels = super().x_copy_shape(problem, params)
        cp = self.padded_channels(problem, params)
        if params["precision"] == "tf32" and cp % 64 == 0:
            channels = 64
        return vec, min(channels, cp)

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        space = super().workspace(kernel, batch)
        if "wh" in space:
            space["wh"] = math.ceil(kernel.problem.M * self.kdim(kernel.problem, kernel.params) *
                                    self.element_bytes(kernel) / 4)
        return space

    def gemm_smem(self, kernel: Kernel) -> int:
        return self.smem_bytes(kernel.params)

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """Stream-K: a persistent GEMM over every tile's k steps, at most one a block; persistent: one over the tiles
        (the GPU backend starts as many blocks as fit at once). Stream-K's pieces add into y zeroed first, as split-K's
        do."""
        launches = super().launches(kernel, batch)
        p, params = kernel.problem, kernel.params
        if params["stream_k"]:
            per_tile = self.kdim(p, params) // self.step_k(params)
        elif params["persistent"]:
            per_tile = 1
        else:
            return _programmatic(launches)
        name = f"conv2d_{self.name}"
        return _programmatic([dataclasses.replace(launch, grid=(launch.grid[0] * launch.grid[1] * per_tile, 1, 1),
                                                  persistent=1) if launch.kernel == name else launch
                              for launch in launches])


@dataclass(frozen=True)
class WgmmaNchwVariant(Variant, family="wgmma_nchw"):
    """wgmma on a 1x1 layer (no padding, any stride) with x read where it lies (NCHW): the product is taken
    transposed, out[pixel][channel], so that x's pixel-major rows are the A operand (half x: M-major in shared
    memory; float x: converted into registers, as wgmma cannot transpose a TF32 operand), and the weights' rows the
    K-major B operand in shared memory. On the 1x1 layers at 28x28 and 56x56 the channel-last copy wgmma_nhwc
    makes costs as much as cuDNN's whole layer, and mma.sync (mma_nchw) stays under two thirds of wgmma's rate.
    At stride > 1 or H*W % 4 != 0 (the 7x7 layers) x is copied a pixel at a time (float x only), or with gather=true
    a first launch copies the pixels the layer reads into a dense buffer (each image's padded to 16 bytes), which
    the GEMM copies 16 bytes at a time: the only way for half x there, as cp.async copies 4 bytes at least.
    cluster > 1 (TF32): blocks of a cluster, consecutive pixel tiles of one channel tile, share each k step's weight
    tile by multicast bulk copies from a `_wi` image of the weights, so the L2 serves it once for them all."""

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
        nwg = self.warpgroup_n(params)
        if io16(params) and nwg % 16:
            raise LimitError(f"output channels of a warpgroup in {self.name} with half y (stmatrix stores pairs of "
                             "8-channel groups)", f"{nwg} (tile_m={params['tile_m']}, tile_n={params['tile_n']})",
                             "a multiple of 16", "use tile_n=128 or 192 with this tile_m, or tile_m=64 or 128")
        if params["split"] > 1 and (params["persistent"] or io16(params)):
            raise LimitError(f"split-K in {self.name} (blocks of one tile each, adding into float y)",
                             f"persistent={params['persistent']}, io={params['io']}", "persistent=false, io=float32",
                             "use split=1, or wgmma_nhwc's split-K for half y")
        if params["reduce"] == "cluster" and params["split"] == 1:
            raise LimitError(f"reduce=cluster in {self.name} (the blocks of a split tile summing in a cluster)",
                             "split=1", "split 2, 4 or 8", "use reduce=atomic (the default) without split-K")
        ksteps = _round_up(problem.C, self.step_k(params)) // self.step_k(params)
        if ksteps % params["split"]:
            raise LimitError(f"split-K in {self.name} (equal k ranges)", f"{ksteps} k steps of "
                             f"{self.step_k(params)} channels, split={params['split']}",
                             f"a split that divides {ksteps}", "use a smaller split")
        cluster = params["cluster"]
        wanted = {"precision": "tf32", "io": "float32", "persistent": False, "split": 1}
        if cluster > 1 and (off := {k: params[k] for k, v in wanted.items() if params[k] != v}):
            raise LimitError(f"cluster={cluster} in {self.name} (TF32 weights multicast to blocks of one tile each)",
                             ", ".join(f"{k}={v}" for k, v in off.items()),
                             ", ".join(f"{k}={wanted[k]}" for k in off),
                             "set those, or use cluster=1")
        if params["tile_m"] % (8 * cluster):
            raise LimitError(f"a block's share of the weight tile in {self.name} (whole swizzle groups of 8 rows)",
                             f"tile_m={params['tile_m']}, cluster={cluster}", f"tile_m a multiple of {8 * cluster}",
                             "use a smaller cluster or another tile_m")
        if params["gather"] and vector_columns(problem):
            raise LimitError(f"gather=true in {self.name} (a dense copy of x for layers it cannot read in place by "
                             "16-byte copies)", f"stride=1, H*W={problem.H * problem.W}",
                             "stride > 1 or H*W not a multiple of 4", "use gather=false: x is read where it lies")
        if io16(params):
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
        return tensor_precision(params["precision"])

    def arch(self, params: dict) -> str:
        return "sm_90a"

    def features(self, params: dict) -> tuple[str, ...]:
        return WgmmaNhwcVariant.features(self, params)

    @classmethod
    def step_k(cls, params: dict) -> int:
        """Channels of a k step: one 128-byte weight row (64 half, 32 TF32)."""
        return cls.ROW // input_bytes(params["precision"])

    @staticmethod
    def x_bytes(params: dict) -> int:
        return 2 if io16(params) else 4

    @staticmethod
    def gathered_pixels(problem: Problem, params: dict) -> int:
        """Pixels an image of x's dense copy holds (gather=true): the output's, padded to 16 bytes."""
        return _round_up(problem.Hout * problem.Wout, 8 if io16(params) else 4)

    def layout(self, problem: Problem, params: dict) -> dict:
        """Template values: the k step, padded channels, a warpgroup's wgmma N, pixels of an x copy (8 half
        where H*W allows, else 4; 1 at stride > 1 or H*W % 4 != 0 unless gathered), pixels of a y store, and the x
        tile's row skew (conflict-free fragment reads, see the template; none for half x, which wgmma reads swizzled
        through a descriptor). gather: the GEMM's image is `hwp` pixels of the dense copy, of which the first HW
        are stored."""
        half_io, bk, gather = io16(params), self.step_k(params), params["gather"]
        hw = problem.Hout * problem.Wout
        skew = 0 if half_io else 8 if params["precision"] == "tf32" else 4
        if gather:
            xv = 8 if half_io else 4
            yv = next(v for v in ((8, 4, 1) if half_io else (4, 1)) if hw % v == 0)
        else:
            xv = (8 if half_io and (problem.H * problem.W) % 8 == 0 else 4) if vector_columns(problem) else 1
            yv = xv if half_io else (4 if xv > 1 else 1)
        return {"bn": params["tile_m"], "bp": params["tile_n"], "bk": bk, "cp": _round_up(problem.C, bk),
                "nwg": self.warpgroup_n(params),
                "threads": self.threads(params),
                "kslice": 8 if params["precision"] == "tf32" else 16, "xv": xv, "yv": yv, "skew": skew,
                "half_io": half_io, "t16": t16(params), "gather": gather, "split": params["split"],
                "hwp": self.gathered_pixels(problem, params) if gather else hw, "cl": params["cluster"],
                "reduce": params["reduce"]}

    @staticmethod
    def warpgroup_n(params: dict) -> int:
        """A warpgroup's wgmma N: all tile_m output channels, or half of them where two warpgroups share 64 pixels."""
        return params["tile_m"] // 2 if params["tile_n"] == 64 else params["tile_m"]

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
        bars = 8 * params["stages"] if params["cluster"] > 1 else 0  # a stage's mbarrier, past the rest
        return (pipeline + out_tile if params["persistent"] else max(pipeline, out_tile)) + bars + 1024

    def weights_in_place(self, problem: Problem, params: dict) -> bool:
        """As the other tensor-core variants, and also where C is no multiple of a k step but w's rows stay 16 bytes
        aligned (C a multiple of 8 half or 4 float): the kernel's 16-byte weight copies past C are zero-filled, so
        layers such as 1x1 200->104 and 72->40 need no `_w` launch to pad them (a launch of a 10-15 us layer)."""
        return _weights_in_place(problem, params, problem.C) and problem.C % (self.step_k(params) // 8) == 0

    def extra_context(self, problem: Problem, params: dict) -> dict:
        return {**self.layout(problem, params), "w_in_place": self.weights_in_place(problem, params),
                "w_warps": _weight_copy_warps(problem.K), "persistent": params["persistent"],
                "stationary": self.stationary(problem, params)}

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p, params = kernel.problem, kernel.params
        space = {}
        if params["gather"]:
            space["xg"] = math.ceil(batch * p.C * self.gathered_pixels(p, params) * self.x_bytes(params) / 4)
        if params["cluster"] > 1:  # the weights as the stages hold them: every channel tile, padded to tile_m rows
            space["wi"] = math.ceil(p.M / params["tile_m"]) * params["tile_m"] * _round_up(p.C, self.step_k(params))
        elif not self.weights_in_place(p, params):
            size = input_bytes(params["precision"])
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
        cluster = params["cluster"]  # a cluster's blocks take consecutive pixel tiles of one channel tile
        tiles = math.ceil(columns / params["tile_n"] / cluster) * cluster * channel_tiles
        every = (channel_tiles if self.stationary(p, params) else 1) if params["persistent"] else 0
        x = "xg" if gather else "x"
        w = "wi" if cluster > 1 else "w" if self.weights_in_place(p, params) else "wh"
        gemm = Launch(kernel=name, grid=(tiles, 1, params["split"]), block=(self.threads(params), 1, 1),
                      dynamic_smem=self.smem_bytes(p, params), args=(x, w, "y", "batch"), persistent=every)
        if w == "wh":
            launches.insert(0, _weight_copy(name, p, _round_up(p.C, self.step_k(params))))
        elif w == "wi":  # a thread a 16-byte part of the image
            parts = channel_tiles * params["tile_m"] * _round_up(p.C, self.step_k(params)) // 4
            launches.insert(0, Launch(kernel=f"{name}_wi", grid=(math.ceil(parts / 256), 1, 1), block=(256, 1, 1),
                                      args=("w", "wi")))
        if params["reduce"] == "cluster":  # the split's blocks sum in their cluster: nothing to zero
            return _programmatic([*launches, gemm])
        return _programmatic(_split_k_launches(launches, gemm, kernel, batch))


@dataclass(frozen=True)
class WgmmaHaloVariant(Variant, family="wgmma_halo"):
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

    def features(self, params: dict) -> tuple[str, ...]:
        return WgmmaNhwcVariant.features(self, params)

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
        return _programmatic([
            Launch(kernel=f"{name}_w", grid=(math.ceil(parts / 256), 1, 1), block=(256, 1, 1), args=("w", "wt")),
            Launch(kernel=name, grid=(tiles, 1, 1), block=(256, 1, 1), dynamic_smem=self.smem_bytes(p, params),
                   args=("x", "wt", "y", "batch"))])


def _programmatic(launches: list[Launch]) -> list[Launch]:
    """Every launch after the first may start before the one before it ends: each kernel of these templates
    begins by waiting for it (_async.cu.j2 programmatic). Its blocks are then resident and set up when the copy
    before it ends, instead of a launch's round trip later (2-6 % of a ResNet-50 layer's time on an H200,
    benchmarks/programmatic_launch.py)."""
    return [dataclasses.replace(launch, programmatic=i > 0) for i, launch in enumerate(launches)]
