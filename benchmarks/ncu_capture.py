"""On the GPU machine: `simflow profile` of pairs of variants, and `simflow explain` of each pair, as a user runs
them. What it keeps in DIR (default $OUT): every explain (text and JSON) in one tar.gz with each profile's raw ncu
output (the fixtures of tests/test_hw_explain.py), and a table, printed last, of each pair's cycles and the sum of
the issue-slot terms against B - A.

    python3 benchmarks/ncu_capture.py [--out DIR] [--pairs NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# pair -> (A, B, kernel): each side (variant, params, problem); kernel: explain's --kernel, or ''
PAIRS = {
    "tc": (("wgmma_nhwc", {"precision": "tf32"}, "vgg16-conv3_2"), ("wgmma_halo", {}, "vgg16-conv3_2"), ""),
    "winograd": (("implicit_gemm_async", {}, "vgg16-conv3_2"), ("winograd", {}, "vgg16-conv3_2"), ""),
    "winograd-gemm": (("implicit_gemm_async", {}, "vgg16-conv3_2"), ("winograd", {}, "vgg16-conv3_2"),
                      "conv2d_implicit_gemm_async,conv2d_winograd_gemm"),
    "mma": (("mma_nchw", {}, "resnet50-3x3-64-64-56"), ("wgmma_nhwc", {}, "resnet50-3x3-64-64-56"), ""),
    "direct": (("global", {}, "fmnist-conv2"), ("shared", {}, "fmnist-conv2"), ""),
    # pairs no test was written for (session 45): bf16, a 1x1 layer read in place, FFT, a GEMM kernel against
    # another variant's, register tiles
    "bf16": (("mma_nhwc", {"precision": "bf16"}, "resnet50-3x3-128-128-28"),
             ("wgmma_nhwc", {"precision": "bf16"}, "resnet50-3x3-128-128-28"), ""),
    "nchw-1x1": (("mma_nchw", {"io": "float16"}, "resnet50-1x1-256-64-56"),
                 ("wgmma_nchw", {"io": "float16"}, "resnet50-1x1-256-64-56"), ""),
    "fft": (("winograd", {}, "vgg16-conv1_2"), ("fft", {}, "vgg16-conv1_2"), ""),
    "im2col-gemm": (("implicit_gemm", {}, "resnet50-conv1"), ("im2col_gemm", {}, "resnet50-conv1"),
                    "conv2d_implicit_gemm,conv2d_im2col_gemm_gemm"),
    "regtile": (("shared_weights", {}, "resnet50-1x1-64-64-56"), ("regtile", {"channels": 16}, "resnet50-1x1-64-64-56"),
                ""),
}


def simflow(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simflow", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=500)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/ncu-capture"))
    ap.add_argument("--pairs", default=",".join(PAIRS))
    args = ap.parse_args()
    out, results = Path(args.out), Path("/tmp/ncu-capture-results")
    keep = out / "kept"
    keep.mkdir(parents=True, exist_ok=True)
    ids: dict[tuple, str] = {}
    rows = []
    for pair in args.pairs.split(","):
        *sides, kernel = PAIRS[pair]
        for variant, params, problem in sides:
            key = (variant, json.dumps(params, sort_keys=True), problem)
            if key in ids:
                continue
            start = time.time()
            proc = simflow("profile", variant, *[f"--param={k}={v}" for k, v in params.items()], "--problem",
                           problem, "--results", str(results), "--json")
            try:
                ids[key] = json.loads(proc.stdout)["run_id"]
            except (ValueError, KeyError):
                print(f"profile {variant} on {problem} failed (exit {proc.returncode}): {proc.stderr[-800:]}")
                continue
            log = results / "runs" / ids[key] / "ncu.log"
            tag = "_".join([variant, *map(str, params.values()), problem])
            shutil.copy(log, keep / f"ncu-h200_{tag}.log")
            print(f"profiled {tag} in {time.time() - start:.0f} s: run {ids[key]}", flush=True)
        a, b = (ids.get((v, json.dumps(p, sort_keys=True), pr)) for v, p, pr in sides)
        if not (a and b):
            continue
        extra = ["--kernel", kernel] if kernel else []
        text = simflow("explain", a, b, *extra, "--results", str(results))
        data = simflow("explain", a, b, *extra, "--results", str(results), "--json")
        (keep / f"explain_{pair}.txt").write_text(text.stdout + text.stderr)
        (keep / f"explain_{pair}.json").write_text(data.stdout + data.stderr)
        try:
            found = json.loads(data.stdout)
        except ValueError:
            rows.append((pair, "explain failed", text.stderr[-300:]))
            continue
        terms = sum(t["effect"] for t in found["issue_slots"])
        rows.append((pair, f"A {found['cycles']['a']:.0f} B {found['cycles']['b']:.0f} delta "
                           f"{found['cycles']['delta']:+.0f} slot terms {terms:+.1f}", found["verdict"]))
    with tarfile.open(out / "ncu-explain.tar.gz", "w:gz") as tar:
        tar.add(keep, arcname="kept")
    shutil.rmtree(keep)
    for pair, numbers, verdict in rows:
        print(f"{pair}: {numbers}\n  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
