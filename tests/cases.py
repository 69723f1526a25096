"""Cases several test modules share: problems that exercise every variant, every variant x parameter
combination a renderer must handle, and a sweep of real simulator runs."""

import itertools

from simflow.errors import LimitError
from simflow.job import Job
from simflow.kernels.problems import Problem
from simflow.kernels.variants import VARIANTS

PROBLEM = Problem(B=3, C=3, M=5, H=23, W=21, K=5, pad=2, name="odd")


def job_of(kernel, backend: str = "gpgpusim", **options) -> Job:
    """The job whose rendering is `kernel`: its variant, parameters and problem, on `backend`."""
    return Job.make(kernel.variant, dict(kernel.params), kernel.problem, backend, **options)


def problem_for(variant: str) -> Problem:
    """The odd layer, or the one the variant declares where that does not fit it (variants.toml's test_layer)."""
    layer = VARIANTS[variant].test_layer
    return Problem(**layer) if layer else PROBLEM


WMMA_PROBLEM, NHWC_PROBLEM = problem_for("wmma"), problem_for("wmma_nhwc")  # M in 16s; and C in 32s (64s)


def all_configs():
    """Every combination of the parameters that change the kernel code (host ones at their default), less
    those the variant refuses (test_refusals_name_the_limit covers them)."""
    for name, variant in VARIANTS.items():
        code = [p for p in variant.params if not p.host]
        for values in itertools.product(*(p.choices for p in code)):
            params = dict(zip((p.name for p in code), values, strict=True))
            try:
                variant.render(problem_for(name), params)
            except LimitError:
                continue
            yield name, params


ALL = list(all_configs())


# Six real simulator runs on batch3x3 (about 3 s each under SM7_QV100_small).
REAL = """name = "real"
backends = ["gpgpusim"]
configs = ["SM7_QV100_small"]
problems = ["batch3x3"]
variants = [{name = "shared", tile = [8, 16], unroll = ["none", "both"]}, {name = "global", unroll = ["none", "both"]}]
"""
