"""The transform-domain families: Winograd F(m, r) as a GEMM over transformed tiles, and FFT convolution
(forward transforms, a complex GEMM, the inverse with overlap-add). Each rounds more than a direct sum and
states its own tolerance."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..errors import LimitError
from .families import ImplicitGemmVariant, _round_up
from .problems import Problem
from .reference import TOLERANCE, Tolerance
from .variant_types import Kernel, Launch, Variant

# Winograd F(m, r) transforms (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), for
# correlation as convolution layers compute it: y = A^T [(G g G^T) . (B^T d B)] A, built by Cook-Toom on the
# first m + r - 2 of these points and infinity (F(2,3) and F(4,3) are then Lavin's published matrices, up to the
# sign of the point at infinity). The halves come last: they make the entries of G less exact.
_POINTS = (0, 1, -1, 2, -2, Fraction(1, 2), Fraction(-1, 2))
# (m, r) simflow builds, per filter size r: alpha = m + r - 1 input points, at most 8.
WINOGRAD_TILES = {3: (2, 4), 5: (2, 4)}


def _poly_times(coeffs: list[Fraction], root: Fraction) -> list[Fraction]:
    """The coefficients (lowest first) of p(x) (x - root)."""
    out = [Fraction(0)] * (len(coeffs) + 1)
    for k, c in enumerate(coeffs):
        out[k + 1] += c
        out[k] -= c * root
    return out


def winograd_matrices(m: int, r: int = 3) -> dict[str, list[list[Fraction]]]:
    """B^T, G and A^T of F(m x m, r x r) as exact fractions. Linear convolution of g (r taps) with x (m) is
    C [(G g) . (A x)] (evaluate at the points, multiply, interpolate); correlation is its transpose,
    A^T [(G g) . (C^T d)], so B^T = C^T: row i holds the coefficients of prod_{l != i} (x - a_l) (the point at
    infinity: of prod_l (x - a_l)), and G carries the interpolation's 1 / prod_{l != i} (a_i - a_l)."""
    alpha = m + r - 1
    if alpha - 1 > len(_POINTS):
        raise ValueError(f"F({m},{r}) needs {alpha - 1} finite points; simflow has {len(_POINTS)}")
    points = [Fraction(a) for a in _POINTS[: alpha - 1]]
    bt, g = [], []
    for i, a in enumerate(points):
        poly, scale = [Fraction(1)], Fraction(1)
        for j, b in enumerate(points):
            if j != i:
                poly, scale = _poly_times(poly, b), scale * (a - b)
        bt.append(poly + [Fraction(0)] * (alpha - len(poly)))
        g.append([a**k / scale for k in range(r)])
    whole = [Fraction(1)]
    for b in points:
        whole = _poly_times(whole, b)
    bt.append(whole)
    g.append([Fraction(int(k == r - 1)) for k in range(r)])
    at = [[a**j for a in points] + [Fraction(int(j == m - 1))] for j in range(m)]
    return {"BT": bt, "G": g, "AT": at}


def _c_literal(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    if float(value) == value:
        return f"{float(value)!r}f"
    return f"{'-' if value < 0 else ''}({abs(value.numerator)}.0f / {value.denominator})"  # rounded once, by nvcc


@dataclass(frozen=True)
class WinogradVariant(ImplicitGemmVariant, family="winograd"):
    """Winograd F(m x m, r x r): filter and input tiles to the transform domain, one GEMM per transform
    point over the channels (batched in one launch), and the output transform: r^2 m^2 multiplications per
    tile become (m + r - 1)^2. F(2x2) and F(4x4) for 3x3 and for 5x5 filters (2.8x and 6.25x fewer); stride 1."""

    def check(self, problem: Problem, params: dict) -> None:
        if problem.K not in WINOGRAD_TILES:
            raise LimitError("filter size K of winograd (F(m x m, 3 x 3) and F(m x m, 5 x 5) transforms)",
                             str(problem.K), " or ".join(map(str, WINOGRAD_TILES)),
                             "use fft for other large filters, or implicit_gemm, wmma_nhwc, regtile")
        if params["m"] not in WINOGRAD_TILES[problem.K]:
            raise LimitError(f"output tile m of winograd for {problem.K}x{problem.K} filters (an input tile of "
                             f"m + {problem.K - 1} points, at most 8)", str(params["m"]),
                             " or ".join(map(str, WINOGRAD_TILES[problem.K])), "set m=2")
        if problem.stride != 1:
            raise LimitError("stride of winograd (its tiles are dense m x m output blocks)", str(problem.stride),
                             "1", "use implicit_gemm, im2col_gemm, wmma or wmma_nhwc")

    @staticmethod
    def tiles(problem: Problem, params: dict) -> tuple[int, int]:
        return math.ceil(problem.Hout / params["m"]), math.ceil(problem.Wout / params["m"])

    def extra_context(self, problem: Problem, params: dict) -> dict:
        tiles_y, tiles_x = self.tiles(problem, params)
        matrices = {k: [[_c_literal(v) for v in row] for row in rows]
                    for k, rows in winograd_matrices(params["m"], problem.K).items()}
        return {**matrices, "alpha": params["m"] + problem.K - 1, "taps": problem.K, "tiles_y": tiles_y,
                "tiles_x": tiles_x, "mp": _round_up(problem.M, 4), "stages": self.STAGES}

    GROWTH = {(2, 3): 2, (4, 3): 40, (2, 5): 40, (4, 5): 40}  # the check's bound over a direct sum's, per (m, r)

    def tolerance(self, problem: Problem, params: dict) -> Tolerance:
        """F(2x2,3x3)'s transforms only add and halve, so its rounding is close to a direct sum's; six points
        and more have entries up to 5 (B^T) and 8 (A^T) and inexact ones (1/6, 1/12, 1/24 and, with the halves,
        2/9, 1/90 ... in G), which amplify every rounding. Measured (H100 and H200, every tests/test_gpu.py shape
        and suite layer), the largest |y - ref| / S: F(2x2,3x3) fp32 4e-7, F(4x4,3x3) fp32 7.4e-6, fp16 GEMM
        3.2e-3 (batch3x3, 9-term sums); F(2x2,5x5) fp32 1.0e-6, fp16 6.0e-3; F(4x4,5x5) fp32 2.7e-6, fp16 1.3e-2.
        Each bound is the precision's direct bound times GROWTH, 6-30x above those."""
        base = TOLERANCE[self.precision_of(params)]
        return Tolerance(atol=base.atol * self.GROWTH[params["m"], problem.K], rtol=base.rtol)

    STAGES = 3  # the GEMM's pipeline: a k step is multiplied while the next two are copied

    def row_lengths(self, problem: Problem, params: dict, batch: int) -> tuple[int, int]:
        """U's rows (output channels) and V's and Mt's (batch x tiles columns), each rounded up to a multiple
        of 4 so that the GEMM copies and stores 16 bytes at a time."""
        return _round_up(problem.M, 4), _round_up(batch * math.prod(self.tiles(problem, params)), 4)

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p = kernel.problem
        points = (kernel.params["m"] + p.K - 1) ** 2
        mp, ld = self.row_lengths(p, kernel.params, batch)
        return {"u": points * p.C * mp, "v": points * p.C * ld, "mt": points * p.M * ld}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, params, name = kernel.problem, kernel.params, f"conv2d_{self.name}"
        points, tile = (params["m"] + p.K - 1) ** 2, params["tile"]
        columns = batch * math.prod(self.tiles(p, params))
        if columns >= 2**31:
            raise LimitError("tiles per launch, B x tiles (32-bit GEMM column index)", f"{columns:,}",
                             f"{2**31 - 1:,}", "run a smaller batch (--batch) or split it")
        mp, ld = self.row_lengths(p, params, batch)
        smem = 4 * self.STAGES * params["bk"] * 2 * tile
        return [
            Launch(kernel=f"{name}_filter", grid=(math.ceil(p.C * mp / 256), 1, 1), block=(256, 1, 1),
                   args=("w", "u")),
            Launch(kernel=f"{name}_input", grid=(math.ceil(ld / 256), p.C, 1), block=(256, 1, 1),
                   args=("x", "v", "batch")),
            Launch(kernel=f"{name}_gemm", grid=(math.ceil(columns / tile), math.ceil(p.M / tile), points),
                   block=(256, 1, 1), dynamic_smem=smem, args=("v", "u", "mt", "batch")),
            Launch(kernel=f"{name}_output", grid=(math.ceil(columns / 256), p.M, 1), block=(256, 1, 1),
                   args=("mt", "y", "batch")),
        ]


@dataclass(frozen=True)
class FftVariant(Variant, family="fft"):
    """2-D FFT convolution by overlap-add: simflow's own radix-2 FFTs in shared memory (the same source must
    run in the simulator, which has no cuFFT), a complex GEMM per kept frequency over the channels, and
    the inverse FFTs' blocks summed into the output. Five kernels; stride 1 only."""

    SHARED_TILE_ELEMENTS = 4096  # complex elements of one block's FFT tiles (32 KB of float2 with padding)
    CBK = 8  # channels per step of the complex GEMM

    def check(self, problem: Problem, params: dict) -> None:
        if problem.stride != 1:
            raise LimitError("stride of fft (the transform gives every output; a stride would discard most)",
                             str(problem.stride), "1", "use implicit_gemm, im2col_gemm, wmma or wmma_nhwc")
        if params["tile"] < problem.K:
            larger = [t for t in self.param("tile").choices if t >= problem.K]
            raise LimitError(f"filter size K of fft tile={params['tile']} (an N x N transform holds the whole filter)",
                             str(problem.K), str(params["tile"]),
                             f"use tile={larger[0]}" if larger else "use a direct or GEMM variant for this filter")

    def precision_of(self, params: dict) -> str:
        return "float16" if params["precision"] == "fp16" else "float32"

    @staticmethod
    def geometry(problem: Problem, params: dict) -> dict:
        n = params["tile"]
        block = n - problem.K + 1
        per_block = max(1, FftVariant.SHARED_TILE_ELEMENTS // (n * n))
        return {"n": n, "log_n": n.bit_length() - 1, "nh": n // 2 + 1, "block": block, "per_block": per_block,
                "tiles_y": math.ceil((problem.Hout + problem.K - 1) / block),
                "tiles_x": math.ceil((problem.Wout + problem.K - 1) / block)}

    def extra_context(self, problem: Problem, params: dict) -> dict:
        g = self.geometry(problem, params)
        n = g["n"]
        twiddles = [(f"{math.cos(2 * math.pi * k / n)!r}f", f"{-math.sin(2 * math.pi * k / n)!r}f")
                    for k in range(n // 2)]
        return {**g, "twiddles": twiddles, "tm": self.rows_per_thread(problem), "cbk": self.CBK,
                "overlap": math.ceil((problem.K - 1) / g["block"]) + 1}

    @staticmethod
    def rows_per_thread(problem: Problem) -> int:
        """Output channels each thread of the complex GEMM holds (x 16 threads: the block's rows)."""
        return 1 if problem.M <= 16 else 2 if problem.M <= 32 else 4

    def tolerance(self, problem: Problem, params: dict) -> Tolerance:
        """A radix-2 FFT's rounding grows with its log2(N) stages (Higham, Accuracy and Stability of Numerical
        Algorithms, ch. 24), and each output's error comes from the whole N x N block, not from its own
        terms, so it is largest relative to S where S is small (few channels, a 3x3 filter). Measured (H100,
        every tests/test_gpu.py shape and suite layer), the largest |y - ref| / S: fp32 6.1e-7, fp16 spectra
        2.3e-3 (both batch3x3); the bound is the precision's direct bound times log2(N) / 2, 8-11x above."""
        base = TOLERANCE[self.precision_of(params)]
        return Tolerance(atol=base.atol * (params["tile"].bit_length() - 1) / 2, rtol=base.rtol)

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        p, g = kernel.problem, self.geometry(kernel.problem, kernel.params)
        spectrum = g["n"] * g["nh"]
        columns = batch * g["tiles_y"] * g["tiles_x"]
        complex_floats = 1 if kernel.params["precision"] == "fp16" else 2  # half2 or float2
        return {"wf": spectrum * p.M * p.C * complex_floats, "xf": spectrum * p.C * columns * complex_floats,
                "yf": 2 * spectrum * p.M * columns, "z": p.M * columns * g["n"] ** 2}

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        p, g, name = kernel.problem, self.geometry(kernel.problem, kernel.params), f"conv2d_{self.name}"
        columns, per_block = batch * g["tiles_y"] * g["tiles_x"], g["per_block"]
        rows = 16 * self.rows_per_thread(p)
        return [
            Launch(kernel=f"{name}_wfft", grid=(math.ceil(p.M * p.C / per_block), 1, 1), block=(256, 1, 1),
                   args=("w", "wf")),
            Launch(kernel=f"{name}_xfft", grid=(math.ceil(columns / per_block), p.C, 1), block=(256, 1, 1),
                   args=("x", "xf", "batch")),
            Launch(kernel=f"{name}_cgemm", grid=(math.ceil(columns / 64), math.ceil(p.M / rows), g["n"] * g["nh"]),
                   block=(256, 1, 1), args=("xf", "wf", "yf", "batch")),
            Launch(kernel=f"{name}_ifft", grid=(math.ceil(columns / per_block), p.M, 1), block=(256, 1, 1),
                   args=("yf", "z", "batch")),
            Launch(kernel=f"{name}_overlap", grid=(math.ceil(p.Hout * p.Wout / 256), p.M, batch), block=(256, 1, 1),
                   args=("z", "y", "batch")),
        ]
