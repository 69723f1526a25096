"""Seeded inputs, the float64 reference convolution, and the elementwise correctness check.

Every output element is judged on its own: |y - ref| <= atol * S + rtol * |ref|, where S is the
sum of |x * w| over the element's terms. S is the scale of a dot product's rounding error (each
addition errs by at most one unit of the partial sum, each rounded input by one unit of its
product), so one tolerance per precision holds for a 9-term and a 6400-term convolution alike,
where a norm over the whole output lets a wrong row or a zeroed element hide among a million
right ones. A transform-domain variant (winograd, fft) rounds more than a direct sum and states its
own, wider bound (Variant.tolerance), measured like these. The output buffer is poisoned with NaN
before a run: unwritten elements show.

The full reference is vectorised numpy (one tensordot per filter tap); the GPU backend computes
the same reference and scale on the GPU in float64 and judges every element there too
(cuda_templates/check.cu.j2): its blocks' sums, counts and worst elements are added up by verdict()
here, as the host's chunks are. A sampled check, only when asked for, computes a seeded sample of elements
from their own input patches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .problems import Problem


@dataclass(frozen=True)
class Tolerance:
    atol: float  # times S, the sum of |x * w| over the element's terms
    rtol: float  # times |ref|

    def describe(self) -> str:
        return f"|y - ref| <= {self.atol:g} * sum|x*w| + {self.rtol:g} * |ref|"


# Per precision, from the unit roundoff u of what the kernels round to: float32 sums (u = 6e-8,
# random-walk error about u * S); TF32 and fp16 inputs (u = 4.9e-4 each, so up to about 1e-3 * S
# if every product erred the same way) and fp16 partial sums of up to 32 products. Measured on the
# H200 over every variant, parameter and test shape of tests/test_gpu.py (2026-11-22), the largest
# |y - ref| / S was: float32 2.3e-7 (global), tf32 3.0e-4 (wmma), float16 1.2e-3 (implicit_gemm
# fp16 on batch3x3, 9-term sums): each atol is 8-13x above that. bf16 inputs (u = 2^-8 = 3.9e-3; float sums,
# no bf16 partial sums): each product is off by at most 2u + u^2 = 7.8e-3 of |x * w|, so |y - ref| <= 7.8e-3 * S
# whatever the signs; atol 1e-2 is that bound with room for the float sums.
TOLERANCE = {
    "float32": Tolerance(atol=2e-6, rtol=1e-6),
    "tf32": Tolerance(atol=4e-3, rtol=1e-3),
    "float16": Tolerance(atol=1e-2, rtol=1e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=1e-3),
}
SAMPLE_SIZE = 4096
JUDGE_CHUNK = 1 << 24  # elements judged at once (bounds the host memory of a large output)


def make_inputs(problem: Problem, seed: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Input and weights uniform in [-1, 1): never zeros, so unwritten or misindexed outputs show. dtype
    "bfloat16": the same draws rounded to bf16, as their 16-bit patterns (numpy has no bf16; as_float32 reads
    them)."""
    rng = np.random.default_rng(seed)
    if isinstance(dtype, str) and dtype == "bfloat16":
        return (bf16_bits(_uniform(rng, problem.input_shape, np.float32)),
                bf16_bits(_uniform(rng, problem.weight_shape, np.float32)))
    return _uniform(rng, problem.input_shape, dtype), _uniform(rng, problem.weight_shape, dtype)


def host_dtype(io: str) -> np.dtype:
    """The numpy type that holds a tensor of `io` on the host: bfloat16 as its 16-bit patterns (uint16)."""
    return np.dtype(np.uint16) if io == "bfloat16" else np.dtype(io)


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 (to nearest, ties to even), as uint16 bit patterns."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def as_float32(values: np.ndarray, io: str) -> np.ndarray:
    """A tensor held as `io` on the host (host_dtype) as float32: bf16 patterns widened exactly."""
    if io == "bfloat16":
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def _uniform(rng, shape, dtype, chunk: int = 1 << 22) -> np.ndarray:
    """rng.uniform(-1, 1, shape).astype(dtype), drawn in chunks: the same values (the generator's stream is drawn
    in order), without the float64 copy of the whole array, and Ctrl-C or SIGTERM is heard between chunks."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    for start in range(0, flat.size, chunk):
        flat[start:start + chunk] = rng.uniform(-1.0, 1.0, size=min(chunk, flat.size - start))
    return out


REFERENCE_CHUNK = 1 << 22  # multiply-adds (and elements padded) of one block: a signal waits at most one block


def conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int, stride: int = 1) -> np.ndarray:
    """y[b,m,oy,ox] = sum_{c,ky,kx} x[b,c,oy*stride+ky-pad,ox*stride+kx-pad] * w[m,c,ky,kx], in float64."""
    w = np.asarray(w, dtype=np.float64)
    B, C, H, W = x.shape
    # x in float64 with its padding, written in blocks of rows too: one np.pad or astype of a large image is a
    # single call of seconds that a signal waits for (np.zeros only maps the pages)
    padded = np.zeros((B, C, H + 2 * pad, W + 2 * pad))
    rows = max(1, REFERENCE_CHUNK // max(1, B * C * W))
    for r0 in range(0, H, rows):
        padded[:, :, pad + r0:pad + min(H, r0 + rows), pad:pad + W] = x[:, :, r0:r0 + rows]
    x = padded
    Hp, Wp = x.shape[2:]
    M, _, K, _ = w.shape
    hout, wout = (Hp - K) // stride + 1, (Wp - K) // stride + 1
    y = np.zeros((B, M, hout, wout))
    # Output rows in blocks of about CHUNK products each, so that Ctrl-C or SIGTERM is heard between blocks.
    step = max(1, REFERENCE_CHUNK // max(1, B * M * C * wout))
    for r0 in range(0, hout, step):
        r1 = min(hout, r0 + step)
        for ky in range(K):
            for kx in range(K):
                window = x[:, :, stride * r0 + ky:stride * (r1 - 1) + ky + 1:stride,
                           kx:kx + stride * (wout - 1) + 1:stride]
                # contract C: (M, C) . (B, C, rows, Wout) -> (M, B, rows, Wout)
                y[:, :, r0:r1] += np.tensordot(w[:, :, ky, kx], window, axes=([1], [1])).transpose(1, 0, 2, 3)
    return y


def sample_reference(x: np.ndarray, w: np.ndarray, pad: int, index: tuple[np.ndarray, ...],
                     stride: int = 1) -> np.ndarray:
    """float64 reference of the output elements at index = (b, m, oy, ox) arrays."""
    b, m, oy, ox = index
    K = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    rows = stride * oy[:, None, None] + np.arange(K)[None, :, None]  # n, K, 1
    cols = stride * ox[:, None, None] + np.arange(K)[None, None, :]  # n, 1, K
    patches = xp[b[:, None, None, None], np.arange(x.shape[1])[None, :, None, None],
                 rows[:, None], cols[:, None]]  # n, C, K, K
    return np.einsum("nckl,nckl->n", patches.astype(np.float64), w[m].astype(np.float64))


# What a kernel writes: the convolution, or the convolution then ReLU then a 2x2 max-pool (stride 2;
# an odd last row or column is dropped).
OPS = ("conv", "conv_relu_pool")


def output_shape(problem: Problem, op: str = "conv") -> tuple[int, int, int, int]:
    b, m, h, w = problem.output_shape
    return (b, m, h // 2, w // 2) if op == "conv_relu_pool" else (b, m, h, w)


def relu_pool(y: np.ndarray) -> np.ndarray:
    """ReLU then 2x2 max-pool of conv outputs (B, M, H, W) -> (B, M, H//2, W//2)."""
    return np.maximum(pool_max(y), 0.0)


@dataclass(frozen=True)
class Check:
    """The verdict on one output, with the numbers behind it."""

    passed: bool
    method: str  # "full" or "sample"
    precision: str
    tolerance: Tolerance
    checked: int  # elements compared with the reference
    bad: int  # elements outside the tolerance, unwritten ones included
    unwritten: int  # elements still NaN (the poison) or not finite
    rel_error: float  # ||y - ref|| / ||ref|| over the finite elements
    max_abs_error: float
    max_rel_error: float  # max |y - ref| / |ref| over elements with ref != 0
    max_scaled_error: float  # max |y - ref| / S: what atol is compared with
    worst: tuple[int, ...] = ()  # index of the element furthest outside (or nearest to) its bound
    worst_got: float = float("nan")
    worst_ref: float = float("nan")
    worst_bound: float = float("nan")
    shape: tuple[int, ...] = field(default=(), repr=False)

    @property
    def reason(self) -> str:
        if self.passed:
            return ""
        where = f"({', '.join(map(str, self.worst))})" if self.worst else "?"
        what = (f"{self.bad} of {self.checked} output elements wrong ({self.method} check)"
                + (f", {self.unwritten} of them not written or not finite" if self.unwritten else ""))
        return (f"{what}; worst at (b, m, y, x) = {where}: got {self.worst_got:.7g}, expected {self.worst_ref:.7g}, "
                f"allowed {self.tolerance.describe()} = {self.worst_bound:.3g} ({self.precision}); "
                f"max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}")

    def record(self, result) -> None:
        """The check's figures as metrics of a run (RunResult), its method in the environment."""
        for name, value in (("rel_error", self.rel_error), ("max_abs_error", self.max_abs_error),
                            ("max_rel_error", self.max_rel_error), ("max_scaled_error", self.max_scaled_error),
                            ("bad_elements", self.bad),
                            ("checked_elements", self.checked)):
            result.add(name, value)
        result.environment["check"] = self.method


def _judge_chunk(got: np.ndarray, ref: np.ndarray, scale: np.ndarray, tol: Tolerance) -> dict:
    """Sums, counts and the worst element of one flat chunk."""
    got = got.astype(np.float64)
    finite = np.isfinite(got)
    err = np.abs(got - ref)
    bound = tol.atol * scale + tol.rtol * np.abs(ref)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(finite, err / np.where(bound > 0, bound, np.finfo(float).tiny), np.inf)
        rel = np.where(finite & (ref != 0), err / np.abs(ref), 0.0)
        scaled = np.where(finite & (scale > 0), err / scale, 0.0)
    worst = int(np.argmax(ratio)) if ratio.size else 0
    fin = np.where(finite, err, 0.0)
    return {"bad": int(np.count_nonzero(~(ratio <= 1.0))), "unwritten": int(np.count_nonzero(~finite)),
            "diff2": float(np.sum(fin ** 2)), "ref2": float(np.sum(np.where(finite, ref, 0.0) ** 2)),
            "max_abs": float(fin.max(initial=0.0)), "max_rel": float(rel.max(initial=0.0)),
            "max_scaled": float(scaled.max(initial=0.0)),
            "worst": worst, "worst_ratio": float(ratio[worst]) if ratio.size else 0.0,
            "worst_got": float(got[worst]) if got.size else float("nan"),
            "worst_ref": float(ref[worst]) if ref.size else float("nan"),
            "worst_bound": float(bound[worst]) if bound.size else float("nan")}


def judge_chunks(chunks, shape: tuple[int, ...], precision: str, method: str = "full", index=None,
                 tolerance: Tolerance | None = None) -> Check:
    """The elementwise verdict on an output given as consecutive flat chunks (got, ref, scale) in
    C order: got as the kernel wrote it, ref the float64 reference, scale its error scale S.
    `shape` is the output's; for a sampled check the chunks are the sample and `index` the
    (b, m, y, x) arrays of its positions. `tolerance` replaces the precision's (a transform's growth)."""
    tol = tolerance or TOLERANCE[precision]
    parts, start = [], 0
    for got, ref, scale in chunks:
        part = _judge_chunk(np.ravel(got), np.ravel(ref).astype(np.float64, copy=False),
                            np.ravel(scale).astype(np.float64, copy=False), tol)
        part["worst"] += start
        start += np.size(got)
        parts.append(part)
    return verdict(parts, start, shape, precision, method, index, tol)


def verdict(parts: list[dict], checked: int, shape: tuple[int, ...], precision: str, method: str = "full",
            index=None, tolerance: Tolerance | None = None) -> Check:
    """The Check of `checked` elements judged in parts (each _judge_chunk's sums, counts and worst
    element, its index into the whole): the GPU's blocks or the host's chunks."""
    tol = tolerance or TOLERANCE[precision]
    parts = [p for p in parts if p["worst"] >= 0] or [_judge_chunk(np.empty(0), np.empty(0), np.empty(0), tol)]
    worst = max(parts, key=lambda p: (p["worst_ratio"], -p["worst"]))  # the first of a tie, as argmax
    bad = sum(p["bad"] for p in parts)
    ref2 = sum(p["ref2"] for p in parts)
    diff2 = sum(p["diff2"] for p in parts)
    if checked == 0:
        position: tuple[int, ...] = ()
    elif index is None:
        position = tuple(int(i) for i in np.unravel_index(worst["worst"], shape))
    else:
        position = tuple(int(np.ravel(i)[worst["worst"]]) for i in index)
    return Check(passed=bad == 0, method=method, precision=precision, tolerance=tol, checked=checked, bad=bad,
                 unwritten=sum(p["unwritten"] for p in parts),
                 rel_error=float(np.sqrt(diff2 / ref2)) if ref2 > 0 else float(np.sqrt(diff2)),
                 max_abs_error=max(p["max_abs"] for p in parts), max_rel_error=max(p["max_rel"] for p in parts),
                 max_scaled_error=max(p["max_scaled"] for p in parts), worst=position,
                 worst_got=worst["worst_got"], worst_ref=worst["worst_ref"], worst_bound=worst["worst_bound"],
                 shape=tuple(shape))


def judge(got, ref, scale, precision: str, method: str = "full", index=None,
          tolerance: Tolerance | None = None) -> Check:
    """judge_chunks over whole arrays (of the output's shape, or 1-D samples at `index`)."""
    got = np.asarray(got)
    flat = [np.ravel(a) for a in (got, ref, scale)]
    chunks = ((f[0][i:i + JUDGE_CHUNK], f[1][i:i + JUDGE_CHUNK], f[2][i:i + JUDGE_CHUNK])
              for f in [flat] for i in range(0, flat[0].size, JUDGE_CHUNK))
    return judge_chunks(chunks, got.shape, precision, method, index, tolerance)


def reference_and_scale(problem: Problem, x: np.ndarray, w: np.ndarray, op: str = "conv"):
    """The float64 reference output and its error scale S (sum of |x*w| per element), for `op`."""
    ref = conv2d_reference(x, w, problem.pad, problem.stride)
    scale = conv2d_reference(np.abs(x), np.abs(w), problem.pad, problem.stride)
    if op == "conv_relu_pool":  # max and ReLU err by at most the largest error of the four
        ref, scale = relu_pool(ref), pool_max(scale)
    return ref, scale


def pool_max(a: np.ndarray) -> np.ndarray:
    """2x2 max-pool without ReLU (the error scale of a pooled output)."""
    b, m, h, w = a.shape
    hp, wp = h // 2, w // 2
    return a[:, :, :2 * hp, :2 * wp].reshape(b, m, hp, 2, wp, 2).max(axis=(3, 5))


def check_output(problem: Problem, x: np.ndarray, w: np.ndarray, y: np.ndarray, precision: str,
                 seed: int = 0, method: str = "full", op: str = "conv", tolerance: Tolerance | None = None) -> Check:
    """Judge a kernel's output element by element against the float64 reference: every element
    ('full', the default at every size), or a seeded sample of SAMPLE_SIZE when asked ('sample')."""
    y = np.asarray(y)
    if method == "full":
        ref, scale = reference_and_scale(problem, x, w, op)
        return judge(y, ref, scale, precision, "full", tolerance=tolerance)
    if method != "sample":
        raise ValueError(f"unknown check method {method!r}")
    rng = np.random.default_rng(seed + 1)
    flat = rng.choice(y.size, size=min(SAMPLE_SIZE, y.size), replace=False)
    index = np.unravel_index(flat, y.shape)
    ax, aw = np.abs(x), np.abs(w)
    if op == "conv_relu_pool":  # each pooled output: the max of its 4 conv outputs, then ReLU
        b, m, py, px = index
        quads = [(b, m, 2 * py + dy, 2 * px + dx) for dy in (0, 1) for dx in (0, 1)]
        ref = np.maximum(np.max([sample_reference(x, w, problem.pad, q, problem.stride) for q in quads], axis=0),
                         0.0)
        scale = np.max([sample_reference(ax, aw, problem.pad, q, problem.stride) for q in quads], axis=0)
    else:
        ref = sample_reference(x, w, problem.pad, index, problem.stride)
        scale = sample_reference(ax, aw, problem.pad, index, problem.stride)
    return judge(y[index], ref, scale, precision, "sample", index=index, tolerance=tolerance)
