"""Stride as a problem field: shapes, references, variants that take it and the one that refuses it."""

import json

import numpy as np
import pytest

from simflow.errors import LimitError, UserError
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.reference import check_output, conv2d_reference, make_inputs, sample_reference
from simflow.kernels.variants import VARIANTS, render
from simflow.results.store import shape_key


def test_the_output_size_and_the_shape_text():
    p = get_problem(shape="32,3,64,224,224,7,3,2")
    assert (p.stride, p.Hout, p.Wout) == (2, 112, 112) and p.flops == 2 * 32 * 64 * 3 * 49 * 112 * 112
    assert p.shape_text == "32,3,64,224,224,7,3,2" and "stride=2 -> 112x112" in p.describe()
    assert get_problem(shape="1,1,1,8,8,3").stride == 1 and get_problem(shape="1,1,1,8,8,3,1").pad == 1
    assert Problem(1, 1, 1, 9, 9, 3, 0, stride=3).Hout == 3
    with pytest.raises(UserError, match="stride must be 1 or more"):
        Problem(1, 1, 1, 8, 8, 3, stride=0)
    with pytest.raises(UserError, match=r"B,C,M,H,W,K\[,pad\[,stride\]\] \(6 to 8 integers\)"):
        get_problem(shape="1,2,3,4,5,3,1,1,1")


def test_records_before_stride_read_the_same():
    p = get_problem("batch3x3")
    assert "stride" not in p.as_dict() and "stride" not in json.loads(shape_key(p))
    strided = Problem(4, 1, 4, 16, 16, 3, 1, stride=2, name="s2")
    assert strided.as_dict()["stride"] == 2 and json.loads(shape_key(strided))["stride"] == 2
    assert Problem(**strided.as_dict()) == strided


@pytest.mark.parametrize("stride,pad,k", [(2, 0, 3), (2, 1, 3), (3, 2, 5), (2, 3, 7), (2, 0, 1)])
def test_a_strided_reference_is_the_dense_one_subsampled(stride, pad, k):
    p = Problem(B=2, C=3, M=4, H=17, W=14, K=k, pad=pad, stride=stride)
    x, w = make_inputs(p, 3)
    dense = conv2d_reference(x, w, pad)
    strided = conv2d_reference(x, w, pad, stride)
    assert strided.shape == p.output_shape
    np.testing.assert_array_equal(strided, dense[:, :, ::stride, ::stride][:, :, :p.Hout, :p.Wout])
    index = tuple(np.array(v) for v in ([0, 1, 1], [0, 3, 2], [0, p.Hout - 1, 1], [0, p.Wout - 1, 2]))
    np.testing.assert_allclose(sample_reference(x, w, pad, index, stride), strided[index], rtol=1e-12)
    assert check_output(p, x, w, strided.astype(np.float32), "float32").passed
    wrong = strided.astype(np.float32)
    wrong[1, 2, 0, 0] += 0.01
    assert not check_output(p, x, w, wrong, "float32").passed


STRIDED = Problem(B=2, C=32, M=32, H=29, W=27, K=3, pad=1, stride=2, name="s2")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_takes_a_stride_or_refuses_it_by_name(variant):
    if variant in ("winograd", "fft"):
        with pytest.raises(LimitError, match=f"stride of {variant} .* needs 2, the limit is 1; use implicit_gemm"):
            render(variant, STRIDED)
        return
    if variant == "wgmma_halo":  # the TF32 tensor-core kernel that takes a stride is named
        with pytest.raises(LimitError, match="stride of wgmma_halo .* needs 2, the limit is 1; use wgmma_nhwc"):
            render(variant, STRIDED)
        return
    if variant == "wgmma_nchw":  # 1x1 layers without padding only (a stride it takes)
        with pytest.raises(LimitError, match="layers wgmma_nchw takes .*K=3, pad=1.*use wgmma_nhwc or mma_nchw"):
            render(variant, STRIDED)
        return
    kernel = render(variant, STRIDED)
    assert "STRIDE = 2" in kernel.source and "stride=2" in kernel.source
    assert all(launch.grid[0] > 0 for launch in kernel.launches(2))


def test_the_shared_tile_holds_what_a_strided_block_reads():
    kernel = render("shared", STRIDED, {"tile": 8})
    assert kernel.launches(2)[0].dynamic_smem == 4 * ((8 - 1) * 2 + 3) ** 2


def test_suites_as_presets():
    from conftest import simflow

    from simflow.kernels.problems import SUITES, suite

    resnet = suite("resnet50")
    assert len(resnet) == 23 and len({p.shape_text for p in resnet}) == 23 and all(p.B == 32 for p in resnet)
    assert sum(p.K == 1 for p in resnet) == 15 and sum(p.stride == 2 for p in resnet) == 7
    assert resnet[0].name == "resnet50-conv1" and (resnet[0].Hout, resnet[0].K, resnet[0].stride) == (112, 7, 2)
    assert get_problem("resnet50-3x3-256-256-28-s2").Hout == 14
    vgg = suite("vgg16")
    assert len(vgg) == 13 and vgg[-1].name == "vgg16-conv5_3" and all(p.B == 16 and p.K == 3 for p in vgg)
    assert [p.name for p in SUITES["presets"]][:2] == ["fmnist-conv1", "fmnist-conv2"]
    with pytest.raises(UserError, match="unknown suite 'resnet18'; suites: resnet50, vgg16, presets"):
        suite("resnet18")
    listed = simflow("problems", "--suite", "resnet50", "--json")
    assert [row["preset"] for row in json.loads(listed.stdout)] == [p.name for p in resnet]
    with pytest.raises(UserError, match="or a layer of a suite"):
        get_problem("resnet50-nope")


def test_a_sweep_over_a_suite(tmp_path):
    from conftest import simflow

    sweep = tmp_path / "suite.toml"
    sweep.write_text('name = "r50"\nbackends = ["gpu"]\nsuite = "resnet50"\nbatch = 8\n\n'
                     '[[variants]]\nname = "implicit_gemm"\n\n[[variants]]\nname = "regtile"\n')
    proc = simflow("sweep", str(sweep), "--dry-run", "--results", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert "46 jobs" in proc.stdout and "refused" in proc.stdout
    # regtile takes a stride now; every ResNet-50 layer has too many output channels for its defaults (4 outputs
    # x all M in registers), and it says so by name
    assert "stride of regtile" not in proc.stdout
    assert proc.stdout.count("accumulators per thread") == 23
    sweep.write_text('name = "x"\nbackends = ["gpu"]\nsuite = "alexnet"\n[[variants]]\nname = "global"\n')
    bad = simflow("sweep", str(sweep), "--dry-run", "--results", str(tmp_path / "r"))
    assert bad.returncode == 1 and "suite.toml:3: unknown suite 'alexnet'" in bad.stderr


def test_regtile_stages_the_input_rows_a_strided_block_reads():
    """With stride S a regtile block stages (rows - 1) * S + K input rows of (outputs x threads - 1) * S + K
    inputs: AlexNet's 11x11/4 first layer at rows=8 needs 2 x 39 x 236 floats and 8 x 363 weights (85,248 bytes),
    past the 48 KB of static shared memory, where a stride-blind count (2 x 18 x 68 floats) would have let it
    through."""
    alexnet = Problem(B=2, C=3, M=96, H=227, W=227, K=11, pad=0, stride=4, name="alexnet-conv1")
    params = {"outputs": 4, "rows": 8, "channels": 8, "weights": "shared", "images": 1}
    with pytest.raises(LimitError, match="static shared memory per block: needs 85,248 bytes, the limit is 49,152"):
        render("regtile", alexnet, params)
    kernel = render("regtile", alexnet, {**params, "rows": 2})
    assert "IN_W = (BX * R - 1) * STRIDE + K" in kernel.source and "win[r * STRIDE + kx]" in kernel.source
    assert kernel.launches(2)[0].block == (14, 2, 1)  # 55 outputs a row, 4 a thread
