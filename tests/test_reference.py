import numpy as np
import pytest

from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.reference import check_output, conv2d_reference, make_inputs, sample_reference


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
    ok = check_output(p, x, w, y, "float32", method=method)
    assert ok.passed and ok.rel_error < 1e-6 and ok.method == method and ok.bad == 0
    bad = y.copy()
    bad[1, 2] *= 1.01  # one map off by 1%: over the float32 tolerance
    wrong = check_output(p, x, w, bad, "float32")
    assert not wrong.passed and wrong.bad > 0 and wrong.worst[:2] == (1, 2)
    assert "output elements wrong (full check); worst at (b, m, y, x) = (1, 2, " in wrong.reason
    poisoned = y.copy()
    poisoned[0, 0, 0, 0] = np.nan  # one element left unwritten
    missing = check_output(p, x, w, poisoned, "float32", method=method)
    if method == "full" or missing.checked == y.size:
        assert not missing.passed and missing.unwritten == 1 and "not written or not finite" in missing.reason


def test_a_sampled_check_only_when_asked():
    p = Problem(B=1, C=256, M=256, H=228, W=228, K=5)
    y = np.zeros(p.output_shape, dtype=np.float32)
    sampled = check_output(p, *make_inputs(p, 0), y, "float32", method="sample")
    assert sampled.method == "sample" and sampled.checked == 4096 and not sampled.passed
    small = Problem(B=1, C=2, M=2, H=9, W=9, K=3)
    x, w = make_inputs(small, 0)
    assert check_output(small, x, w, conv2d_reference(x, w, 0), "float32").checked == 2 * 7 * 7  # default: all


def test_relu_pool_reference_and_check():
    from simflow.kernels.reference import output_shape, relu_pool

    y = np.array([[[[1.0, -2.0, 3.0], [4.0, -5.0, 6.0], [7.0, 8.0, 9.0]]]])
    assert relu_pool(y).tolist() == [[[[4.0]]]]  # odd last row and column dropped
    assert relu_pool(-np.abs(y)).tolist() == [[[[0.0]]]]  # ReLU after the max
    problem = Problem(B=2, C=3, M=4, H=13, W=11, K=3, pad=1, name="p")
    assert output_shape(problem, "conv_relu_pool") == (2, 4, 6, 5)
    x, w = make_inputs(problem, 3)
    good = relu_pool(conv2d_reference(x, w, problem.pad)).astype(np.float32)
    for method in ("full", "sample"):
        assert check_output(problem, x, w, good, "float32", method=method, op="conv_relu_pool").passed
        bad = good.copy()
        bad[1, 2, 3, 4] += 0.5
        assert not check_output(problem, x, w, bad, "float32", method=method, op="conv_relu_pool").passed
    unpooled = conv2d_reference(x, w, problem.pad)[:, :, :12:2, :10:2].astype(np.float32)  # no max, no ReLU
    assert not check_output(problem, x, w, unpooled, "float32", method="sample", op="conv_relu_pool").passed


# ---- injected faults: each must be caught at every size and precision ------------------------------

FAULT_SHAPES = {
    "tiny": Problem(B=1, C=1, M=2, H=6, W=6, K=3, pad=1, name="tiny"),  # 9 terms per output
    "fmnist-like": Problem(B=2, C=4, M=16, H=40, W=40, K=7, name="fmnist-like"),  # 196 terms
    "1M-outputs": Problem(B=4, C=64, M=16, H=128, W=128, K=3, pad=1, name="1M-outputs"),  # 1,048,576 outputs
}


def _round_inputs(a: np.ndarray, precision: str) -> np.ndarray:
    """What a kernel of this precision multiplies: float16 or TF32 (10-bit mantissa) inputs."""
    if precision == "float16":
        return a.astype(np.float16).astype(np.float64)
    if precision == "tf32":
        bits = a.astype(np.float32).view(np.uint32)
        return ((bits + 0x1000) & 0xFFFFE000).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


@pytest.fixture(scope="module", params=list(FAULT_SHAPES))
def case(request):
    """A problem, its inputs, its float64 reference and scale, and per precision a right output as a
    kernel of that precision would write it (inputs rounded, then float32)."""
    from simflow.kernels.reference import reference_and_scale

    p = FAULT_SHAPES[request.param]
    x, w = make_inputs(p, seed=11)
    ref, scale = reference_and_scale(p, x, w)
    right = {prec: conv2d_reference(_round_inputs(x, prec), _round_inputs(w, prec), p.pad).astype(np.float32)
             for prec in ("float32", "tf32", "float16")}
    return p, x, w, ref, scale, right


def _fault(kind: str, y: np.ndarray, ref: np.ndarray, scale: np.ndarray, precision: str) -> np.ndarray:
    from simflow.kernels.reference import TOLERANCE

    y = y.copy()
    tol = TOLERANCE[precision]
    rng = np.random.default_rng(5)
    if kind == "zeroed element":
        # a seeded random element among those a zero would move by more than the tolerance (zeroing an
        # element whose right value is within tolerance of 0 is no fault any check could see)
        visible = np.flatnonzero(np.abs(ref) > 2 * (tol.atol * scale + tol.rtol * np.abs(ref)))
        y.flat[rng.choice(visible)] = 0.0
    elif kind == "zeroed row":
        b, m, oy = (int(rng.integers(n)) for n in y.shape[:3])
        y[b, m, oy, :] = 0.0
    elif kind == "NaN":
        y.flat[int(rng.integers(y.size))] = np.nan
    elif kind == "off-by-one shift":
        y[..., 1:] = y[..., :-1].copy()
    return y


@pytest.mark.parametrize("precision", ["float32", "tf32", "float16"])
@pytest.mark.parametrize("kind", ["zeroed element", "zeroed row", "NaN", "off-by-one shift"])
def test_injected_faults_are_caught(case, precision, kind):
    from simflow.kernels.reference import judge

    p, _x, _w, ref, scale, right = case
    ok = judge(right[precision], ref, scale, precision)
    assert ok.passed, ok.reason  # a right output of this precision passes
    bad = judge(_fault(kind, right[precision], ref, scale, precision), ref, scale, precision)
    assert not bad.passed and bad.bad >= 1 and bad.checked == ref.size
    assert "worst at (b, m, y, x)" in bad.reason
    if kind == "NaN":
        assert bad.unwritten == 1


def test_a_norm_would_have_missed_what_the_elementwise_check_catches(case):
    """The old criterion, one relative-error norm (fp16: <= 1e-2), passes a zeroed element of a large output."""
    from simflow.kernels.reference import judge

    p, _x, _w, ref, scale, right = case
    y = _fault("zeroed element", right["float16"], ref, scale, "float16")
    verdict = judge(y, ref, scale, "float16")
    assert not verdict.passed and verdict.bad == 1
    if p.name == "1M-outputs":
        assert verdict.rel_error < 1e-2  # the old fp16 tolerance: it would have passed


def test_bf16_patterns_round_to_nearest_even_and_widen_exactly():
    from simflow.kernels.reference import as_float32, bf16_bits, host_dtype

    one = np.float32(1.0)
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, -2.5, 1 + 2**-7 + 2**-8, 0.1], dtype=np.float32)
    bits = bf16_bits(values)
    assert bits.dtype == np.uint16 and host_dtype("bfloat16") == np.uint16 and host_dtype("float16") == np.float16
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one (1); 1 + 3 * 2^-8 up to 1 + 2^-6
    assert list(bits[:5]) == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x3F82]
    assert as_float32(bits, "bfloat16")[0] == one and as_float32(bits, "bfloat16")[5] == np.float32(0.10009765625)
    drawn = np.random.default_rng(3).uniform(-1, 1, 100_000).astype(np.float32)
    back = as_float32(bf16_bits(drawn), "bfloat16")
    assert np.all(np.abs(back - drawn) <= np.abs(drawn) * 2.0**-8)  # within half a bf16 unit (u = 2^-8)
    assert np.array_equal(as_float32(bf16_bits(back), "bfloat16"), back)  # bf16 values stay as they are


def test_bf16_inputs_are_the_float32_draws_rounded():
    from simflow.kernels.reference import as_float32, bf16_bits

    problem = get_problem("batch3x3")
    x32, w32 = make_inputs(problem, 5)
    xb, wb = make_inputs(problem, 5, "bfloat16")
    assert np.array_equal(xb, bf16_bits(x32)) and np.array_equal(wb, bf16_bits(w32))
    assert np.abs(as_float32(xb, "bfloat16") - x32).max() <= 2.0**-9
