import numpy as np
import pytest

from simflow.problems import Problem
from simflow.reference import check_output, conv2d_reference, make_inputs, sample_reference


def naive(x, w, pad):
    """Independent loop implementation with explicit bounds checks instead of padding."""
    B, C, H, W = x.shape
    M, _, K, _ = w.shape
    hout, wout = H + 2 * pad - K + 1, W + 2 * pad - K + 1
    y = np.zeros((B, M, hout, wout))
    for b in range(B):
        for m in range(M):
            for oy in range(hout):
                for ox in range(wout):
                    s = 0.0
                    for c in range(C):
                        for ky in range(K):
                            for kx in range(K):
                                iy, ix = oy + ky - pad, ox + kx - pad
                                if 0 <= iy < H and 0 <= ix < W:
                                    s += float(x[b, c, iy, ix]) * float(w[m, c, ky, kx])
                    y[b, m, oy, ox] = s
    return y


@pytest.mark.parametrize("shape", [(2, 3, 4, 9, 7, 3, 0), (1, 2, 3, 6, 8, 5, 2), (3, 1, 2, 5, 5, 1, 0)])
def test_reference_matches_naive_loops(shape):
    B, C, M, H, W, K, pad = shape
    p = Problem(B=B, C=C, M=M, H=H, W=W, K=K, pad=pad)
    x, w = make_inputs(p, seed=3)
    ref = conv2d_reference(x, w, pad)
    assert ref.shape == p.output_shape
    np.testing.assert_allclose(ref, naive(x, w, pad), rtol=1e-12, atol=1e-12)


def test_sample_equals_full_at_the_same_places():
    p = Problem(B=2, C=3, M=4, H=11, W=9, K=3, pad=1)
    x, w = make_inputs(p, seed=5)
    full = conv2d_reference(x, w, p.pad)
    rng = np.random.default_rng(0)
    idx = np.unravel_index(rng.choice(full.size, 50, replace=False), full.shape)
    np.testing.assert_allclose(sample_reference(x, w, p.pad, idx), full[idx], rtol=1e-12)


def test_inputs_are_seeded_and_never_zero():
    p = Problem(B=2, C=2, M=2, H=8, W=8, K=3)
    a, b = make_inputs(p, 1), make_inputs(p, 1)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(make_inputs(p, 2)[0], a[0])
    assert np.count_nonzero(a[0]) == a[0].size and a[0].dtype == np.float32


@pytest.mark.parametrize("method", ["full", "sample"])
def test_check_passes_float32_and_catches_errors(method):
    p = Problem(B=2, C=3, M=4, H=12, W=10, K=3, pad=1)
    x, w = make_inputs(p, seed=0)
    y = conv2d_reference(x, w, p.pad).astype(np.float32)
    ok = check_output(p, x, w, y, "float32", force=method)
    assert ok.passed and ok.rel_error < 1e-6 and ok.method == method
    bad = y.copy()
    bad[1, 2] *= 1.01  # one map off by 1%: over the float32 tolerance
    wrong = check_output(p, x, w, bad, "float32", force="full")
    assert not wrong.passed and "relative error" in wrong.reason
    poisoned = y.copy()
    poisoned[0, 0, 0, 0] = np.nan  # one element left unwritten
    missing = check_output(p, x, w, poisoned, "float32", force=method)
    assert not missing.passed and missing.unwritten == 1 and "not written" in missing.reason


def test_large_problems_are_sampled():
    p = Problem(B=1, C=256, M=256, H=228, W=228, K=5)
    x, w = make_inputs(p, seed=0)
    y = np.zeros(p.output_shape, dtype=np.float32)
    result = check_output(p, x, w, y, "float32")
    assert result.method == "sample" and result.checked == 4096 and not result.passed


def test_relu_pool_reference_and_sampled_check():
    from simflow.reference import output_shape, relu_pool

    y = np.array([[[[1.0, -2.0, 3.0], [4.0, -5.0, 6.0], [7.0, 8.0, 9.0]]]])
    assert relu_pool(y).tolist() == [[[[4.0]]]]  # odd last row and column dropped
    assert relu_pool(-np.abs(y)).tolist() == [[[[0.0]]]]  # ReLU after the max
    problem = Problem(B=2, C=3, M=4, H=13, W=11, K=3, pad=1, name="p")
    assert output_shape(problem, "conv_relu_pool") == (2, 4, 6, 5)
    x, w = make_inputs(problem, 3)
    good = relu_pool(conv2d_reference(x, w, problem.pad)).astype(np.float32)
    for method in ("full", "sample"):
        assert check_output(problem, x, w, good, "float32", force=method, op="conv_relu_pool").passed
        bad = good.copy()
        bad[1, 2, 3, 4] += 0.5
        assert not check_output(problem, x, w, bad, "float32", force=method, op="conv_relu_pool").passed or \
            method == "sample"  # a sample may miss one element; the full check may not
    unpooled = conv2d_reference(x, w, problem.pad)[:, :, :12:2, :10:2].astype(np.float32)  # no max, no ReLU
    assert not check_output(problem, x, w, unpooled, "float32", force="sample", op="conv_relu_pool").passed
