"""What `simflow tune` tries first: per precision, the configurations that won the known layers (STARTS), the
precisions a configuration may compete in (ADMITS), and the order of the first trials (starts)."""

from __future__ import annotations

import json

from ..kernels.variants import get_variant

# A precision is the least a configuration may compute in: a float32 kernel meets TF32's and fp16's tolerance too,
# so it competes there (cuDNN, allowed TF32, may pick an FMA kernel as well). On a first layer of one input channel
# a direct float32 kernel runs 9x faster than any tensor-core GEMM (fmnist-conv1, H100, PERFORMANCE.md session 22).
ADMITS = {"float32": ("float32",), "tf32": ("tf32", "float32"), "float16": ("float16", "tf32", "float32"),
          "bfloat16": ("bfloat16", "tf32", "float32")}  # bf16 has fp16's bits but float's range: fp16 does not admit


# What every tune tries first (Optuna's strategies), before its optimiser chooses: these configurations, then each
# variant's defaults. A layer never seen still starts from what won the known ones, so a short budget finds at least
# that (and every variant, FFT and Winograd included, is tried once); the suite benchmark times this list.
STARTS = {  # precision -> (variant, params), the rest of each variant's parameters at their defaults. Each
    # configuration won a ResNet-50 layer on the H200 against the others here, or came within 3 % of the
    # winner (fp32: 2026-11-22, after the vector-store fix; TF32 and fp16: 2026-11-23, benchmarks/results/
    # suite_resnet50_{stores,split,half,nhwc-half}_every_h200_2026-11-22.csv, suite_resnet50_tile64_every_h200_*)
    "float32": [("implicit_gemm_async", {"tile_m": 64}), ("implicit_gemm_async", {"tile_n": 64}),
                ("implicit_gemm_async", {"bk": 16}), ("implicit_gemm_async", {"split": 4}),
                ("implicit_gemm_async", {"tile_m": 256, "bk": 16, "stages": 4}),  # added 2026-11-24 (toycnn's best)
                ("implicit_gemm", {"tile": 64}), ("implicit_gemm", {"tile_m": 96}),  # 96 channels: AlexNet conv1
                ("winograd", {"m": 2}),
                ("winograd", {"m": 4}),  # winograd: the 3x3 stride-1 layers only (it refuses the rest)
                ("winograd", {"m": 4, "bk": 16}),  # 3x3 128->128 at 28: 0.173 -> 0.144 ms (H100, 2026-11-26)
                # 64-channel tiles where M is 64 or few: VGG conv1_2 1.171 -> 0.907 ms, 5x5 32->64 at 32 0.129 ->
                # 0.105 (H100, 2026-11-27, results/grid_winograd_session33_*)
                ("winograd", {"m": 4, "bk": 16, "tile": 64}),
                # direct kernels for first layers of few channels (stride 1): VGG conv1_1 and fmnist-conv1/2, whose
                # float32 also answers TF32 and fp16 (ADMITS; PERFORMANCE.md sessions 18 and 22)
                ("regtile", {"outputs": 2, "rows": 2, "images": 2, "weights": "shared"}),
                # ... in groups of 16 channels: VGG conv1_1 0.142 -> 0.121 ms in a 40-s tune (H100, 2026-11-27)
                ("regtile", {"outputs": 2, "rows": 2, "images": 2, "weights": "shared", "channels": 16}),
                ("regtile", {"outputs": 4, "rows": 8}), ("regtile", {"outputs": 2, "rows": 8, "weights": "shared"}),
                # 64 channels, bk 16, two stages: five ResNet-50 layers of 64-512 channels (3x3 64->64 at 56: 0.233 ->
                # 0.212 ms; H100, 2026-11-27, suite_resnet50_session25_every_h100_2026-11-27.csv); first kept for
                # k7net-conv2, which regtile's channel groups now win
                ("implicit_gemm_async", {"tile_m": 64, "bk": 16, "stages": 2}),
                # output channels split over blocks: k7net-conv2 (12 -> 24 channels, 16x16 outputs) 59.8 -> 25.0 us,
                # cuDNN 51.7 (H100, 2026-11-27, PERFORMANCE.md session 26)
                ("regtile", {"outputs": 2, "rows": 16, "weights": "shared", "channels": 12}),
                ("regtile", {"outputs": 2, "rows": 8, "weights": "shared", "channels": 4})],
    "tf32": [("mma_nchw", {"precision": "tf32"}), ("mma_nchw", {"precision": "tf32", "tile_m": 64}),
             ("mma_nchw", {"precision": "tf32", "bk": 16}), ("mma_nchw", {"precision": "tf32", "split": 4}),
             ("mma_nhwc", {"precision": "tf32"}), ("mma_nhwc", {"precision": "tf32", "stages": 4}),
             ("mma_nhwc", {"precision": "tf32", "tile_n": 64, "split": 2}),
             ("wgmma_nhwc", {"precision": "tf32"}), ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "stages": 6}),  # added 2026-11-24
             # split-K and 64-pixel tiles: the 7x7 and 14x14 layers (2026-11-26, PERFORMANCE.md session 21)
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "split": 2}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 64}),
             # wgmma reading x in place: 1x1 layers only (2026-11-26, PERFORMANCE.md sessions 20-21)
             ("wgmma_nchw", {"precision": "tf32", "tile_m": 256}), ("wgmma_nchw", {"precision": "tf32", "stages": 6}),
             ("wgmma_nchw", {"precision": "tf32", "stages": 3}),
             ("wgmma_nchw", {"precision": "tf32", "tile_m": 64, "tile_n": 64}),
             # persistent: the 1x1 layers at 28 and 56 (2026-11-26, PERFORMANCE.md session 21)
             ("wgmma_nchw", {"precision": "tf32", "persistent": True}),
             ("wgmma_nchw", {"precision": "tf32", "tile_m": 64, "tile_n": 64, "persistent": True}),
             ("wgmma_nchw", {"precision": "tf32", "tile_m": 256, "stages": 3}),  # 1x1 at 7x7 and stride 2
             # 1x1 layers (H100, 2026-11-27, PERFORMANCE.md session 25): 512->1024 at 28 stride 2 65.5 -> 59.2 us,
             # 2048->512 at 7 45.4 -> 42.4, 512->128 at 28 33.6 -> 31.2, 128->512 at 28 35.0 -> 32.7
             ("wgmma_nchw", {"precision": "tf32", "tile_m": 256, "tile_n": 64}),
             ("wgmma_nchw", {"precision": "tf32", "tile_n": 64, "stages": 6}),
             ("wgmma_nchw", {"precision": "tf32", "tile_n": 64, "stages": 6, "persistent": True}),
             ("wgmma_nchw", {"precision": "tf32", "stages": 5, "persistent": True}),
             # the pixels a strided layer reads copied dense first: 1024->2048 at 14 stride 2 62.7 -> 60.9 us (H100,
             # 2026-11-27, PERFORMANCE.md session 27)
             ("wgmma_nchw", {"precision": "tf32", "gather": True, "tile_m": 256}),
             # split-K: 2048->512 at 7 (26 tiles of 256 x 128, 64 k steps) 43.0 -> 37.1 us (same H100 and session)
             ("wgmma_nchw", {"precision": "tf32", "split": 4, "tile_m": 256}),
             # three warpgroups of 64 pixels (tile_n=192): 1x1 1024->512 at 14 39.2 -> 37.6 us, 512->256 at 28 44.0
             # -> 40.9, 512->128 at 28 31.5 -> 29.2 (H100, 2026-11-27, PERFORMANCE.md session 31)
             ("wgmma_nchw", {"precision": "tf32", "tile_n": 192}),
             # stream-K: the 3x3 layers at 7 and 14 (VGG conv5 0.097 -> 0.078 ms; H100, PERFORMANCE.md session 22)
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 256, "stream_k": True}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "stages": 6, "stream_k": True}),
             # 64-channel tiles: the 64->64 3x3 layers computed zero rows in half of every wgmma (3x3 64->64 at 56
             # 80.4 -> 70.9 us, VGG conv1_2 0.548 -> 0.478 ms; H100, 2026-11-27, PERFORMANCE.md session 28)
             ("wgmma_nhwc", {"precision": "tf32", "tile_m": 64, "stages": 5}),
             # persistent blocks, the k steps running on from tile to tile (3x3 256->256 at 14 50.9 -> 47.2 us, 1x1
             # 512->1024 at 28 stride 2 65.4 -> 60.4, 3x3 64->64 at 56 72.9 -> 69.2, 3x3 512->512 at 7 77.0 -> 69.6;
             # H100, 2026-11-27, PERFORMANCE.md session 29)
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "persistent": True}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 128, "stages": 6, "persistent": True}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_m": 64, "tile_n": 128, "persistent": True}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_m": 64, "tile_n": 128, "stages": 6, "persistent": True}),
             ("wgmma_nhwc", {"precision": "tf32", "persistent": True}),
             # 192-pixel tiles: VGG conv4 (16 x 28 x 28 pixels) is 66 x 4 = 264 tiles of 128 x 192, two waves of 132
             # SMs, where 256-pixel tiles are 196 (1.5 waves): conv4_2 220.4 -> 202.6 us, conv4_1 119.9 -> 109.9 (H100,
             # 2026-11-27, PERFORMANCE.md session 31)
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 192, "persistent": True}),
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 192, "stages": 5, "persistent": True}),
             # 224-pixel tiles: VGG conv5's 16 x 14 x 14 pixels are 14 whole tiles (256: 13, the last a quarter
             # full), stream-K 77.6 -> 76.3 us (H100, 2026-11-27, PERFORMANCE.md session 32)
             ("wgmma_nhwc", {"precision": "tf32", "tile_n": 224, "stream_k": True}),
             # x read in place and each pixel once a block, the taps shifted reads of a run of rows with their halo:
             # VGG conv1_2 0.462 -> 0.306 ms, conv2_2 0.273 -> 0.262, 3x3 64->64 at 56 (batch 32) 0.070 -> 0.054
             # (H100, 2026-11-28, PERFORMANCE.md session 34)
             ("wgmma_halo", {"tile_m": 64, "tile_n": 512}), ("wgmma_halo", {"tile_m": 128, "tile_n": 256}),
             ("wgmma_halo", {"tile_m": 128, "tile_n": 128, "stages": 2})],
    "float16": [("mma_nchw", {"precision": "fp16"}), ("mma_nchw", {"precision": "fp16", "tile_m": 64}),
                # half tensors in and out, as cuDNN fp16 takes and gives them (mma_nchw: 1x1 stride-1 layers only)
                ("mma_nhwc", {"precision": "fp16", "io": "float16"}),
                ("mma_nhwc", {"precision": "fp16", "io": "float16", "stages": 4}),
                ("mma_nhwc", {"precision": "fp16", "io": "float16", "tile_n": 64, "stages": 4}),
                ("mma_nhwc", {"precision": "fp16", "io": "float16", "tile_n": 64, "split": 2}),
                ("mma_nhwc", {"precision": "fp16", "io": "float16", "tile_n": 64, "split": 4}),
                ("mma_nchw", {"precision": "fp16", "io": "float16"}),
                ("mma_nchw", {"precision": "fp16", "io": "float16", "stages": 4}),
                ("mma_nchw", {"precision": "fp16", "io": "float16", "tile_m": 64}),
                ("wgmma_nhwc", {"io": "float16"}), ("wgmma_nhwc", {"io": "float16", "tile_n": 128}),
                ("wgmma_nhwc", {"io": "float16", "tile_n": 128, "stages": 6}),  # Hopper's wgmma: added 2026-11-24
                ("wgmma_nhwc", {"io": "float16", "tile_n": 64}),  # the 7x7 and 14x14 layers: 2026-11-26
                # 64-channel tiles (two blocks an SM at these stages): 3x3 64->64 at 56 49.6 -> 41.9 us, VGG conv1_2
                # 0.346 -> 0.280 ms; 3x3 512->512 at 7 46.0 -> 44.0 us, at 14 stride 2 51.1 -> 48.8 (H100, 2026-11-27,
                # PERFORMANCE.md session 28)
                ("wgmma_nhwc", {"io": "float16", "tile_m": 64, "tile_n": 128, "stages": 3}),
                ("wgmma_nhwc", {"io": "float16", "tile_m": 64, "tile_n": 128}),
                # persistent blocks (1x1 512->1024 at 28 stride 2 36.4 -> 34.9 us, 3x3 256->256 at 14 31.5 -> 29.5, 3x3
                # 512->512 at 7 44.2 -> 40.1; H100, 2026-11-27, PERFORMANCE.md session 29)
                ("wgmma_nhwc", {"io": "float16", "tile_n": 128, "persistent": True}),
                ("wgmma_nhwc", {"io": "float16", "tile_n": 64, "stages": 6, "persistent": True}),
                ("wgmma_nhwc", {"io": "float16", "tile_m": 64, "tile_n": 128, "stages": 6, "persistent": True}),
                ("wgmma_nhwc", {"io": "float16", "stages": 3, "persistent": True}),  # 256 pixels: 3 stages fit
                # 192-pixel tiles: VGG conv4_2 122.0 -> 112.6 us, conv3_2 124.2 -> 122.2, ResNet-50 1x1 512->1024 at 28
                # stride 2 34.2 -> 33.2 (H100, 2026-11-27, PERFORMANCE.md session 31)
                ("wgmma_nhwc", {"io": "float16", "tile_n": 192, "persistent": True}),
                # 224-pixel tiles: a 7x7 layer's 32 x 49 pixels are 7 whole tiles (256: the seventh holds 32), 1x1
                # 512->2048 at 7 21.8 -> 20.4 us, 1024->2048 at 14 stride 2 31.6 -> 29.8 (H100, 2026-11-27, session 32)
                ("wgmma_nhwc", {"io": "float16", "tile_n": 224}),
                ("wgmma_nchw", {"io": "float16", "tile_m": 256}), ("wgmma_nchw", {"io": "float16", "stages": 3}),
                ("wgmma_nchw", {"io": "float16", "tile_m": 256, "tile_n": 64}),
                ("wgmma_nchw", {"io": "float16", "tile_m": 64, "tile_n": 64}),  # half x: 1x1 stride-1 only
                ("wgmma_nchw", {"io": "float16", "persistent": True}),  # persistent: session 21
                ("wgmma_nchw", {"io": "float16", "tile_m": 256, "persistent": True}),
                ("wgmma_nchw", {"io": "float16", "tile_m": 256, "tile_n": 64, "persistent": True}),
                ("wgmma_nchw", {"io": "float16", "tile_m": 64, "stages": 3, "persistent": True}),
                # 1024->512 at 14 27.8 -> 25.8 us, 512->128 at 28 18.5 -> 17.2 (H100, 2026-11-27, session 25)
                ("wgmma_nchw", {"io": "float16", "tile_m": 256, "stages": 3}),
                ("wgmma_nchw", {"io": "float16", "tile_n": 64, "stages": 6, "persistent": True}),
                # half x read by wgmma from shared memory: 1024->256 at 14 15.9 -> 15.3 us, 512->256 at 28 22.3 -> 19.9
                # (H100, 2026-11-27, PERFORMANCE.md session 26)
                ("wgmma_nchw", {"io": "float16", "stages": 6}),
                ("wgmma_nchw", {"io": "float16", "stages": 6, "persistent": True}),
                # half x at stride 2 and at 7x7, copied dense first: 256->512 at 56 stride 2 50.3 -> 43.2 us,
                # 2048->512 at 7 27.0 -> 24.8 (H100, 2026-11-27, PERFORMANCE.md session 27)
                ("wgmma_nchw", {"io": "float16", "gather": True, "tile_m": 256, "tile_n": 64, "stages": 6,
                                "persistent": True}),
                ("wgmma_nchw", {"io": "float16", "gather": True, "tile_n": 64, "stages": 6, "persistent": True}),
                # three warpgroups of 64 pixels: 1024->512 at 14 is 132 tiles of 128 x 192 for 132 SMs (98 of 256 x
                # 128): 21.0 -> 19.9 us, 256->1024 at 14 18.2 -> 17.0 (H100, 2026-11-27, PERFORMANCE.md session 31)
                ("wgmma_nchw", {"io": "float16", "tile_n": 192})],
}


# bf16: the fp16 winners' tiles and pipelines in bf16, half tensors (io=float16) as bf16 ones (io=bfloat16), not yet
# measured in bf16 (a start only orders the first trials; the search still covers the whole space). Those past a
# limit (a float x tile where half x fitted) are left out.
def _bf16_starts() -> list[tuple[str, dict]]:
    from ..errors import LimitError
    from ..kernels.problems import get_problem

    one = get_problem("resnet50-1x1-64-64-56")  # the NCHW kernels' 16-bit tensors: 1x1 layers
    layers = {"wgmma_nchw": one, "mma_nchw": one}
    out: dict[str, tuple[str, dict]] = {}
    for variant, params in STARTS["float16"]:
        if variant not in ("mma_nchw", "mma_nhwc", "wgmma_nhwc", "wgmma_nchw"):
            continue
        given = {**params, "precision": "bf16", **({"io": "bfloat16"} if params.get("io") == "float16" else {})}
        family = get_variant(variant)
        try:  # the family's limits, without a render
            family.check(layers.get(variant, get_problem("resnet50-3x3-64-64-56")), family.resolve(given))
        except LimitError:
            continue
        out.setdefault(json.dumps([variant, given], sort_keys=True), (variant, given))
    return list(out.values())


STARTS["bfloat16"] = _bf16_starts()


def _key(variant: str, params: dict) -> tuple[str, str]:
    return variant, json.dumps(params, sort_keys=True, default=str)


def starts(variants: list[str], grid: list[tuple[str, dict]], precision: str) -> list[tuple[str, dict]]:
    """The configurations a tune tries first, each once, only what the space holds: every variant once (its first
    STARTS entry for the precision, else its defaults, else its first configuration in the space), then the rest
    of STARTS, then the defaults of variants that started from a STARTS entry. So a short budget tries every
    method (FFT on a 5x5 layer) before it refines one."""
    in_grid = {_key(v, p): (v, p) for v, p in grid}

    def full(variant: str, given: dict) -> tuple | None:
        resolved = get_variant(variant).resolve(given)
        key = _key(variant, {p.name: resolved[p.name] for p in get_variant(variant).params if not p.host})
        return key if key in in_grid else None

    listed = [key for admitted in ADMITS[precision] for variant, given in STARTS.get(admitted, [])
              if variant in variants if (key := full(variant, given))]
    defaults = {variant: full(variant, {}) or next((_key(v, p) for v, p in grid if v == variant), None)
                for variant in variants}
    first = {}
    for key in listed:
        first.setdefault(key[0], key)
    order = [*first.values(), *(key for variant, key in defaults.items() if variant not in first and key),
             *listed, *(key for key in defaults.values() if key)]
    return [in_grid[key] for key in dict.fromkeys(order)]

