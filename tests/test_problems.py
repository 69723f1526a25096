import pytest

from simflow.errors import UserError
from simflow.kernels.problems import PRESETS, Problem, get_problem, parse_shape


def test_presets_from_the_notes():
    assert PRESETS["fmnist-conv1"].output_shape == (100, 4, 80, 80)
    assert PRESETS["fmnist-conv2"].output_shape == (100, 16, 34, 34)
    b3 = PRESETS["batch3x3"]
    assert (b3.B * b3.M, b3.Hout, b3.Wout) == (16, 16, 16)  # 16 maps of 16x16
    assert PRESETS["toycnn"].output_shape == (1, 256, 224, 224)
    assert PRESETS["k7net-conv2"].C == PRESETS["k7net-conv1"].M
    assert PRESETS["k7net-conv2"].H == PRESETS["k7net-conv1"].Hout
    k7 = PRESETS["k7net-conv2"]
    assert k7.M * k7.C * k7.K * k7.K * 4 <= 64 * 1024  # both layers' weights fit __constant__


def test_flops_and_bytes():
    p = Problem(B=2, C=3, M=4, H=10, W=12, K=3, pad=1)
    assert (p.Hout, p.Wout) == (10, 12)
    assert p.flops == 2 * 2 * 4 * 3 * 3 * 3 * 10 * 12
    assert p.min_bytes() == 4 * (2 * 3 * 10 * 12 + 4 * 3 * 3 * 3 + 2 * 4 * 10 * 12)
    assert p.min_bytes("float16") == p.min_bytes() // 2
    # the toy layer's figure from the users' report: 0.097 s = 1693 GFLOP/s
    assert PRESETS["toycnn"].flops / 0.097 / 1e9 == pytest.approx(1695, rel=0.01)


def test_overrides():
    assert get_problem("fmnist-conv1", batch=10000).B == 10000
    p = get_problem(shape="8,3,16,32,32,5,2")
    assert (p.B, p.C, p.M, p.H, p.W, p.K, p.pad) == (8, 3, 16, 32, 32, 5, 2)
    assert parse_shape("1,1,1,5,5,3").pad == 0
    assert get_problem(shape="8,3,16,32,32,5", batch=2).B == 2


@pytest.mark.parametrize("shape,words", [
    ("1,1,1,4,4,7", "filter K=7 is larger than the padded input 4 x 4"),
    ("0,1,1,8,8,3", "B must be a positive integer"),
    ("1,-2,1,8,8,3", "C must be a positive integer"),
    ("1,1,1,8,8,3,-1", "pad must be 0 or more"),
    ("1,1,1,8,8", "B,C,M,H,W,K[,pad[,stride]]"),
    ("1,1,x,8,8,3", "integers"),
])
def test_impossible_shapes_say_why(shape, words):
    with pytest.raises(UserError, match=words.replace("[", r"\[").replace("]", r"\]")):
        get_problem(shape=shape)


def test_unknown_preset_lists_the_valid_ones():
    with pytest.raises(UserError) as err:
        get_problem("mnist")
    assert all(name in str(err.value) for name in PRESETS)


def test_padding_makes_a_small_input_possible():
    assert Problem(B=1, C=1, M=1, H=2, W=2, K=5, pad=2).output_shape == (1, 1, 2, 2)
