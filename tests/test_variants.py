
import math
import re

import jinja2
import numpy as np
import pytest
from cases import ALL, NHWC_PROBLEM, PROBLEM, WMMA_PROBLEM, problem_for

from simflow.backends.gpgpusim import unsupported
from simflow.errors import LimitError, UserError
from simflow.kernels.limits import KNOWN_DEVICES, check_threads
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.variants import VARIANTS, get_variant, parse_param_args, render, template_environment


def test_every_combination_renders_deterministically():
    seen = set()
    for name, params in ALL:
        a = render(name, problem_for(name), params)
        b = render(name, problem_for(name), dict(params))
        assert a.source == b.source
        assert a.source.startswith(f"// simflow kernel: variant {name}\n")
        header = a.source.splitlines()[1]
        for key in params:
            assert f"{key}=" in header
        assert 'extern "C" __global__' in a.source
        assert all(f"{kernel}(" in a.source for kernel in a.kernel_names)
        seen.add(a.fingerprint())
    assert len(seen) == len(ALL)  # every configuration is a distinct kernel


def test_fingerprint_covers_source_and_options():
    k = render("global", PROBLEM)
    assert k.fingerprint() != k.fingerprint(("-O3",))
    assert k.fingerprint() != render("global", get_problem("batch3x3")).fingerprint()
    assert k.fingerprint() == render("global", PROBLEM.with_batch(99)).fingerprint()  # batch is run-time


def test_unroll_levels_change_the_loops():
    none = render("global", PROBLEM, {"unroll": "none"}).source
    inner = render("global", PROBLEM, {"unroll": "inner"}).source
    both = render("global", PROBLEM, {"unroll": "both"}).source
    assert none.count("for (int kx") == 1 and "#pragma unroll 1" in none
    assert "for (int kx" not in inner and "for (int ky" in inner
    assert "for (int ky" not in both and both.count("acc +=") == PROBLEM.K * PROBLEM.K


def test_restrict_and_padding_options():
    assert "__restrict__" in render("shared", PROBLEM, {"restrict": True}).source
    assert "__restrict__" not in render("shared", PROBLEM).source
    assert "TILE_LD = TILE_IN + 1" in render("shared", PROBLEM, {"pad_row": True}).source
    valid = render("global", get_problem("fmnist-conv1")).source
    assert "iy >= 0" not in valid  # no bounds checks without padding
    assert "iy >= 0" in render("global", PROBLEM).source


def test_launch_geometry():
    k = render("shared_weights", PROBLEM, {"tile": 8})
    (launch,) = k.launches(3)
    assert launch.grid == (3 * 3, 5, 3)  # ceil(21/8) * ceil(23/8) tiles, M, B
    assert launch.block == (8, 8, 1)
    assert launch.dynamic_smem == 4 * (12 * 12 + 3 * 5 * 5)
    (const_launch,) = render("constant", PROBLEM).launches(1)
    assert const_launch.args == ("x", "y", "batch")


def test_strict_undefined_in_templates():
    with pytest.raises(jinja2.UndefinedError):
        template_environment().get_template("global.cu.j2").render({})


def test_unknown_variant_lists_valid_ones():
    with pytest.raises(UserError) as err:
        render("tiled", PROBLEM)
    assert all(name in str(err.value) for name in VARIANTS)


def test_unknown_parameter_lists_valid_ones():
    with pytest.raises(UserError, match="valid parameters: tile, pad_row, unroll, restrict"):
        render("shared", PROBLEM, {"tiles": "16"})


@pytest.mark.parametrize("params,words", [
    ({"tile": "12"}, "tile takes one of 8, 16, 32, got 12"),
    ({"tile": "big"}, "tile takes one of 8, 16, 32"),
    ({"unroll": "all"}, "unroll takes one of none, inner, both"),
    ({"restrict": "maybe"}, "restrict is on/off"),
    ({"tile": 12}, "tile takes one of 8, 16, 32"),
])
def test_bad_values_list_the_choices(params, words):
    with pytest.raises(UserError, match=words):
        render("global", PROBLEM, params)


def test_cli_style_values_are_parsed():
    k = render("shared", PROBLEM, parse_param_args(["tile=32", "pad_row=on", "restrict=yes"]))
    assert k.params == {"tile": 32, "pad_row": True, "unroll": "none", "restrict": True, "streams": 0}
    with pytest.raises(UserError, match="NAME=VALUE"):
        parse_param_args(["tile"])


def test_constant_memory_limit_names_the_limit():
    with pytest.raises(LimitError) as err:
        render("constant", get_problem("toycnn"))
    msg = str(err.value)
    assert "constant memory" in msg and "6,553,600 bytes" in msg and "65,536 bytes" in msg
    assert "global" in msg  # says what to use instead
    render("constant", get_problem("k7net-conv2"))  # 24*12*7*7 floats fit


def test_thread_limit():
    with pytest.raises(LimitError, match="threads per block: needs 4096"):
        check_threads((64, 64, 1), KNOWN_DEVICES["sm_90"], "use a smaller tile")


def test_regtile_limits_and_launch():
    k = render("regtile", get_problem("fmnist-conv1"), {"outputs": 4, "rows": 8})
    (launch,) = k.launches(100)
    assert launch.block == (20, 8, 1) and launch.grid == (10, 100, 1) and launch.args == ("x", "y", "batch")
    assert "float4" in k.source and "#pragma unroll \n    for (int c" in k.source  # channels unrolled, 16-byte stores
    assert "STAGES = 1" in k.source  # one image of one channel: nothing to copy ahead
    conv2 = render("regtile", get_problem("fmnist-conv2"), {"outputs": 4})
    assert "#pragma unroll 1\n    for (int c" in conv2.source and "STAGES = 2" in conv2.source
    assert "VEC = 2" in conv2.source  # 34 outputs a row: 8-byte stores
    with pytest.raises(LimitError, match=r"per thread \(channels x outputs\): needs 1024, the limit is 128"):
        render("regtile", get_problem("toycnn"))
    with pytest.raises(LimitError, match="constant memory"):
        render("regtile", get_problem(None, shape="1,64,64,16,16,3,1"), {"outputs": 1})  # 64 accumulators: weights


def test_regtile_spreads_rows_and_images_over_blocks():
    """34 output rows at rows=16 are 3 blocks of 12 rows, not 16 + 16 + 2; images=4 on 10 images is 3 blocks
    a row band (the last one computes 2)."""
    k = render("regtile", get_problem("fmnist-conv2"), {"outputs": 2, "rows": 16, "images": 4, "weights": "shared"})
    (launch,) = k.launches(10)
    assert launch.block == (17, 12, 1) and launch.grid == (3, 3, 1) and launch.args == ("x", "w", "y", "batch")
    assert "BY = 12" in k.source and "IMAGES = 4" in k.source
    wide = render("regtile", get_problem("fmnist-conv1"), {"rows": 32})
    assert wide.launches(1)[0].block == (20, 27, 1)  # 80 rows = 27 + 27 + 26
    odd = render("regtile", get_problem(None, shape="1,2,4,12,12,3,1,1"), {"outputs": 4, "rows": 4})
    assert "VEC = 4" in odd.source
    assert "VEC = 1" in render("regtile", get_problem(None, shape="1,2,4,11,11,3,1,1"), {"outputs": 4}).source


def test_regtile_splits_output_channels_over_blocks():
    """channels: each thread computes a group of the output channels, blockIdx.z picks which, and shared weights
    hold only the group's; a group must divide M (the error lists those that do)."""
    layer = get_problem("k7net-conv2")  # 16 x 16 outputs, M = 24
    every = render("regtile", layer, {"outputs": 4, "rows": 4})
    # all 24 channels' weights do not fit
    with pytest.raises(LimitError, match="needs 58,688 bytes, .* fewer channels per block or weights=constant"):
        render("regtile", layer, {"outputs": 4, "weights": "shared", "rows": 4})
    grouped = render("regtile", layer, {"outputs": 4, "weights": "shared", "rows": 4, "channels": 8})
    (launch,) = grouped.launches(64)
    assert every.launches(64)[0].grid == (4, 64, 1) and launch.grid == (4, 64, 3) and launch.block == (4, 4, 1)
    assert "MG = 24;" in every.source and "MG = 8;" in grouped.source and "float wsh[C * K * K][MG];" in grouped.source
    assert "m0 = blockIdx.z * MG" in grouped.source and "* M + m0 + m) * HOUT" in grouped.source
    constant = render("regtile", layer, {"outputs": 2, "channels": 4})
    assert "w_const[(((m0 + m) * C + c) * K + ky) * K + kx]" in constant.source
    assert constant.launches(64)[0].grid == (2, 64, 6)
    with pytest.raises(LimitError, match=r"a divisor of M=24; use channels=0 \(all\) or one of 4, 8, 12$"):
        render("regtile", layer, {"channels": 16})
    with pytest.raises(LimitError, match=r"a divisor of M=6; use channels=0 \(all\)$"):
        render("regtile", Problem(B=1, C=2, M=6, H=9, W=9, K=3), {"channels": 4})


def test_gemm_variants():
    k = render("implicit_gemm", get_problem("toycnn"), {"tile": 128})
    (launch,) = k.launches(1)
    assert launch.grid == (392, 2, 1) and launch.block == (256, 1, 1) and k.precision == "float32"
    with pytest.raises(LimitError, match=r"output pixels per launch.*needs 2,147,532,800, the limit is 2,147,483,647"):
        k.launches(2**31 // (224 * 224) + 1)
    fp16 = render("wmma", get_problem("toycnn"))
    tf32 = render("wmma", get_problem("toycnn"), {"precision": "tf32"})
    assert (fp16.precision, tf32.precision) == ("float16", "tf32")
    assert "m16n16k16" in fp16.source and "wmma::precision::tf32" in tf32.source
    assert "not in GPGPU-Sim's PTX parser" in unsupported(tf32.features)
    assert unsupported(fp16.features) == ""  # whether a simulator build runs fp16 WMMA is its probes' answer:
    assert fp16.wmma_forms == ("wmma_m16n16k16_row_row_f32_shared",) and tf32.wmma_forms == ()
    with pytest.raises(LimitError, match=r"output channels M for WMMA fragments \(a multiple of 16\): needs 4"):
        render("wmma", get_problem("batch3x3"))


def test_implicit_gemm_tile_fits_96_or_32_output_channels():
    """tile_m: a block of 96 (or 32) output channels over `tile` pixels, a thread's last TM % 4 rows at
    TM / 4 * 64 + ty * (TM % 4); with 96 rows, 256 threads load weight elements tid + 256 i, not whole rows."""
    alexnet = Problem(B=32, C=3, M=96, H=227, W=227, K=11, stride=4, name="alexnet-conv1")
    square, fitted = (render("implicit_gemm", alexnet, params) for params in ({}, {"tile_m": 96}))
    assert square.launches(32)[0].grid == fitted.launches(32)[0].grid == (757, 1, 1)  # 96,800 pixels, 128 a block
    assert "BM = 128, BN = 128" in square.source and "BM = 96, BN = 128" in fitted.source
    assert "TM / 4 * 64 + ty * (TM % 4) + i % 4" in fitted.source
    assert "constexpr bool A_ROWS = 256 % BM == 0;" in fitted.source
    narrow = render("implicit_gemm", Problem(B=2, C=5, M=40, H=13, W=11, K=3, pad=1), {"tile_m": 32, "tile": 64})
    assert narrow.launches(2)[0].grid == (5, 2, 1) and "BM = 32, BN = 64" in narrow.source
    assert "BM = 64, BN = 64" in render("conv_relu_pool", get_problem("batch3x3"), {"tile": 64}).source  # no tile_m


def test_wmma_with_fragments_in_global_memory_is_four_kernels_over_padded_half_copies():
    layer = Problem(B=2, C=16, M=16, H=12, W=12, K=3, pad=1, name="sim-wmma")
    k = render("wmma", layer, {"fragments": "global"})
    assert k.wmma_forms == ("wmma_m16n16k16_row_row_f32_global",) and unsupported(k.features) == ""
    assert k.kernel_names == ["conv2d_wmma_x", "conv2d_wmma_w", "conv2d_wmma", "conv2d_wmma_y"]
    # k = C*K*K = 144 (a multiple of 16), M = 16 -> 64 rows, 2*144 = 288 columns -> 320
    assert k.workspace(2) == {"col": 144 * 320 // 2, "wh": 64 * 144 // 2, "gemm": 64 * 320}
    x, w, gemm, y = k.launches(2)
    assert (x.grid, x.args) == ((2, 144, 1), ("x", "col", "batch"))
    assert (w.grid, w.args) == ((36, 1, 1), ("w", "wh"))
    assert (gemm.grid, gemm.block, gemm.args) == ((5, 1, 1), (128, 1, 1), ("wh", "col", "gemm", "batch"))
    assert (y.grid, y.args) == ((2, 16, 1), ("gemm", "y", "batch"))
    assert "shared" not in k.source.split("using namespace nvcuda;")[1]  # no tile in shared memory
    assert k.source.count("wmma::load_matrix_sync") == 2 and "wmma::store_matrix_sync(gemm +" in k.source
    ragged = render("wmma", Problem(B=1, C=3, M=32, H=9, W=7, K=5, pad=2), {"fragments": "global"})
    assert ragged.workspace(1)["wh"] == 64 * 80 // 2  # k = 75 padded to 80
    with pytest.raises(LimitError, match="precision of wmma fragments=global .*use fragments=shared for tf32"):
        render("wmma", layer, {"fragments": "global", "precision": "tf32"})
    assert render("wmma_nhwc", NHWC_PROBLEM).wmma_forms == ("wmma_m16n16k16_row_col_f32_shared",)


def test_im2col_gemm_is_three_kernels_with_a_workspace():
    k = render("im2col_gemm", get_problem("toycnn"), {"tile": 64})
    assert k.kernel_names == ["conv2d_im2col_gemm_im2col", "conv2d_im2col_gemm_gemm", "conv2d_im2col_gemm_permute"]
    im2col, gemm, permute = k.launches(1)
    assert im2col.grid == (196, 6400, 1) and gemm.grid == (784, 4, 1) and permute.grid == (196, 256, 1)
    assert (im2col.args, gemm.args, permute.args) == (("x", "col", "batch"), ("col", "w", "gemm", "batch"),
                                                      ("gemm", "y", "batch"))
    assert k.workspace(1) == {"col": 6400 * 50176, "gemm": 256 * 50176}
    with pytest.raises(LimitError, match=r"im2col rows C\*K\*K .*needs 102,400"):
        render("im2col_gemm", get_problem(None, shape="1,4096,8,8,8,5,0"))


def test_conv_relu_pool_writes_pooled_outputs():
    k = render("conv_relu_pool", get_problem("toycnn"))
    assert k.output == "conv_relu_pool" and k.output_shape(1) == (1, 256, 112, 112)
    (launch,) = k.launches(1)
    assert launch.grid == (4 * 112 * 112 // 128, 2, 1)
    assert "fmaxf(v, 0.0f)" in k.source and render("implicit_gemm", get_problem("toycnn")).output == "conv"


def test_streams_is_a_host_parameter_of_every_variant():
    """It changes how the kernels are run (and the header that names it), not their code."""
    for name, variant in VARIANTS.items():
        streams = variant.param("streams")
        assert streams.host and streams.default == 0
        a = render(name, problem_for(name)).source.splitlines()
        b = render(name, problem_for(name), {"streams": "4"}).source.splitlines()
        assert a[0] == b[0] and "streams=0" in a[1] and "streams=4" in b[1] and a[2:] == b[2:]
        assert "simulate with streams=0" in unsupported(render(name, problem_for(name), {"streams": 2}).features)


def test_fp16_arithmetic_in_the_gemm_variants():
    for name in ("implicit_gemm", "conv_relu_pool", "im2col_gemm"):
        fp32 = render(name, get_problem("toycnn"), {"tile": 128, "bk": 16})
        fp16 = render(name, get_problem("toycnn"), {"tile": 128, "bk": 16, "precision": "fp16"})
        assert (fp32.precision, fp16.precision) == ("float32", "float16")
        assert "__hfma2" in fp16.source and "half As[2][BK][BM]" in fp16.source and "__hfma2" not in fp32.source
        assert ".f16x2" in unsupported(fp16.features) and not unsupported(fp32.features)
    with pytest.raises(UserError, match="precision takes one of fp32, fp16"):
        render("implicit_gemm", PROBLEM, {"precision": "tf32"})


def test_weights_read_as_float4_only_when_rows_allow():
    """C*K*K % 4 == 0 and whole float4s per thread: vector loads; else scalar ones (odd PROBLEM: 75)."""
    assert "reinterpret_cast<const float4*>(wm + k)" in render("implicit_gemm", get_problem("toycnn"),
                                                               {"bk": 16}).source
    assert "reinterpret_cast<const float4*>(wm + k)" not in render("implicit_gemm", PROBLEM, {"bk": 16}).source
    assert "float4*>(wrow + k)" in render("wmma", get_problem("toycnn")).source


def test_refusals_name_the_limit():
    for params in ({"tile_n": 256}, {"bk": 64}):
        with pytest.raises(LimitError, match="registers per thread .* use tile_n=128 and bk=32 with tf32"):
            render("wmma_nhwc", NHWC_PROBLEM, {"precision": "tf32", **params})


def test_channel_last_copy_reads_pixel_pairs_and_writes_128_byte_rows():
    """The x copy of the nhwc GEMMs: a lane reads two half pixels at once where an image's pixels pair up and none
    is skipped, a block covers a 128-byte row of the copy's channels where CP allows (64 half, 32 float; wgmma_nhwc's
    TF32 copy 256 bytes, 64 floats), and each thread stores 16 bytes; one pixel a lane from float x, where the copy
    subsamples or where H*W is odd."""
    cases = [("wgmma_nhwc", "vgg16-conv4_2", {"io": "float16"}, 2, 64, (13, 8, 16)),
             ("wgmma_nhwc", "vgg16-conv4_2", {"precision": "tf32"}, 1, 64, (25, 8, 16)),  # float x: one a lane
             ("mma_nhwc", "vgg16-conv4_2", {"precision": "tf32"}, 1, 32, (25, 16, 16)),
             ("mma_nhwc", "vgg16-conv4_2", {}, 1, 64, (25, 8, 16)),  # fp16 from float x
             ("mma_nhwc", "resnet50-1x1-512-1024-28-s2", {"io": "float16"}, 1, 64, (7, 8, 16)),  # 14 x 14 kept
             ("wgmma_nhwc", "resnet50-3x3-512-512-7", {"precision": "tf32"}, 1, 64, (2, 8, 16)),  # 49 pixels
             ("wgmma_nhwc", Problem(B=2, C=96, M=64, H=8, W=8, K=3, pad=1), {"precision": "tf32"}, 1, 32,
              (2, 3, 2)),  # CP = 96: no 64-channel block
             ("wmma_nhwc", WMMA_PROBLEM, {}, 1, 32, (16, 1, 16))]  # C = 3 pads to 32 (no 64-channel row); 483 pixels
    for name, layer, params, vec, channels, grid in cases:
        kernel = render(name, get_problem(layer) if isinstance(layer, str) else layer, params)
        copy = kernel.launches(16)[0]
        assert f"constexpr int XV = {vec}, XC = {channels}, XP = 32 * XV;" in kernel.source, (name, layer)
        assert copy.kernel.endswith("_x") and copy.block == (256, 1, 1)
        assert copy.grid[:2] == grid[:2] and copy.grid[2] >= grid[2], (name, layer, copy.grid)  # z: images, then
        # the blocks of the weight copy it does too (test_the_weight_copy_and_zeroing_ride_in_the_x_copy)
        assert ("pix / WOUT * STRIDE * W" in kernel.source) == (vec == 1 and "s2" in str(layer))


def test_wmma_nhwc_pads_the_channels_to_its_k_step():
    small = render("wmma_nhwc", WMMA_PROBLEM)  # C = 3: padded with zeros to 32 in both channel-last copies
    assert "constexpr int CP = 32;" in small.source
    assert small.workspace(2)["xh"] == 2 * 32 * WMMA_PROBLEM.H * WMMA_PROBLEM.W // 2
    weights = small.launches(2)[1]  # a warp for each 32 channels of each output channel, 8 warps a block
    assert small.launches(2)[0].grid[1] == 1 and weights.grid[0] == WMMA_PROBLEM.M // 8 and weights.block == (32, 8, 1)
    kernel = render("wmma_nhwc", get_problem("toycnn"))
    names = [launch.kernel for launch in kernel.launches(1)]
    assert names == ["conv2d_wmma_nhwc_x", "conv2d_wmma_nhwc_w", "conv2d_wmma_nhwc"]
    assert kernel.launches(1)[2].dynamic_smem == 3 * 2 * 128 * 40 * 2  # 3 stages of half A and B tiles
    assert kernel.workspace(1) == {"xh": 256 * 228 * 228 // 2, "wh": 256 * 256 * 25 // 2}  # floats of halves
    wide = render("wmma_nhwc", get_problem("toycnn").__class__(B=1, C=32, M=32, H=9, W=9, K=3), {"bk": 64})
    assert "constexpr int CP = 64;" in wide.source  # bk=64 on 32 channels: 32 zero channels
    assert "cp.async.cg.shared.global" in kernel.source and kernel.wmma_forms  # a build refuses it by its probes


def test_pipelined_gemms_split_k_zeroes_y_first():
    """split > 1: a zero kernel between the operand copies and the GEMM, whose grid's z is the split."""
    toycnn = get_problem("toycnn")
    for name, copies, x, weights in (("implicit_gemm_async", ["_w"], "x", "wt"), ("mma_nchw", ["_w"], "x", "wh")):
        whole = render(name, toycnn, {"split": 1}).launches(2)
        assert [launch.kernel for launch in whole] == [f"conv2d_{name}{c}" for c in copies] + [f"conv2d_{name}"]
        assert whole[-1].grid[2] == 1 and whole[-1].args == (x, weights, "y", "batch")
        kernel = render(name, toycnn, {"split": 4})
        *before, zero, gemm = kernel.launches(2)
        assert before == whole[:-1]
        assert zero.kernel == f"conv2d_{name}_zero" and zero.args == ("y", "batch")
        assert zero.grid == (4096, 1, 1) and gemm.grid[2] == 4  # a grid-stride loop over 2 x 256 x 224 x 224
        assert gemm.grid[:2] == whole[-1].grid[:2] and "atomicAdd" in kernel.source
        assert "atomicAdd" not in render(name, toycnn, {"split": 1}).source


def test_implicit_gemm_async_pads_channels_and_output_channels():
    p = Problem(B=2, C=20, M=6, H=9, W=9, K=3, pad=1)
    kernel = render("implicit_gemm_async", p, {"bk": 16, "tile_m": 64, "tile_n": 128, "stages": 3})
    assert "constexpr int CP = 32, MP = 8;" in kernel.source  # C to bk's multiple, M to 4s (16-byte rows)
    assert kernel.workspace(2) == {"wt": 32 * 9 * 8}
    w, gemm = kernel.launches(2)
    assert w.grid == (-(-32 * 9 * 8 // 256), 1, 1)
    assert gemm.grid == (-(-2 * 81 // 128), 1, 1) and gemm.dynamic_smem == 4 * 3 * 16 * (64 + 128)


def test_implicit_gemm_async_wide_tile_is_one_block_an_sm():
    """tile_m=256: 16 x 8 outputs a thread (128 accumulators), so one block an SM; the others two."""
    layer = get_problem("toycnn")
    wide = render("implicit_gemm_async", layer, {"tile_m": 256, "bk": 16, "stages": 4})
    assert "__launch_bounds__(256, 1)" in wide.source and "256 threads of 16 x 8 outputs" in wide.source
    _, gemm = wide.launches(1)
    assert gemm.grid == (224 * 224 // 128, 1, 1) and gemm.dynamic_smem == 4 * 4 * 16 * (256 + 128)
    assert "__launch_bounds__(256, 2)" in render("implicit_gemm_async", layer, {"bk": 16}).source


def test_mma_nchw_k_depth_gathers_a_first_layer():
    """C < bk: k = (ky, kx, c) unpadded per tap, K*K*C padded once; else each tap's channels padded to bk."""
    first = get_problem("resnet50-conv1")  # C = 3, 7 x 7
    fp16 = render("mma_nchw", first, {"precision": "fp16", "bk": 32})
    assert "constexpr int KDIM = 160, KSTEPS = KDIM / BK;" in fp16.source  # 147 rows -> 160, not 49 x 32
    assert fp16.workspace(1) == {"wh": 64 * 160 * 2 // 4}  # halves, in floats
    tf32 = render("mma_nchw", get_problem("resnet50-3x3-64-64-56"), {"precision": "tf32", "bk": 16})
    assert "constexpr int CSTEPS = CP / BK" in tf32.source and tf32.workspace(1) == {"wh": 64 * 64 * 9}
    _, gemm = tf32.launches(1)
    assert gemm.dynamic_smem == 3 * (128 * (16 + 4) * 4 + 16 * (128 + 8) * 4)


def test_mma_sync_kernels_are_refused_by_the_simulator_by_name():
    for name in ("mma_nhwc", "mma_nchw"):
        for precision, shape in (("fp16", "m16n8k16"), ("tf32", "m16n8k8")):
            reason = unsupported(render(name, NHWC_PROBLEM, {"precision": precision}).features)
            assert "ldmatrix" in reason and shape in reason and "sm_70" in reason
        assert "streams=" in unsupported(render(name, NHWC_PROBLEM, {"streams": 2}).features)
    assert unsupported(render("implicit_gemm_async", NHWC_PROBLEM).features) == ""


def test_mma_nchw_half_io_takes_half_tensors_on_1x1_layers_only():
    """io=float16: x, w, y half in device memory; 8-byte copies of four pixels, ldmatrix.trans B, y rounded to half
    in shared memory and written in 16-byte rows."""
    layer = get_problem("resnet50-1x1-256-64-56")
    kernel = render("mma_nchw", layer, {"precision": "fp16", "io": "float16"})
    assert kernel.io == "float16" and render("mma_nchw", layer, {"precision": "fp16"}).io == "float32"
    source = kernel.source
    assert "typedef half x_t;" in source and "(const x_t* __restrict__ x," in source and "x_t* __restrict__ y" in source
    assert "copy8(Bs" in source and "ldmatrix4_trans(r, Bs" in source and "__floats2half2_rn(" in source
    assert "pack(" not in source
    padded = render("mma_nchw", get_problem(None, shape="2,48,64,12,12,1,0"), {"precision": "fp16", "io": "float16"})
    assert "_w(const half* __restrict__ w" in padded.source  # (C=256 needs no padding: w is read in place)
    (gemm,) = kernel.launches(1)
    assert gemm.dynamic_smem == 3 * (128 * (32 + 8) * 2 + 32 * (128 + 8) * 2)  # both tiles half
    assert "io=float16" in unsupported(kernel.features)
    with pytest.raises(LimitError, match="precision=tf32, the limit is precision=fp16"):
        render("mma_nchw", layer, {"precision": "tf32", "io": "float16"})
    for other in ("resnet50-1x1-2048-512-7", "resnet50-1x1-256-512-56-s2", "resnet50-3x3-64-64-56"):
        with pytest.raises(LimitError, match="K=1, stride=1, pad=0, H.W a multiple of 4; use io=float32"):
            render("mma_nchw", get_problem(other), {"io": "float16"})


def test_mma_nhwc_half_io_reads_half_x_and_writes_half_y():
    layer = get_problem("resnet50-3x3-256-256-28-s2")  # 14 x 14 outputs: 8-byte rows of half y (196 % 8 != 0)
    kernel = render("mma_nhwc", layer, {"io": "float16", "tile_n": 256})
    assert kernel.io == "float16" and "io=float16" in unsupported(kernel.features)
    assert "_x(const half* __restrict__ x" in kernel.source and "_w_task(const half* __restrict__ w" in kernel.source
    assert "half* __restrict__ y, int batch)" in kernel.source
    assert "constexpr int V = HW % 8 == 0 ? 8 : HW % 4 == 0 ? 4 : 1" in kernel.source
    *_, gemm = kernel.launches(1)
    assert gemm.dynamic_smem == 3 * (128 + 256) * (32 + 8) * 2  # the pipeline's, above the epilogue's 8 x 64 x 72 x 2
    small = render("mma_nhwc", layer, {"io": "float16", "stages": 2})
    assert small.launches(1)[-1].dynamic_smem == 8 * 64 * (32 + 8) * 2 == 2 * (128 + 128) * 40 * 2
    seven = render("mma_nhwc", get_problem("resnet50-3x3-512-512-7"), {"io": "float16"})  # 49 outputs an image
    assert "HW % 4 == 0 ? 4 : 1" in seven.source and "*out = tile[r * LDS + c];" in seven.source


def test_split_k_into_half_y_adds_float32_sums_and_rounds_once():
    """Split-K with half y: the splits add into a float32 workspace `acc`, zeroed first and rounded into y by a
    last kernel (adding partial sums in half would round each of them)."""
    for name, layer in (("mma_nhwc", "resnet50-3x3-512-512-7"), ("mma_nchw", "resnet50-1x1-1024-256-14")):
        problem = get_problem(layer)
        kernel = render(name, problem, {"io": "float16", "split": 2})
        *before, gemm, rounding = kernel.launches(3)
        (zero,) = [launch for launch in before if "acc" in launch.args]  # mma_nhwc: the x copy's last blocks
        assert zero.kernel.endswith("_x" if name == "mma_nhwc" else "_zero")
        assert "acc" in gemm.args and "y" not in gemm.args and gemm.grid[2] == 2
        assert rounding.kernel.endswith("_half") and rounding.args == ("acc", "y", "batch")
        assert kernel.workspace(3)["acc"] == 3 * problem.M * problem.Hout * problem.Wout
        assert "float* __restrict__ y, int batch)" in kernel.source and "__float2half_rn(acc[tail])" in kernel.source
        assert "acc" not in render(name, problem, {"io": "float16"}).workspace(3)
        assert "acc" not in render(name, problem, {"split": 2}).workspace(3)  # float32 y: added into y itself
        assert render(name, problem, {"split": 2}).launches(3)[-1].args[2] == "y"


def test_in_place_kernels_copy_four_pixels_only_where_they_are_contiguous():
    """1x1, stride 1, no padding, HW % 4 == 0: four columns are one image's four aligned pixels (16-byte copies)."""
    vector = "16-byte cp.async copies of four pixels"
    for name in ("implicit_gemm_async", "mma_nchw"):
        assert vector in render(name, get_problem("resnet50-1x1-256-64-56")).source
        for layer in ("resnet50-1x1-2048-512-7", "resnet50-1x1-256-512-56-s2", "resnet50-3x3-64-64-56"):
            assert vector not in render(name, get_problem(layer)).source  # HW = 49; a stride; a 3x3 window


def test_half_weights_of_a_1x1_layer_are_read_in_place():
    """io=float16 on a 1x1 layer whose C needs no padding: w[m][c] already is the GEMM's wh, so there is no _w
    kernel and no wh buffer; with padding (C=48, bk=32) or a 3x3 window the copy stays."""
    layer = get_problem("resnet50-1x1-256-64-56")
    nchw = render("mma_nchw", layer, {"precision": "fp16", "io": "float16"})
    (gemm,) = nchw.launches(2)
    assert gemm.args == ("x", "w", "y", "batch") and nchw.workspace(2) == {} and "_w(" not in nchw.source
    nhwc = render("mma_nhwc", layer, {"io": "float16", "split": 2})
    names = [launch.kernel.removeprefix("conv2d_mma_nhwc") for launch in nhwc.launches(2)]
    assert names == ["_x", "", "_half"]  # the x copy zeroes acc too, and copies no weights
    assert nhwc.launches(2)[0].args == ("x", "xh", "batch", "acc")
    assert nhwc.launches(2)[1].args == ("xh", "w", "acc", "batch") and set(nhwc.workspace(2)) == {"xh", "acc"}
    padded = get_problem(None, shape="2,48,64,10,10,1,0")
    for name, params in (("mma_nchw", {"io": "float16"}), ("mma_nhwc", {"io": "float16"}), ("mma_nchw", {})):
        assert render(name, padded if params else layer, params).launches(2)[-1].args[1] == "wh"
    assert render("mma_nhwc", get_problem("resnet50-3x3-64-64-56"), {"io": "float16"}).launches(2)[-1].args[1] == "wh"


def test_tf32_weights_of_a_1x1_layer_are_read_in_place():
    """TF32 on a 1x1 layer whose C needs no padding: float w[m][c] is wh (the tensor cores take TF32 from its bits),
    so no _w kernel and no wh buffer, in all four tensor-core kernels that copy w; fp16 from float w still
    converts it, and a 3x3 window or padded channels keep the copy."""
    layer = get_problem("resnet50-1x1-2048-512-7")
    for name, params in (("wgmma_nhwc", {"tile_n": 64}), ("wgmma_nchw", {}), ("mma_nchw", {}), ("mma_nhwc", {})):
        kernel = render(name, layer, {"precision": "tf32", **params})
        assert "wh" not in kernel.workspace(2) and not re.search(r"\b\w+_w\(const", kernel.source), name
        assert kernel.launches(2)[-1].args[1] == "w" and "truncated where a copy would round" in kernel.source
    assert render("wgmma_nhwc", layer, {"precision": "fp16"}).launches(2)[-1].args[1] == "wh"
    assert render("wgmma_nhwc", get_problem("resnet50-3x3-512-512-7"),
                  {"precision": "tf32"}).launches(2)[-1].args[1] == "wh"
    assert render("mma_nchw", get_problem(None, shape="2,40,64,10,10,1,0"),
                  {"precision": "tf32"}).launches(2)[-1].args[1] == "wh"


def test_strided_1x1_copies_only_the_pixels_it_reads():
    """mma_nhwc on a 1x1 stride-2 layer: the channel-last copy holds the Hout x Wout pixels the window reads (a
    quarter of x), and the GEMM reads it at stride 1; a 3x3 strided layer copies every pixel."""
    layer = get_problem("resnet50-1x1-256-512-56-s2")  # 56x56 -> 28x28
    kernel = render("mma_nhwc", layer, {"io": "float16"})
    copy, *_ = kernel.launches(2)
    assert copy.grid == (28 * 28 // 32 + 1, 256 // 64, 2) and kernel.workspace(2)["xh"] == 2 * 256 * 28 * 28 * 2 // 4
    assert "constexpr int XH = HOUT, XW = WOUT, XS = 1;" in kernel.source
    assert "pix / WOUT * STRIDE * W + pix % WOUT * STRIDE" in kernel.source
    three = render("mma_nhwc", get_problem("resnet50-3x3-256-256-28-s2"), {"io": "float16"})
    assert "XH = H, XW = W, XS = STRIDE" in three.source and three.launches(2)[0].grid[0] == 28 * 28 // 64 + 1
    wmma = render("wmma_nhwc", layer)
    assert wmma.launches(2)[0].grid[0] == 56 * 56 // 32  # wmma_nhwc keeps the whole copy


def test_wgmma_nhwc_is_an_sm_90a_kernel_of_two_warpgroups():
    """wgmma_nhwc: k steps of one 128-byte swizzled row, one m64n{tile_n}k16 (k8 TF32) per warpgroup and 32 bytes of
    k; built for sm_90a only (wgmma exists nowhere else), refused elsewhere and by the simulator by name."""
    layer = get_problem("toycnn")
    kernel = render("wgmma_nhwc", layer)
    assert kernel.precision == "float16" and kernel.arch == "sm_90a"
    assert kernel.build_arch("sm_90") == "sm_90a" and render("mma_nhwc", layer).build_arch("sm_80") == "sm_80"
    for other in ("sm_80", "sm_100"):
        with pytest.raises(LimitError, match=f"needs {other}, the limit is sm_90 .*use mma_nhwc"):
            kernel.build_arch(other)
    assert "wgmma" in unsupported(kernel.features) and "sm_90a" in unsupported(kernel.features)
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in kernel.source
    assert " %128, %129, p, 1, 1, 0, 0;" in kernel.source  # 128 accumulators, then the two descriptors
    assert "fence.proxy.async.shared::cta" in kernel.source and "ldmatrix4(" not in kernel.source
    assert "((part ^ (tid / 8 % 8)) << 4)" in kernel.source  # the 128-byte swizzle of each copy's 16 bytes
    copy, gemm = kernel.launches(1)  # the weight copy in the x copy's blocks past the image
    assert copy.args == ("x", "xh", "batch", "w", "wh") and gemm.args == ("xh", "wh", "y", "batch")
    assert gemm.grid == (224 * 224 // 256, 2, 1) and gemm.block == (256, 1, 1)
    assert gemm.dynamic_smem == 4 * (128 + 256) * 128 + 1024  # four stages of both tiles, aligned to 1024
    assert kernel.workspace(1) == {"xh": 256 * 228 * 228 * 2 // 4, "wh": 256 * 256 * 25 * 2 // 4}
    narrow = render("wgmma_nhwc", layer, {"tile_n": 128, "stages": 6})
    assert "m64n128k16" in narrow.source and " %64, %65, p, 1, 1, 0, 0;" in narrow.source
    assert narrow.launches(1)[-1].dynamic_smem == 6 * (128 + 128) * 128 + 1024
    with pytest.raises(LimitError, match="shared memory per block .* use fewer stages or tile_n=128"):
        render("wgmma_nhwc", layer, {"stages": 5})  # 5 x 48 KB
    stem = render("wgmma_nhwc", get_problem("resnet50-conv1"))  # C = 3 padded to 8 channels, 8 taps a k step
    assert "constexpr int CP = 8;" in stem.source and "constexpr int KDIM = 448;" in stem.source  # 49 taps: 7 steps
    tf32 = render("wgmma_nhwc", get_problem("resnet50-conv1"), {"precision": "tf32"})  # a 128-byte row: 4 taps of 8
    assert tf32.precision == "tf32" and "constexpr int CP = 8;" in tf32.source and "cvt.rna.tf32.f32" in tf32.source
    assert "m64n256k8.f32.tf32.tf32" in tf32.source and " %128, %129, p, 1, 1;" in tf32.source  # no transpose operands
    assert tf32.workspace(1)["wh"] == 64 * 416  # 4-byte elements: as many floats as elements (392 -> 13 steps of 32)
    with pytest.raises(LimitError, match="precision=tf32, the limit is precision=fp16"):
        render("wgmma_nhwc", layer, {"precision": "tf32", "io": "float16"})
    half = render("wgmma_nhwc", get_problem("resnet50-1x1-256-64-56"), {"io": "float16"})
    assert [launch.kernel for launch in half.launches(1)] == ["conv2d_wgmma_nhwc_x", "conv2d_wgmma_nhwc"]  # w in place
    assert "half* __restrict__ y, int batch)" in half.source
    small = render("wgmma_nhwc", get_problem("resnet50-1x1-256-64-56"), {"io": "float16", "tile_n": 128, "stages": 3})
    assert small.launches(1)[-1].dynamic_smem == 3 * 256 * 128 + 1024  # above the epilogue's 8 x 16 x 136 x 2


def test_wgmma_nhwc_64_channel_tile_shares_a_and_halves_each_warpgroups_pixels():
    """tile_m=64: a 64-channel layer fills the tile (tile_m=128 made half of every wgmma zero rows); both warpgroups
    read the one A tile, each its own tile_n / 2 pixels of B (m64n{tile_n / 2}), and store their own columns."""
    layer = get_problem("resnet50-3x3-64-64-56")
    wide, narrow = render("wgmma_nhwc", layer), render("wgmma_nhwc", layer, {"tile_m": 64})
    assert wide.launches(32)[-1].grid == narrow.launches(32)[-1].grid == (32 * 56 * 56 // 256, 1, 1)
    assert "m64n256k16" in wide.source and "m64n128k16" in narrow.source
    assert " %64, %65, p, 1, 1, 0, 0;" in narrow.source  # 64 accumulators, then the two descriptors
    assert "b_tile = smem_s + A_BYTES + (warp / 4) * WGN * ROW" in narrow.source
    assert "wm = warp % 4, wn = warp / 4" in narrow.source and "wm = warp, wn = 0" in wide.source
    assert narrow.launches(32)[-1].dynamic_smem == 4 * (64 + 256) * 128 + 1024
    deep = render("wgmma_nhwc", layer, {"tile_m": 64, "stages": 5})
    assert deep.launches(32)[-1].dynamic_smem == 5 * (64 + 256) * 128 + 1024
    with pytest.raises(LimitError, match="shared memory per block .*stages=6 of 64 \\+ 256 rows"):
        render("wgmma_nhwc", layer, {"tile_m": 64, "stages": 6})
    tf32 = render("wgmma_nhwc", get_problem("vgg16-conv5_1"), {"precision": "tf32", "tile_m": 64, "tile_n": 64})
    assert "m64n32k8.f32.tf32.tf32" in tf32.source and tf32.launches(16)[-1].grid == (49, 8, 1)


def test_wgmma_nhwc_splits_k_or_narrows_the_tile_on_small_layers():
    """The 7x7 layers have 13 tiles of 128 pixels x 4 of 128 channels for 132 SMs: split-K (blocks over a share of
    the k steps, adding into zeroed y, or into float sums rounded to half y once) or 64-pixel tiles."""
    layer = get_problem("resnet50-3x3-512-512-7")
    split = render("wgmma_nhwc", layer, {"precision": "tf32", "tile_n": 128, "split": 2})
    copy, gemm = split.launches(32)  # the weight copy and the zeroing of y in the x copy's blocks past the images
    assert copy.kernel == "conv2d_wgmma_nhwc_x" and copy.args == ("x", "xh", "batch", "w", "wh", "y")
    assert gemm.grid == (13, 4, 2) and gemm.args == ("xh", "wh", "y", "batch")
    assert "PER_SPLIT = (KSTEPS + SPLIT - 1) / SPLIT" in split.source
    assert "atomicAdd(out + (size_t)m * HW, acc[i][j][2 * h]);" in split.source  # HW = 49: one column an atomic
    half = render("wgmma_nhwc", layer, {"io": "float16", "split": 4})
    assert [launch.kernel[len("conv2d_wgmma_nhwc"):] for launch in half.launches(32)] == ["_x", "", "_half"]
    assert half.launches(32)[0].args[-1] == "acc"
    assert half.launches(32)[1].args == ("xh", "wh", "acc", "batch") and half.workspace(32)["acc"] == 32 * 512 * 49
    assert "float* __restrict__ y, int batch)" in half.source  # the GEMM adds into the float sums
    narrow = render("wgmma_nhwc", layer, {"tile_n": 64})
    assert "m64n64k16" in narrow.source and " %32, %33, p, 1, 1, 0, 0;" in narrow.source
    gemm = narrow.launches(32)[-1]
    assert gemm.grid == (25, 4, 1) and gemm.dynamic_smem == 4 * (128 + 64) * 128 + 1024
    assert render("wgmma_nhwc", layer).launches(32)[-1].grid == (7, 4, 1)  # tile_n=256, no split: 28 blocks
    # 224 pixels: 32 x 49 = 1568 are 7 whole tiles (256's seventh holds 32); 112 sums a thread, 44 KB a stage
    whole = render("wgmma_nhwc", layer, {"io": "float16", "tile_n": 224, "stages": 5})
    assert "m64n224k16" in whole.source and " %112, %113, p, 1, 1, 0, 0;" in whole.source
    gemm = whole.launches(32)[-1]
    assert gemm.grid == (7, 4, 1) and gemm.dynamic_smem == 5 * (128 + 224) * 128 + 1024
    narrow = render("wgmma_nhwc", layer, {"tile_m": 64, "tile_n": 224})  # 112 pixels a warpgroup: 56 sums a thread
    assert "m64n112k16" in narrow.source and '"%48, %49, %50, %51, %52, %53, %54, %55"' in narrow.source
    assert " %56, %57, p, 1, 1, 0, 0;" in narrow.source  # a register list that ends mid-line, then a and b
    with pytest.raises(LimitError, match=r"shared memory per block \(sm_90\).*59,392-byte output tile"):
        render("wgmma_nhwc", layer, {"io": "float16", "tile_n": 224, "persistent": True})  # 4 stages and a half tile


def test_wgmma_nhwc_stream_k_shares_every_tiles_k_steps_over_a_persistent_grid():
    """stream_k: one persistent launch over all tiles' k steps (at most one a block until the launcher caps it at
    what the GPU holds), its pieces added into y zeroed first, or into float sums rounded to half y once; split-K
    with it is refused by name."""
    layer = get_problem("resnet50-1x1-2048-512-7")  # 13 x 4 tiles of 128 x 128, 64 k steps of 32 TF32 channels
    stream = render("wgmma_nhwc", layer, {"precision": "tf32", "tile_n": 128, "stream_k": True})
    copy, gemm = stream.launches(32)  # y zeroed by the x copy's blocks past the images
    assert copy.kernel == "conv2d_wgmma_nhwc_x" and copy.args == ("x", "xh", "batch", "y")
    assert gemm.grid == (13 * 4 * 64, 1, 1) and gemm.persistent == 1 and gemm.args == ("xh", "w", "y", "batch")
    assert "work * blockIdx.x / gridDim.x" in stream.source and "PER_SPLIT" not in stream.source
    assert "atomicAdd(out + (size_t)m * HW, acc[i][j][2 * h]);" in stream.source
    half = render("wgmma_nhwc", layer, {"io": "float16", "tile_n": 64, "stream_k": True})
    assert [launch.kernel[len("conv2d_wgmma_nhwc"):] for launch in half.launches(32)] == ["_x", "", "_half"]
    assert half.launches(32)[1].args == ("xh", "w", "acc", "batch") and half.workspace(32)["acc"] == 32 * 512 * 49
    plain = render("wgmma_nhwc", layer, {"precision": "tf32", "tile_n": 128})
    assert plain.launches(32)[-1].persistent == 0 and "gridDim.x" not in plain.source
    with pytest.raises(LimitError, match="stream_k .*needs split=2, the limit is split=1"):
        render("wgmma_nhwc", layer, {"precision": "tf32", "split": 2, "stream_k": True})


def test_implicit_gemm_async_stream_k_shares_every_tiles_k_steps_over_a_persistent_grid():
    """implicit_gemm_async stream_k: one persistent launch over all tiles' k steps, y zeroed first and the pieces
    added into it; split-K with it refused by name, and the simulator refuses it by name (its host program starts
    every block of the grid, so it would simulate split-K by every k step, not stream-K)."""
    layer = get_problem("resnet50-1x1-512-2048-7")  # 13 x 16 tiles of 128 x 128, 512 / 16 = 32 k steps
    stream = render("implicit_gemm_async", layer, {"bk": 16, "stream_k": True})
    assert [launch.kernel[len("conv2d_implicit_gemm_async"):] for launch in stream.launches(32)] == ["_w", "_zero", ""]
    gemm = stream.launches(32)[-1]
    assert gemm.grid == (13 * 16 * 32, 1, 1) and gemm.persistent == 1 and gemm.args == ("x", "wt", "y", "batch")
    assert "work * blockIdx.x / gridDim.x" in stream.source and "PER_SPLIT" not in stream.source
    assert "if (m < M) atomicAdd(y + " in stream.source  # HW = 49: a column at a time
    plain = render("implicit_gemm_async", layer, {"bk": 16})
    assert plain.launches(32)[-1].grid == (13, 16, 1) and plain.launches(32)[-1].persistent == 0
    assert "gridDim.x" not in plain.source and "atomicAdd" not in plain.source and not unsupported(plain.features)
    assert "simulate split=2, 4 or 8 instead" in unsupported(stream.features)
    with pytest.raises(LimitError, match="stream_k .*needs split=4, the limit is split=1"):
        render("implicit_gemm_async", layer, {"split": 4, "stream_k": True})


def test_persistent_wgmma_nhwc_runs_its_k_steps_on_across_tiles():
    """persistent: one launch over the tiles, marked so the launcher caps it at what the GPU holds; a block aims its
    copies at each tile as their first step is issued, so the next tile's copies fly while a tile's sums go out:
    through a half tile of their own past the stages (half y), or straight from registers (float y). Split-K and
    stream-K with it are refused by name."""
    layer = get_problem("resnet50-1x1-512-1024-28-s2")  # 49 x 8 tiles of 128 x 128, 8 k steps of 64 half channels
    half = render("wgmma_nhwc", layer, {"io": "float16", "tile_n": 128, "stages": 3, "persistent": True})
    plain = render("wgmma_nhwc", layer, {"io": "float16", "tile_n": 128, "stages": 3})
    gemm = half.launches(32)[-1]
    assert gemm.grid == (49 * 8, 1, 1) and gemm.persistent == 1 and plain.launches(32)[-1].grid == (49, 8, 1)
    assert gemm.dynamic_smem == 3 * (128 + 128) * 128 + 1024 + 8 * 16 * (128 + 8) * 2
    assert plain.launches(32)[-1].dynamic_smem == 3 * (128 + 128) * 128 + 1024  # the output tile reuses the stages
    assert "if (at / KSTEPS != aimed) aim(at / KSTEPS);" in half.source
    assert "reinterpret_cast<half*>(smem + STAGES * STAGE_BYTES)" in half.source
    assert "reinterpret_cast<half*>(smem) + warp" in plain.source and "aimed" not in plain.source
    assert "SPLIT" not in half.source and "atomicAdd" not in half.source
    narrow = render("wgmma_nhwc", layer, {"io": "float16", "tile_m": 64, "tile_n": 128, "stages": 3,
                                          "persistent": True})
    assert narrow.launches(32)[-1].dynamic_smem == 3 * (64 + 128) * 128 + 1024 + 8 * 16 * (64 + 8) * 2
    tf32 = render("wgmma_nhwc", get_problem("resnet50-3x3-512-512-7"), {"precision": "tf32", "persistent": True})
    assert tf32.launches(32)[-1].dynamic_smem == 4 * (128 + 256) * 128 + 1024  # float y: no output tile
    assert "out[(size_t)m * HW] = acc[i][j][2 * h];" in tf32.source  # HW = 49: a column a store
    with pytest.raises(LimitError, match="persistent .*needs split=2, stream_k=False"):
        render("wgmma_nhwc", layer, {"persistent": True, "split": 2})
    with pytest.raises(LimitError, match="persistent .*stream_k=True"):
        render("wgmma_nhwc", layer, {"persistent": True, "stream_k": True})
    with pytest.raises(LimitError, match="shared memory per block .*output tile \\(persistent, half y\\)"):
        render("wgmma_nhwc", layer, {"io": "float16", "stages": 4, "persistent": True})


def test_persistent_wgmma_nchw_keeps_its_output_tile_beside_the_pipeline():
    """persistent: the launch counts tiles and is marked so the launcher caps it at what the GPU holds; the output
    tile gets shared memory of its own (the next tile's copies fill the stages meanwhile). Where a channel tile's
    weights fit too (few k steps), each block keeps one channel tile's weights and the grid comes in whole
    multiples of the channel tiles."""
    stage, out = 128 * 128 + 64 * 128 * 2, 128 * 136 * 2  # weight rows and x tile (16,384 bytes); half output tile
    short = get_problem("resnet50-1x1-128-512-28")  # 2 k steps of 64 channels
    plain = render("wgmma_nchw", short, {"io": "float16"})
    stationary = render("wgmma_nchw", short, {"io": "float16", "persistent": True})
    a, b = plain.launches(32)[-1], stationary.launches(32)[-1]
    assert a.grid == b.grid == (32 * 784 // 128 * 4, 1, 1) and a.persistent == 0 and b.persistent == 4
    assert a.dynamic_smem == 4 * stage + 1024 and b.dynamic_smem == 2 * 128 * 128 + 4 * 64 * 128 * 2 + out + 1024
    assert "OUT_OFFSET = KSTEPS * W_BYTES + STAGES * X_BYTES" in stationary.source and "OUT_OFFSET = 0" in plain.source
    # half sums leave the registers by stmatrix .trans (16-byte rows of 8 pixels), then 16-byte stores (HW % 8 == 0)
    assert "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in plain.source
    assert "__stwb(reinterpret_cast<uint4*>" in plain.source
    long = get_problem("resnet50-1x1-1024-256-14")  # 16 k steps: 256 KB of weights a channel tile
    rotating = render("wgmma_nchw", long, {"io": "float16", "persistent": True})
    c = rotating.launches(32)[-1]
    assert c.persistent == 1 and c.dynamic_smem == 4 * stage + out + 1024
    assert "OUT_OFFSET = STAGES * STAGE_BYTES" in rotating.source and "load_w(tile_m0(i)" in rotating.source
    deep = render("wgmma_nchw", long, {"io": "float16", "persistent": True, "stages": 6}).launches(32)[-1]
    assert deep.dynamic_smem == 6 * stage + out + 1024 == 232_448  # the limit, to the byte
    with pytest.raises(LimitError, match="and the output tile, the limit is 232,448 bytes"):
        render("wgmma_nchw", long, {"io": "float16", "persistent": True, "stages": 6, "tile_m": 256})


def test_weight_copy_is_a_warp_per_32_channels_of_an_output_channel():
    """The _w kernels of the channel-last templates: 8 warps a block while their shared tiles fit 48 KB (K <= 5),
    one for 7x7 and 11x11 filters; rows of an odd number of words. (mma_nhwc and wgmma_nhwc run the 8-warp copy
    in the x copy's launch: test_the_weight_copy_and_zeroing_ride_in_the_x_copy.)"""
    for k, warps in ((3, 8), (2, 8), (5, 8), (7, 1), (11, 1)):
        layer = Problem(B=2, C=40, M=32, H=16, W=16, K=k, pad=k // 2, name=f"{k}x{k}")
        kernel = render("wmma_nhwc", layer, {"precision": "tf32", "tile_n": 128, "bk": 32})
        weights = kernel.launches(2)[1]
        assert weights.kernel == "conv2d_wmma_nhwc_w" and weights.block == (32, warps, 1)
        assert weights.grid == (-(-32 * 2 // warps), 1, 1)  # CP = 64 (bk 32 halves: 16 TF32 channels): 2 chunks
        assert f"WCOPY_WARPS = {warps}," in kernel.source and "WCOPY_S = (K * K) | 1" in kernel.source


def test_the_weight_copy_and_zeroing_ride_in_the_x_copy():
    """mma_nhwc and wgmma_nhwc: the 8-warp weight copy (K <= 5) and split-K's or stream-K's zeroing run as blocks of
    the x copy's launch past its images (z >= batch), in that order, their buffers after its own arguments: a launch
    fewer each. 7x7 filters keep their 1-warp `_w` launch; weights read in place need none."""
    layer = get_problem("resnet50-3x3-512-512-7")  # 49 pixels: 2 x 8 blocks an image of 64 TF32 channels
    kernel = render("wgmma_nhwc", layer, {"precision": "tf32", "tile_n": 128, "stages": 6, "stream_k": True})
    copy, gemm = kernel.launches(32)
    weight_blocks = 512 * (512 // 32) // 8  # a warp for each 32 channels of each output channel, 8 a block
    zero_blocks = 32 * 512 * 49 // 1024  # as the `_zero` launch had them: 1024 sums a block
    assert copy.grid == (2, 8, 32 + -(-(weight_blocks + zero_blocks) // (2 * 8)))
    assert copy.args == ("x", "xh", "batch", "w", "wh", "y") and gemm.args == ("xh", "wh", "y", "batch")
    assert kernel.kernel_names == ["conv2d_wgmma_nhwc_x", "conv2d_wgmma_nhwc"]
    source = kernel.source
    assert "if (blockIdx.z >= batch) {" in source and "constexpr int W_BLOCKS = (M * WCOPY_CHUNKS + 7) / 8;" in source
    assert "conv2d_wgmma_nhwc_w_task(w, " in source and "_w(const" not in source and "_zero(" not in source
    assert "const int first = W_BLOCKS, blocks = gridDim.x * gridDim.y * (gridDim.z - batch) - first;" in source
    plain = render("mma_nhwc", layer, {"precision": "tf32"})  # no split: the weight copy only
    assert [launch.args for launch in plain.launches(4)] == [("x", "xh", "batch", "w", "wh"),
                                                             ("xh", "wh", "y", "batch")]
    assert "(gridDim.z - batch) - first" not in plain.source
    stem = Problem(B=2, C=3, M=16, H=31, W=29, K=7, pad=3, stride=2, name="stem")  # 1 warp a block: its own launch
    names = [launch.kernel for launch in render("wgmma_nhwc", stem, {"precision": "tf32", "split": 2}).launches(2)]
    assert names == ["conv2d_wgmma_nhwc_x", "conv2d_wgmma_nhwc_w", "conv2d_wgmma_nhwc"]  # the zeroing rides along


def test_wgmma_nchw_gather_copies_the_pixels_a_layer_reads_first():
    """gather: a first launch writes the strided (or 7x7) layer's pixels dense, each image's padded to 16 bytes;
    the GEMM copies them 16 bytes at a time and stores only each image's HW pixels."""
    layer = get_problem("resnet50-1x1-512-1024-28-s2")  # 14 x 14 = 196 output pixels an image
    half = render("wgmma_nchw", layer, {"io": "float16", "gather": True})
    gather, gemm = half.launches(32)
    assert gather.kernel == "conv2d_wgmma_nchw_x" and gather.args == ("x", "xg", "batch")
    assert gemm.args == ("xg", "w", "y", "batch")  # C = 512: half w in place
    assert half.workspace(32) == {"xg": 32 * 512 * 200 * 2 // 4}  # 196 pixels padded to 200 (16 bytes of half)
    assert gather.grid == (32 * 512 * 200 // 8 // 256, 1, 1) and gemm.grid == (32 * 200 // 128 * 8, 1, 1)
    assert "constexpr int HWP = 200;" in half.source and "const int ncols = batch * HWP;" in half.source
    assert "copy16(dst + x_dst" in half.source  # 8 half pixels a copy, where in place there is none
    assert "src[q / WOUT * STRIDE * W + q % WOUT * STRIDE]" in half.source
    assert "if (m >= M || n >= ncols || q >= HW) continue;" in half.source
    assert "__stwb(reinterpret_cast<uint2*>(dst)" in half.source  # 196 % 8 == 4: 4 half pixels a store
    odd = render("wgmma_nchw", get_problem(None, shape="2,50,64,13,13,1,0,2"), {"precision": "tf32", "gather": True})
    weights, gather, gemm = odd.launches(2)  # C = 50, rows of 200 bytes: w copied (padded to 64), then the gather
    assert weights.kernel == "conv2d_wgmma_nchw_w" and gemm.args == ("xg", "wh", "y", "batch")
    assert odd.workspace(2)["xg"] == 2 * 50 * 52 and "copy16(dst + x_dst" in odd.source  # 49 -> 52 floats
    assert "*dst = out_tile[r * LDT + c];" in odd.source  # 49 % 4 != 0: a float a store
    with pytest.raises(LimitError, match=r"B x 52 \(the gathered pixels of an image\)"):  # the padded pixels count
        odd.launches(2**31 // 52 + 1)
    with pytest.raises(LimitError, match="gather=true in wgmma_nchw .*stride=1, H\\*W=784.*use gather=false"):
        render("wgmma_nchw", get_problem("resnet50-1x1-512-256-28"), {"io": "float16", "gather": True})


def test_wgmma_nchw_clusters_copy_the_weights_once_for_their_blocks():
    """cluster=N (TF32): a `_wi` launch lays the weights out as the stages hold them (every channel tile padded to
    tile_m rows, channels to a k step), the GEMM's grid is whole clusters of consecutive pixel tiles, and each block
    multicasts its share of a step's weight tile; cluster=1 renders the kernel it was."""
    layer = get_problem("resnet50-1x1-1024-256-14")  # 6272 pixels: 98 tiles of 64, 25 clusters of 4 (100 blocks)
    kernel = render("wgmma_nchw", layer, {"precision": "tf32", "cluster": 4, "tile_m": 256, "tile_n": 64})
    image, gemm = kernel.launches(32)
    assert image.kernel == "conv2d_wgmma_nchw_wi" and image.args == ("w", "wi")
    assert image.grid == (256 * 1024 // 4 // 256, 1, 1)  # a thread a 16-byte part
    assert gemm.args == ("x", "wi", "y", "batch") and gemm.grid == (100, 1, 1)
    assert kernel.workspace(32) == {"wi": 256 * 1024}
    assert "__cluster_dims__(CL, 1, 1)" in kernel.source and "constexpr int CL = 4;" in kernel.source
    assert ".multicast::cluster" in kernel.source and "barrier.cluster.arrive.relaxed" in kernel.source
    assert "load_w" not in kernel.source  # the weights come only by the bulk copies
    ragged = render("wgmma_nchw", get_problem(None, shape="3,200,104,12,12,1,0"),
                    {"precision": "tf32", "cluster": 2, "tile_m": 112, "tile_n": 192})
    assert ragged.workspace(3) == {"wi": 112 * 224}  # 104 rows padded to 112, 200 channels to 224
    assert ragged.launches(3)[-1].grid == (4, 1, 1)  # 432 pixels: 3 tiles, 2 clusters, a block past the last tile
    plain = render("wgmma_nchw", layer, {"precision": "tf32", "tile_m": 256, "tile_n": 64})
    assert [launch.kernel for launch in plain.launches(32)] == ["conv2d_wgmma_nchw"]
    assert "cluster" not in plain.source.split("\n", 2)[2] and "__cluster_dims__" not in plain.source
    with pytest.raises(LimitError, match="cluster=2 in wgmma_nchw .*needs precision=fp16, the limit is precision=tf32"):
        render("wgmma_nchw", layer, {"cluster": 2})
    with pytest.raises(LimitError, match="needs persistent=True, the limit is persistent=False"):
        render("wgmma_nchw", layer, {"precision": "tf32", "cluster": 2, "persistent": True})
    with pytest.raises(LimitError, match="tile_m=48, cluster=4.*a multiple of 32"):
        render("wgmma_nchw", layer, {"precision": "tf32", "cluster": 4, "tile_m": 48})


def test_wgmma_nchw_reads_weights_in_place_past_a_ragged_last_k_step():
    """A 1x1 layer whose C is no multiple of a k step (64 half, 32 TF32) but keeps w's rows 16 bytes aligned: w is
    read where it lies, a row C long, and the 16-byte copies past C are zero-filled (no _w launch, no wh); a row
    that is not 16 bytes aligned (C = 202 half, 201 float) is still copied and padded."""
    for shape, params in (("32,200,104,28,28,1,0", {"io": "float16"}), ("32,200,104,28,28,1,0", {"precision": "tf32"}),
                          ("32,72,40,56,56,1,0", {"io": "bfloat16", "precision": "bf16"}),
                          ("32,72,40,56,56,1,0", {"io": "float16", "tile_n": 64, "persistent": True})):
        kernel = render("wgmma_nchw", get_problem(None, shape=shape), params)
        (gemm,) = kernel.launches(32)
        assert gemm.args == ("x", "w", "y", "batch") and kernel.workspace(32) == {}, (shape, params)
        assert "constexpr int WLD = C;" in kernel.source and "copies past C are zero-filled" in kernel.source
        assert "const bool in_k = WLD == CP || k * BK + part * W_CHUNK < C;" in kernel.source
    for shape, params in (("2,202,40,8,8,1,0", {"io": "float16"}), ("2,201,40,8,8,1,0", {"precision": "tf32"})):
        kernel = render("wgmma_nchw", get_problem(None, shape=shape), params)
        weights, gemm = kernel.launches(2)
        assert weights.kernel == "conv2d_wgmma_nchw_w" and gemm.args[1] == "wh"
        assert "constexpr int WLD = CP;" in kernel.source


def test_wgmma_nchw_split_k_adds_float_sums_into_y():
    """split-K: gridDim.z blocks share a tile's k steps, y zeroed by a launch before and added into atomically;
    float y only (half y would need float sums and a rounding pass), a block a tile, equal k ranges."""
    layer = get_problem("resnet50-1x1-2048-512-7")
    tf32 = render("wgmma_nchw", layer, {"precision": "tf32", "split": 4, "tile_m": 256})
    zero, gemm = tf32.launches(32)
    assert zero.kernel == "conv2d_wgmma_nchw_zero" and zero.args == ("y", "batch")
    assert gemm.grid == (13 * 2, 1, 4) and gemm.args == ("x", "w", "y", "batch")
    assert "SPLIT = 4" in tf32.source and "const int first = SPLIT > 1 ? blockIdx.z * PER_SPLIT : 0;" in tf32.source
    assert "atomicAdd(dst, out_tile[r * LDT + c]);" in tf32.source  # 49 pixels an image: a float at a time
    wide = render("wgmma_nchw", get_problem("resnet50-1x1-1024-256-14"), {"precision": "tf32", "split": 2})
    assert "atomicAdd(reinterpret_cast<float4*>(dst)" in wide.source
    for params, limit in (({"io": "float16", "split": 2}, "persistent=false, io=float32"),
                          ({"precision": "tf32", "split": 2, "persistent": True}, "persistent=false, io=float32"),
                          ({"precision": "tf32", "split": 8}, "a split that divides 2")):
        with pytest.raises(LimitError, match=f"split-K in wgmma_nchw .*the limit is {limit}"):
            render("wgmma_nchw", get_problem("resnet50-1x1-64-64-56"), params)


def test_wgmma_nchw_split_k_sums_in_a_cluster():
    """reduce=cluster: the split's blocks of a tile are one cluster along gridDim.z, each storing its share of the
    tile's rows summed over every block's shared-memory tile in rank order: one launch, no zeroing, no atomics;
    nothing to sum without split-K."""
    layer = get_problem("resnet50-1x1-2048-512-7")
    params = {"precision": "tf32", "split": 4, "tile_m": 256, "tile_n": 128}
    (gemm,) = render("wgmma_nchw", layer, {**params, "reduce": "cluster"}).launches(32)
    kernel = render("wgmma_nchw", layer, {**params, "reduce": "cluster"})
    assert gemm.grid == render("wgmma_nchw", layer, params).launches(32)[-1].grid == (2 * 13, 1, 4)
    assert "__cluster_dims__(1, 1, SPLIT)" in kernel.source and "atomicAdd" not in kernel.source
    assert "sum += load_cluster(in_block(at, q));" in kernel.source  # 49 pixels an image: a float at a time
    wide = render("wgmma_nchw", get_problem("resnet50-1x1-1024-256-14"),
                  {"precision": "tf32", "split": 2, "reduce": "cluster"})
    assert "load4_cluster(in_block(at, q))" in wide.source and len(wide.launches(32)) == 1
    with pytest.raises(LimitError, match="reduce=cluster in wgmma_nchw .*split=1.*use reduce=atomic"):
        render("wgmma_nchw", layer, {"precision": "tf32", "reduce": "cluster"})


def test_wgmma_nchw_takes_x_in_place_on_1x1_layers():
    """wgmma_nchw: the transposed product, x's pixel rows the A operand (half x: M-major and swizzled in shared
    memory; float x: TF32-rounded into registers), the weight rows a swizzled K-major B; half x at stride 1 and
    H*W % 4 == 0 only."""
    layer = get_problem("resnet50-1x1-512-256-28")
    half = render("wgmma_nchw", layer, {"io": "float16", "tile_m": 256})
    assert half.arch == "sm_90a" and half.precision == "float16" and half.build_arch("sm_90") == "sm_90a"
    with pytest.raises(LimitError, match="use mma_nchw, its mma.sync counterpart"):
        half.build_arch("sm_80")
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in half.source
    assert '"}, %128, %129, p, 1, 1, 1, 0;' in half.source  # 128 accumulators, A's and B's descriptors, A transposed
    assert "wgmma(acc, a + 128 * kk, b + 2 * kk" in half.source and "wgmma_wait<1>();" in half.source
    assert "ldmatrix4_trans(a" not in half.source and "copy16(dst + x_dst" in half.source  # 784 % 8 == 0: 8 half pixels
    # a copy of 8 pixels is one 16-byte part of a 128-byte channel row, swizzled: part ^ (row % 8)
    assert "x_dst = xp / 64 * XW_BYTES + x_row * 128 + (((xp % 64 / 8) ^ (x_row % 8)) << 4)" in half.source
    (gemm,) = half.launches(32)  # C = 512 is a multiple of 64: half w read in place
    assert gemm.args == ("x", "w", "y", "batch") and gemm.grid == (32 * 784 // 128, 1, 1) and half.workspace(32) == {}
    assert gemm.dynamic_smem == 4 * (256 * 128 + 64 * 128 * 2) + 1024  # 64 channel rows of 128 half pixels: 16 KB
    narrow = render("wgmma_nchw", layer, {"io": "float16", "tile_m": 256, "tile_n": 64})  # two warpgroups, 128 each
    assert "m64n128k16" in narrow.source and "const int ncol = wg * NWG;" in narrow.source
    assert narrow.launches(32)[0].grid == (32 * 784 // 64, 1, 1)
    # three warpgroups of 64 pixels, 384 threads: 32 x 196 pixels at 14x14 are 33 tiles, 4 x 33 = 132 blocks
    wide = render("wgmma_nchw", get_problem("resnet50-1x1-1024-512-14"), {"io": "float16", "tile_n": 192})
    assert "m64n128k16" in wide.source and "constexpr int THREADS = 384;" in wide.source
    assert "__launch_bounds__(THREADS, 1)" in wide.source
    assert "const int prow = 64 * wg + 16 * (warp % 4);" in wide.source
    (gemm,) = wide.launches(32)
    assert gemm.grid == (132, 1, 1) and gemm.block == (384, 1, 1)
    assert gemm.dynamic_smem == 4 * (128 * 128 + 3 * 64 * 128) + 1024  # weight rows, three 64-pixel columns a stage
    with pytest.raises(LimitError, match=r"at most 168 registers.*tile_m <= 128"):
        render("wgmma_nchw", layer, {"io": "float16", "tile_n": 192, "tile_m": 256})
    tf32 = render("wgmma_nchw", get_problem("resnet50-1x1-1024-256-14"), {"precision": "tf32"})
    assert tf32.precision == "tf32" and "m64n128k8.f32.tf32.tf32" in tf32.source and '" %68, p, 1, 1;' in tf32.source
    assert "wgmma exists on sm_90a only" in unsupported(tf32.features)
    assert "tf32_bits(r0[0])" in tf32.source and "constexpr int LDX = BP + 8;" in tf32.source
    (gemm,) = tf32.launches(2)  # float w read in place, truncated to TF32 by the tensor cores
    assert gemm.args == ("x", "w", "y", "batch") and tf32.workspace(2) == {}
    weights, gemm = render("wgmma_nchw", Problem(B=1, C=1002, M=40, H=8, W=8, K=1),  # rows of 4008 bytes: copied
                           {"precision": "tf32"}).launches(2)
    assert weights.kernel == "conv2d_wgmma_nchw_w" and gemm.args == ("x", "wh", "y", "batch")
    ragged = render("wgmma_nchw", get_problem("resnet50-1x1-1024-256-14"), {"io": "float16"})  # 196 % 8 == 4
    assert "copy8(dst + x_dst" in ragged.source
    padded = render("wgmma_nchw", Problem(B=1, C=96, M=40, H=8, W=8, K=1), {})  # float x to half: C padded to 128
    assert "half2_bits(" in padded.source and "constexpr int CP = 128;" in padded.source
    assert padded.workspace(1) == {"wh": 40 * 128 * 2 // 4}
    with pytest.raises(LimitError, match="layers wgmma_nchw takes .*K=3, pad=1.*use wgmma_nhwc or mma_nchw"):
        render("wgmma_nchw", get_problem(None, shape="2,64,64,16,16,3,1"))
    # stride > 1 or H*W % 4 != 0: one 4-byte copy a pixel (float x), each at its own address; half x is refused
    for shape in ("2,64,64,16,16,1,0,2", "2,64,64,7,7,1,0"):
        single = render("wgmma_nchw", get_problem(None, shape=shape), {"precision": "tf32"})
        assert "copy4(reinterpret_cast<float*>(dst + x_dst" in single.source
        assert "*dst = out_tile[r * LDT + c];" in single.source  # one float a store
        with pytest.raises(LimitError, match=r"half x in wgmma_nchw .*use gather=true \(a dense copy of x first\), "
                                             "io=float32, or wgmma_nhwc"):
            render("wgmma_nchw", get_problem(None, shape=shape), {"io": "float16"})
    with pytest.raises(LimitError, match="precision=tf32, the limit is precision=fp16"):
        render("wgmma_nchw", layer, {"precision": "tf32", "io": "float16"})
    with pytest.raises(LimitError, match="shared memory per block .* use fewer stages or a smaller tile_m"):
        render("wgmma_nchw", layer, {"tile_m": 256, "stages": 5})  # float x: 5 x (32 + 33) KB


HALO_LAYERS = [Problem(B=2, C=13, M=37, H=9, W=20, K=3, pad=1, name="odd-3x3"),
               Problem(B=1, C=5, M=6, H=7, W=12, K=5, pad=2, name="5x5"),
               Problem(B=1, C=3, M=4, H=6, W=8, K=3, pad=0, name="unpadded"),
               Problem(B=1, C=2, M=3, H=5, W=56, K=3, pad=1, name="rows-56")]


@pytest.mark.parametrize("problem", HALO_LAYERS, ids=[p.name for p in HALO_LAYERS])
@pytest.mark.parametrize("tile_n", [128, 256, 512])
def test_wgmma_halo_tile_layout_computes_the_convolution(problem, tile_n):
    """The kernel's indexing, replayed in numpy with the layout simflow renders: each tile's x rows at slot
    j WQ + Z + ix of a channel's PITCH floats, the Z slots before each row zeros, and position q's tap (ky, kx)
    read at slot q - base + ky WQ + kx + Z - PAD. Every read stays inside the tile (junk positions included),
    every read of a stored position is a real pixel or a zero slot, and the stored positions are the layer."""
    params = VARIANTS["wgmma_halo"].resolve({"tile_m": 64, "tile_n": tile_n, "stages": 2})
    v = VARIANTS["wgmma_halo"].layout(problem, params)
    p, wq, z, bp, pitch = problem, v["wq"], v["z"], v["bp"], v["pitch"]
    assert pitch % 32 == 8 and wq % 4 == 0 and z >= p.pad
    rng = np.random.default_rng(3)
    x = rng.standard_normal((p.C, p.H, p.W))
    w = rng.standard_normal((p.M, p.C, p.K, p.K))
    y = np.zeros((p.M, p.Hout, p.Wout))
    qimg = p.Hout * wq
    for q0 in range(0, qimg, bp):
        r_first = q0 // wq
        rows = min(q0 + bp - 1, qimg - 1) // wq - r_first + p.K
        assert rows <= v["nrmax"]
        tile = np.full((p.C, pitch), np.nan)  # what no copy writes reads as NaN
        for j in range(v["nrmax"] + 1):
            tile[:, j * wq:j * wq + z] = 0.0
        for j in range(rows):
            iy = r_first - p.pad + j
            tile[:, j * wq + z:j * wq + z + p.W] = x[:, iy] if 0 <= iy < p.H else 0.0
        u = np.arange(bp) + q0 - r_first * wq
        out = np.zeros((p.M, bp))
        for ky in range(p.K):
            for kx in range(p.K):
                slots = u + ky * wq + kx + z - p.pad
                assert slots.max() < pitch
                out += w[:, :, ky, kx] @ tile[:, slots]
        q = q0 + np.arange(bp)
        stored = (q < qimg) & (q % wq < p.Wout)
        assert not np.isnan(out[:, stored]).any()
        y[:, q[stored] // wq, q[stored] % wq] = out[:, stored]
    want = np.zeros_like(y)
    padded = np.pad(x, ((0, 0), (p.pad, p.pad), (p.pad, p.pad)))
    for ky in range(p.K):
        for kx in range(p.K):
            want += np.einsum("mc,chw->mhw", w[:, :, ky, kx], padded[:, ky:ky + p.Hout, kx:kx + p.Wout])
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)


def test_wgmma_halo_launches_and_refusals():
    vgg = get_problem("vgg16-conv1_2")
    kernel = render("wgmma_halo", vgg, {"tile_m": 64, "tile_n": 512})
    weights, gemm = kernel.launches(16)
    # 16 images x 224 rows of 228 slots in tiles of 512 positions, one channel tile
    assert gemm.grid == (16 * math.ceil(224 * 228 / 512), 1, 1) and gemm.block == (256, 1, 1)
    assert gemm.args == ("x", "wt", "y", "batch") and weights.args == ("w", "wt")
    # the weights: 8 k steps of 9 taps x 64 rows x 32 bytes, written 16 bytes a thread
    assert kernel.workspace(16) == {"wt": 8 * 9 * 64 * 32 // 4} and weights.grid == (8 * 9 * 64 * 2 // 256, 1, 1)
    assert gemm.dynamic_smem <= 227 * 1024 and "constexpr int TB = 3;" in kernel.source
    assert kernel.precision == "tf32" and kernel.arch == "sm_90a" and "wgmma exists on sm_90a only" in \
        unsupported(kernel.features)
    for layer, params, match in ((get_problem("resnet50-3x3-128-128-56-s2"), {}, "stride of wgmma_halo"),
                                 (get_problem("vgg16-conv5_1"), {}, r"image width .* W=14"),
                                 (vgg, {"tile_m": 256, "tile_n": 512}, "float sums a thread .* 512"),
                                 (vgg, {"tile_m": 128, "stages": 4, "bk": 16}, "shared memory per block .* stages=4")):
        with pytest.raises(LimitError, match=match):
            render("wgmma_halo", layer, params)


@pytest.mark.parametrize("variant,layer", [("mma_nhwc", PROBLEM), ("mma_nchw", PROBLEM), ("wgmma_nhwc", PROBLEM),
                                           ("wgmma_nchw", get_problem("resnet50-1x1-64-64-56"))])
def test_bf16_is_a_fourth_precision_of_the_tensor_core_gemms(variant, layer):
    """bf16 (issue 58): the same tiles and pipelines as fp16, bf16 operands and instructions, float sums; the
    check's bf16 tolerance; half tensors (io=float16) refused with it; the simulator refuses it by name."""
    bf16 = render(variant, layer, {"precision": "bf16"})
    half = render(variant, layer, {"precision": "fp16"})
    assert bf16.precision == "bfloat16" and half.precision == "float16"
    assert "#include <cuda_bf16.h>" in bf16.source and "__nv_bfloat16" in bf16.source
    assert ".bf16.bf16" in bf16.source and ".f16.f16" not in bf16.source and ".bf16" not in half.source
    assert bf16.launches(4) == half.launches(4) and bf16.check_tolerance.atol == 1e-2
    assert "GPGPU-Sim has no bf16" in unsupported(bf16.features)
    with pytest.raises(LimitError, match="io=float16.*precision=bf16.*use io=float32 for bf16, or io=bfloat16"):
        render(variant, layer, {"precision": "bf16", "io": "float16"})
    one = get_problem("resnet50-1x1-64-64-56")  # mma_nchw takes 16-bit tensors on 1x1 stride-1 layers only
    tensors = render(variant, one, {"precision": "bf16", "io": "bfloat16"})  # bf16 x, w and y in memory
    code = " ".join(line.split("//")[0] for line in tensors.source.splitlines())
    assert tensors.io == "bfloat16" and "__nv_bfloat16" in code and "half" not in code
    assert tensors.launches(4) == render(variant, one, {"precision": "fp16", "io": "float16"}).launches(4)
    with pytest.raises(LimitError, match="io=bfloat16.*precision=fp16.*use io=float16 for fp16"):
        render(variant, one, {"precision": "fp16", "io": "bfloat16"})


def test_tune_in_bf16_admits_tf32_and_float32_but_not_fp16():
    from simflow.run.tune_starts import ADMITS, STARTS

    assert ADMITS["bfloat16"] == ("bfloat16", "tf32", "float32")
    assert STARTS["bfloat16"] and all(p["precision"] == "bf16" and p.get("io", "float32") in ("float32", "bfloat16")
                                      for _, p in STARTS["bfloat16"])
    assert sum(p.get("io") == "bfloat16" for _, p in STARTS["bfloat16"]) > 10  # bf16 tensors, as fp16's half ones
    for variant, params in STARTS["bfloat16"]:
        assert render(variant, get_problem("resnet50-1x1-64-64-56"), params).precision == "bfloat16"


def test_every_variants_tuner_starts_are_its_own_parameters_in_a_precision_tune_knows():
    """Issue 59: a variant declares what the tuner tries first (variants.toml's starts.PRECISION) beside its
    parameters; a start that names a parameter or value the variant lacks fails here, not in a user's tune."""
    from simflow.run.tune_starts import ADMITS, STARTS

    declared = [(name, precision, given) for name, variant in VARIANTS.items()
                for precision, starts in variant.starts.items() for given in starts]
    assert len(declared) > 90 and {precision for _, precision, _ in declared} <= set(ADMITS)
    for name, precision, given in declared:
        resolved = get_variant(name).resolve(given)  # refuses an unknown parameter or value
        assert all(resolved[key] == value for key, value in given.items()), (name, given)
        assert (name, given) in STARTS[precision]
        assert get_variant(name).precision_of(resolved) == precision, (name, precision, given)


def test_a_job_renders_its_kernel_once_however_often_asked(monkeypatch):
    """Issue 59: the sampler and the sweep ask a job for its kernel up to four times; one render serves them all,
    and variants read again are rendered again."""
    from simflow.job import Job
    from simflow.kernels import variants

    calls = []
    family = type(VARIANTS["shared"])
    real = family.render
    monkeypatch.setattr(family, "render", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    variants.rendered.cache_clear()
    job = Job.make("shared", {"tile": 8}, get_problem("batch3x3"), "gpgpusim")
    first = job.kernel()
    assert job.kernel() is first and Job.make("shared", {"tile": 8}, get_problem("batch3x3"), "gpgpusim"
                                              ).kernel() is first and len(calls) == 1
    variants.reload_variants()
    assert job.kernel() == first and job.kernel() is not first and len(calls) == 2


@pytest.mark.parametrize("variant", ["wmma", "wmma_nhwc"])
def test_wmma_takes_bf16_on_the_gpu_and_the_simulator_refuses_it(variant):
    kernel = render(variant, WMMA_PROBLEM, {"precision": "bf16"})
    assert kernel.precision == "bfloat16"
    assert "wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16" in kernel.source
    assert "GPGPU-Sim has no bf16" in unsupported(kernel.features) and kernel.wmma_forms == ()
    if variant == "wmma":
        with pytest.raises(LimitError, match="fragments=global.*needs bf16.*use fragments=shared for bf16"):
            render(variant, WMMA_PROBLEM, {"precision": "bf16", "fragments": "global"})


def test_wgmma_nchw_tiles_of_48_96_112_channels_and_where_half_y_refuses_them():
    """tile_m 48, 96 and 112 make the wgmma N that many channels (a 40- or 104-channel layer fills more of its tile);
    half y leaves the accumulators through stmatrix in pairs of 8-channel groups, so a warpgroup's N must be a
    multiple of 16: tile_m=48 or 112 with tile_n=64 (two warpgroups of 24 or 56 channels) is refused by name (it
    computed wrong sums on an H200, then faulted)."""
    from simflow.kernels.problems import Problem
    from simflow.kernels.variants import VARIANTS

    layer = Problem(B=2, C=72, M=40, H=12, W=10, K=1, name="1x1-72-40")
    wgmma = VARIANTS["wgmma_nchw"]
    for tile_m in (48, 96, 112):
        source = wgmma.render(layer, {"tile_m": tile_m, "io": "float16"}).source
        assert f"m64n{tile_m}k16" in source and f"BN = {tile_m}," in source
    assert "m64n24k8" in wgmma.render(layer, {"tile_m": 48, "tile_n": 64, "precision": "tf32"}).source  # float y
    for tile_m in (48, 112):
        refusal = (rf"output channels of a warpgroup in wgmma_nchw with half y .* needs {tile_m // 2} "
                   rf"\(tile_m={tile_m}, tile_n=64\), the limit is a multiple of 16")
        with pytest.raises(LimitError, match=refusal):
            wgmma.render(layer, {"tile_m": tile_m, "tile_n": 64, "io": "float16"})
    assert "m64n48k16" in wgmma.render(layer, {"tile_m": 96, "tile_n": 64, "io": "float16"}).source


def test_wgmma_nhwc_packs_several_taps_into_a_k_step_where_c_is_small():
    """C at most half a 128-byte k step on a K x K layer: the channel-last copies hold C padded to 8, 16 or 32
    channels a pixel, a k step is that many channels of several taps, and wh's rows end in zeros up to a whole step
    (5x5 16->48 in fp16: 25 taps of 16 channels, 400 -> 448, 7 k steps where 25 steps of 64 were three quarters
    zeros). A 1x1 layer, and a C that fills a step, keep one tap a step."""
    from simflow.kernels.problems import Problem
    from simflow.kernels.variants import VARIANTS

    wgmma = VARIANTS["wgmma_nhwc"]
    layer = Problem(B=2, C=16, M=48, H=20, W=19, K=5, pad=2, name="c16-5x5")
    kernel = wgmma.render(layer, {"precision": "fp16"})
    assert "constexpr int CP = 16;" in kernel.source and "constexpr int KDIM = 448;" in kernel.source
    assert "TAPS = BK / CP" in kernel.source and "tap < K * K &&" in kernel.source
    copy_x, gemm = kernel.launches(2)  # the weight copy in the x copy's blocks past the images
    assert copy_x.kernel.endswith("_x") and copy_x.grid[1] == 1  # one block of all 16 channels a pixel
    assert "XC = 16," in kernel.source
    assert kernel.workspace(2)["wh"] == 48 * 448 * 2 // 4 and kernel.workspace(2)["xh"] == 2 * 16 * 20 * 19 * 2 // 4
    streamed = wgmma.render(layer, {"precision": "fp16", "stream_k": True}).launches(2)[-1]
    assert streamed.grid[0] == math.ceil(2 * 20 * 19 / 256) * 1 * 7  # tiles x 7 k steps each
    tf32 = wgmma.render(Problem(B=2, C=3, M=16, H=31, W=29, K=7, pad=3, stride=2, name="stem"), {"precision": "tf32"})
    assert "constexpr int CP = 8;" in tf32.source and "KDIM = 416;" in tf32.source  # 49 taps x 8 -> 13 steps of 32
    for unpacked, params in ((Problem(B=2, C=64, M=64, H=9, W=9, K=3, pad=1, name="c64"), {"precision": "fp16"}),
                             (Problem(B=2, C=16, M=48, H=9, W=9, K=1, name="1x1"), {"precision": "fp16"}),
                             (Problem(B=2, C=32, M=48, H=9, W=9, K=3, pad=1, name="c32"), {"precision": "tf32"})):
        source = wgmma.render(unpacked, params).source
        assert "TAPS" not in source and "CSTEPS = CP / BK" in source


def _kernel_body_start(source: str, name: str) -> str:
    """The first lines of kernel `name`'s body in a rendered source."""
    found = re.search(r'extern "C" __global__ void[^;{]*?\b' + re.escape(name) + r"\(", source)
    assert found, f"kernel {name} not in the source"
    body = source.index("{", source.index(")", found.end()))
    return source[body + 1:body + 200]


def test_only_launches_whose_kernels_wait_for_the_one_before_are_programmatic():
    """A programmatic launch may start before the one before it ends (GpuBackend._launch): every kernel of one
    must begin by waiting for it (griddepcontrol.wait, sm_90 and newer only), or it would read a copy still being
    written. The first launch never is one (nothing before it in the variant), and the families that do not
    mark theirs launch each after the one before."""
    marked = set()
    for name, params in ALL:
        kernel = VARIANTS[name].render(problem_for(name), params)
        launches = kernel.launches(kernel.problem.B)
        assert not launches[0].programmatic
        for launch in launches[1:]:
            if launch.programmatic:
                marked.add(name)
                start = _kernel_body_start(kernel.source, launch.kernel)
                assert start.lstrip().startswith("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
                                                 '  asm volatile("griddepcontrol.wait;" ::: "memory");'), \
                    (name, params, launch.kernel, start)
    assert marked == {"wgmma_nhwc", "wgmma_nchw", "wgmma_halo"}
