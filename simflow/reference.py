"""Seeded inputs, the float64 reference convolution, and the correctness check.

The full reference is vectorised numpy (one tensordot per filter tap). Problems past
`FULL_REFERENCE_FLOPS` are checked on a seeded random sample of output elements, each
computed in float64 from its own input patch; every output element is still checked
for having been written (the output buffer is poisoned with NaN before the run).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .problems import Problem

# Relative error ||out - ref|| / ||ref|| each precision must stay under.
TOLERANCE = {"float32": 1e-4, "tf32": 3e-3, "float16": 1e-2}
FULL_REFERENCE_FLOPS = 4e9
SAMPLE_SIZE = 4096


def make_inputs(problem: Problem, seed: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """Input and weights uniform in [-1, 1): never zeros, so unwritten or misindexed outputs show."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=problem.input_shape).astype(dtype)
    w = rng.uniform(-1.0, 1.0, size=problem.weight_shape).astype(dtype)
    return x, w


def conv2d_reference(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """y[b,m,oy,ox] = sum_{c,ky,kx} x[b,c,oy+ky-pad,ox+kx-pad] * w[m,c,ky,kx], in float64."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    B, C, Hp, Wp = x.shape
    M, _, K, _ = w.shape
    hout, wout = Hp - K + 1, Wp - K + 1
    y = np.zeros((B, M, hout, wout))
    for ky in range(K):
        for kx in range(K):
            window = x[:, :, ky:ky + hout, kx:kx + wout]  # B, C, Hout, Wout
            # contract C: (M, C) . (B, C, Hout, Wout) -> (M, B, Hout, Wout)
            y += np.tensordot(w[:, :, ky, kx], window, axes=([1], [1])).transpose(1, 0, 2, 3)
    return y


def sample_reference(x: np.ndarray, w: np.ndarray, pad: int, index: tuple[np.ndarray, ...]) -> np.ndarray:
    """float64 reference of the output elements at index = (b, m, oy, ox) arrays."""
    b, m, oy, ox = index
    K = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    rows = oy[:, None, None] + np.arange(K)[None, :, None]  # n, K, 1
    cols = ox[:, None, None] + np.arange(K)[None, None, :]  # n, 1, K
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
    b, m, h, w = y.shape
    hp, wp = h // 2, w // 2
    pooled = y[:, :, :2 * hp, :2 * wp].reshape(b, m, hp, 2, wp, 2).max(axis=(3, 5))
    return np.maximum(pooled, 0.0)


@dataclass(frozen=True)
class Check:
    passed: bool
    rel_error: float
    unwritten: int  # elements still NaN (the poison) or not finite
    checked: int  # elements compared with the reference
    method: str  # "full" or "sample"
    tolerance: float

    @property
    def reason(self) -> str:
        if self.passed:
            return ""
        if self.unwritten:
            return f"{self.unwritten} output elements not written or not finite"
        return f"relative error {self.rel_error:.3g} over tolerance {self.tolerance:g} ({self.method} check)"


def check_output(problem: Problem, x: np.ndarray, w: np.ndarray, y: np.ndarray, precision: str,
                 seed: int = 0, force: str | None = None, op: str = "conv") -> Check:
    """Compare a kernel's output with the float64 reference (full, or sampled for large problems)."""
    tolerance = TOLERANCE[precision]
    y = np.asarray(y)
    unwritten = int(y.size - np.count_nonzero(np.isfinite(y)))
    method = force or ("full" if problem.flops <= FULL_REFERENCE_FLOPS else "sample")
    if method == "full":
        ref = conv2d_reference(x, w, problem.pad)
        if op == "conv_relu_pool":
            ref = relu_pool(ref)
        got = y.astype(np.float64)
    else:
        rng = np.random.default_rng(seed + 1)
        n = min(SAMPLE_SIZE, y.size)
        flat = rng.choice(y.size, size=n, replace=False)
        index = np.unravel_index(flat, y.shape)
        if op == "conv_relu_pool":  # each pooled output: the max of its 4 conv outputs, then ReLU
            b, m, py, px = index
            quads = [sample_reference(x, w, problem.pad, (b, m, 2 * py + dy, 2 * px + dx))
                     for dy in (0, 1) for dx in (0, 1)]
            ref = np.maximum(np.max(quads, axis=0), 0.0)
        else:
            ref = sample_reference(x, w, problem.pad, index)
        got = y[index].astype(np.float64)
    if unwritten:
        return Check(False, float("nan"), unwritten, ref.size, method, tolerance)
    diff = got - ref
    norm = float(np.linalg.norm(ref))
    rel = float(np.linalg.norm(diff) / norm) if norm > 0 else float(np.linalg.norm(diff))
    return Check(rel <= tolerance, rel, 0, ref.size, method, tolerance)
