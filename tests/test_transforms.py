"""Transform-domain variants (winograd, fft): the algebra and tiling they render, checked on the CPU in
exact or float64 arithmetic, and what they refuse. On a GPU and in the simulator they are checked like
every variant (test_gpu, test_gpgpusim_backend)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from simflow.errors import LimitError
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.reference import TOLERANCE, conv2d_reference, make_inputs
from simflow.kernels.transforms import FftVariant, WinogradVariant, winograd_matrices
from simflow.kernels.variants import render


def _matmul(a, b):
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def _transpose(a):
    return [list(row) for row in zip(*a, strict=True)]


@pytest.mark.parametrize("m,taps", [(2, 3), (4, 3), (2, 5), (4, 5)])
def test_winograd_transforms_compute_the_correlation_exactly(m, taps):
    """A^T [(G g G^T) . (B^T d B)] A equals the r x r correlation of d with g, in exact fractions."""
    mats = winograd_matrices(m, taps)
    bt, g_mat, at = mats["BT"], mats["G"], mats["AT"]
    alpha = m + taps - 1
    rng = np.random.default_rng(m)
    for _ in range(5):
        d = [[Fraction(int(v)) for v in row] for row in rng.integers(-9, 10, size=(alpha, alpha))]
        g = [[Fraction(int(v)) for v in row] for row in rng.integers(-9, 10, size=(taps, taps))]
        u = _matmul(_matmul(g_mat, g), _transpose(g_mat))
        v = _matmul(_matmul(bt, d), _transpose(bt))
        y = _matmul(_matmul(at, [[u[i][j] * v[i][j] for j in range(alpha)] for i in range(alpha)]), _transpose(at))
        direct = [[sum(d[r + ky][s + kx] * g[ky][kx] for ky in range(taps) for kx in range(taps)) for s in range(m)]
                  for r in range(m)]
        assert y == direct


def test_cook_toom_gives_lavins_f4_matrices_and_refuses_more_points_than_it_has():
    mats = winograd_matrices(4, 3)
    assert mats["BT"][0] == [4, 0, -5, 0, 1, 0] and mats["BT"][5] == [0, 4, 0, -5, 0, 1]
    assert mats["G"][3] == [Fraction(1, 24), Fraction(1, 12), Fraction(1, 6)] and mats["AT"][3] == [0, 1, -1, 8, -8, 1]
    with pytest.raises(ValueError, match="needs 8 finite points"):
        winograd_matrices(4, 6)


def test_winograd_takes_5x5_filters():
    problem = Problem(B=2, C=8, M=16, H=12, W=12, K=5, pad=2)
    f2, f4 = render("winograd", problem), render("winograd", problem, {"m": 4})
    assert "F(2x2,5x5)" in f2.source and "100 multiplications become 36" in f2.source
    assert "F(4x4,5x5)" in f4.source and "400 multiplications become 64" in f4.source
    assert f2.launches(2)[2].grid[2] == 36 and f2.workspace(2)["u"] == 36 * 16 * 8
    assert f4.launches(2)[2].grid[2] == 64 and f4.workspace(2)["v"] == 64 * 8 * 20  # 2 x 3 x 3 tiles, rows of 20
    f4_3x3 = render("winograd", Problem(B=2, C=8, M=16, H=12, W=12, K=3, pad=1), {"m": 4})
    assert f2.check_tolerance.atol == f4_3x3.check_tolerance.atol == f4.check_tolerance.atol  # measured: alike
    with pytest.raises(LimitError, match=r"filter size K of winograd .* 3 or 5"):
        render("winograd", Problem(B=2, C=8, M=16, H=12, W=12, K=7, pad=3))


def test_winograd_renders_its_matrices_and_launches():
    problem = Problem(B=2, C=8, M=16, H=10, W=11, K=3, pad=1)
    f2, f4 = render("winograd", problem), render("winograd", problem, {"m": 4})
    assert f2.kernel_names == [f"conv2d_winograd_{k}" for k in ("filter", "input", "gemm", "output")]
    assert "F(2x2,3x3)" in f2.source and "F(4x4,3x3)" in f4.source
    assert "-(1.0f / 6) * g[0][0]" in f4.source and "1.0f / 6" not in f2.source  # 1/6 only where F(4x4) needs it
    gemm = f4.launches(2)[2]
    assert gemm.grid[2] == 36 and gemm.args == ("v", "u", "mt", "batch")  # one GEMM per transform point
    assert gemm.dynamic_smem == 4 * 3 * 8 * (128 + 128)  # three stages of a k step of 8 (the defaults)
    tiles = 2 * math.ceil(10 / 4) * math.ceil(11 / 4)  # 18 GEMM columns: rows of 20, 16-byte aligned
    assert f4.workspace(2) == {"u": 36 * 16 * 8, "v": 36 * 8 * 20, "mt": 36 * 16 * 20}
    assert tiles == 18 and f4.workspace(4)["v"] == 36 * 8 * 36  # 36 columns: no padding
    odd = render("winograd", Problem(B=2, C=8, M=5, H=10, W=11, K=3, pad=1))  # 5 output channels: U's rows of 8
    assert odd.workspace(2)["u"] == 16 * 8 * 8 and "constexpr int MP = 8;" in odd.source
    # the check's bound widens with the transforms' size, and says so
    assert TOLERANCE["float32"].atol < f2.check_tolerance.atol < f4.check_tolerance.atol
    assert render("winograd", problem, {"precision": "fp16"}).precision == "float16"


@pytest.mark.parametrize("shape,match", [
    ("2,3,4,12,12,7,3", "filter size K of winograd .* needs 7, the limit is 3 or 5; use fft for other large"),
    ("2,3,4,12,12,3,1,2", "stride of winograd .* needs 2, the limit is 1"),
])
def test_winograd_refuses_what_it_cannot_do_by_name(shape, match):
    with pytest.raises(LimitError, match=match):
        render("winograd", get_problem(None, shape=shape))


def _overlap_add(x: np.ndarray, w: np.ndarray, problem: Problem, n: int) -> np.ndarray:
    """The fft variant's scheme in numpy (float64): the same blocks, placement, half spectrum kept and
    completed by symmetry (irfft2), products summed over channels, and overlap-add."""
    g = FftVariant.geometry(problem, {"tile": n})
    k, block = problem.K, g["block"]
    assert block == n - k + 1
    xp = np.pad(x, ((0, 0), (0, 0), (problem.pad,) * 2, (problem.pad,) * 2))
    wf = np.conj(np.fft.rfft2(w, s=(n, n)))  # [m][c][u][v], v <= n/2
    b, _, hp, wp = xp.shape
    acc = np.zeros((b, problem.M, g["tiles_y"] * block + n, g["tiles_x"] * block + n))
    for ty in range(g["tiles_y"]):
        for tx in range(g["tiles_x"]):
            buf = np.zeros((b, problem.C, n, n))
            part = xp[:, :, ty * block:(ty + 1) * block, tx * block:(tx + 1) * block]
            buf[:, :, k - 1:k - 1 + part.shape[2], k - 1:k - 1 + part.shape[3]] = part
            y = np.einsum("mcuv,bcuv->bmuv", wf, np.fft.rfft2(buf))
            acc[:, :, ty * block:ty * block + n, tx * block:tx * block + n] += np.fft.irfft2(y, s=(n, n))
    # buffer row j of block ty holds output ty*L + j - (K-1)
    return acc[:, :, k - 1:k - 1 + problem.Hout, k - 1:k - 1 + problem.Wout]


@pytest.mark.parametrize("shape,n", [("2,3,4,23,19,5,2", 16), ("1,2,3,40,40,7,0", 16), ("1,1,2,86,86,7,0", 32),
                                     ("1,2,2,20,20,15,3", 16), ("1,1,1,70,70,31,0", 64), ("1,3,2,9,9,1,0", 16)])
def test_fft_overlap_add_tiling_reproduces_the_convolution(shape, n):
    problem = get_problem(None, shape=shape)
    x, w = make_inputs(problem, 3)
    got = _overlap_add(x.astype(np.float64), w.astype(np.float64), problem, n)
    ref = conv2d_reference(x, w, problem.pad)
    assert got.shape == ref.shape and np.allclose(got, ref, atol=1e-9, rtol=1e-9)


def test_fft_renders_five_launches_with_its_twiddles():
    problem = Problem(B=2, C=3, M=20, H=30, W=30, K=5, pad=2)
    kernel = render("fft", problem, {"tile": 16})
    names = [f"conv2d_fft_{k}" for k in ("wfft", "xfft", "cgemm", "ifft", "overlap")]
    assert kernel.kernel_names == names
    assert "{ 1.0f, -0.0f }" in kernel.source and "0.9238795325112867f, -0.3826834323650898f" in kernel.source
    g = FftVariant.geometry(problem, {"tile": 16})
    assert (g["block"], g["tiles_y"], g["per_block"]) == (12, 3, 16)  # (30 + 4) padded rows in blocks of 12
    launches = kernel.launches(2)
    assert launches[2].grid == (math.ceil(2 * 9 / 64), 1, 16 * 9)  # a complex GEMM per kept frequency, M <= 32
    assert kernel.workspace(2)["xf"] == 2 * 16 * 9 * 3 * 18 and render(
        "fft", problem, {"tile": 16, "precision": "fp16"}).workspace(2)["xf"] == 16 * 9 * 3 * 18  # half2
    assert TOLERANCE["float32"].atol < kernel.check_tolerance.atol < render("fft", problem).check_tolerance.atol


def test_fft_refuses_a_stride_and_a_tile_smaller_than_the_filter():
    with pytest.raises(LimitError, match="stride of fft"):
        render("fft", get_problem(None, shape="2,3,4,12,12,3,1,2"))
    with pytest.raises(LimitError, match="filter size K of fft tile=16 .* needs 31, the limit is 16; use tile=32"):
        render("fft", get_problem(None, shape="1,1,1,40,40,31,0"), {"tile": 16})
    assert WinogradVariant.tiles(get_problem("batch3x3"), {"m": 4}) == (4, 4)
