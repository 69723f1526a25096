"""What the full elementwise check costs a GPU run, on layers with large outputs: the wall time of one
`simflow run` (module already built, so no compile) with every output element judged, against the same run
with the seeded 4096-element sample judged instead (`--sample-check`), in the same process.

    python benchmarks/check_cost.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simflow.backends.gpu import GpuBackend  # noqa: E402
from simflow.job import Job  # noqa: E402
from simflow.kernels.problems import get_problem  # noqa: E402

CASES = [  # (label, shape B,C,M,H,W,K,pad,stride, variant, params)
    ("VGG conv1_1 fp32, 51 M outputs", "16,3,64,224,224,3,1,1", "implicit_gemm_async", {"tile_m": 64}),
    ("VGG conv1_1 fp16 io, 51 M outputs", "16,3,64,224,224,3,1,1", "mma_nhwc",
     {"precision": "fp16", "io": "float16"}),
    ("ResNet-50 3x3 64->64 at 56 fp32, 6.4 M outputs", "32,64,64,56,56,3,1,1", "implicit_gemm_async", {}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs timed per case and check")
    args = parser.parse_args()
    backend = GpuBackend()
    rows = []
    for label, shape, variant, params in CASES:
        problem = get_problem("custom", shape=shape)
        walls = {}
        for sample in (False, True):
            job = Job.make(variant, params, problem, "gpu", sample_check=sample, repeats=20)
            kernel = job.kernel()
            backend.run(job, kernel=kernel)  # builds the module and the check's: not timed
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                result = backend.run(job, kernel=kernel)
                times.append(time.perf_counter() - t0)
                if not result.passed:
                    raise SystemExit(f"{label}: {result.status}: {result.reason}")
            walls[sample] = statistics.median(times)
        rows.append((label, walls[False], walls[True], result.metrics["time_ms"]))
        print(rows[-1], flush=True)
    print(f"\none run's wall time, median of {args.repeats} (module built), {backend.environment().get('gpu', '')}")
    print("| layer | full check s | sampled check s | full / sampled | kernel ms |")
    print("|---|---|---|---|---|")
    for label, full, sampled, kernel_ms in rows:
        print(f"| {label} | {full:.3f} | {sampled:.3f} | {full / sampled:.2f}x | {kernel_ms:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
