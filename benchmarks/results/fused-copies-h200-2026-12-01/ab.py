"""The suite's best configuration of eleven layers timed (CUDA events, 50 repeats, checked): run with the templates
of one version, then another, in turn (fused x/w/zero copies against separate launches).
(Tidied for ruff after the run; the same code.)"""
import csv

from simflow import api
from simflow.kernels.problems import suite


def cfg(label):
    text = label.split(" [")[0]
    v, _, rest = text.partition(":")
    return v, dict(p.split("=", 1) for p in rest.split(",") if p)

R = "benchmarks/results/"
jobs = [("resnet50", "tf32", R + "suite_resnet50_tf32_session47_h200_2026-12-01.csv",
         ["resnet50-3x3-128-128-28", "resnet50-3x3-256-256-14", "resnet50-3x3-512-512-7", "resnet50-3x3-256-256-28-s2",
          "resnet50-3x3-512-512-14-s2", "resnet50-3x3-128-128-56-s2"]),
        ("vgg16", "tf32", R + "suite_vgg16_tf32_session48_h200_2026-12-01.csv", ["vgg16-conv5_1", "vgg16-conv4_2"]),
        ("resnet50", "float16", R + "suite_resnet50_fp16_session50_h200_2026-12-01.csv",
         ["resnet50-3x3-256-256-14", "resnet50-3x3-512-512-7", "resnet50-3x3-256-256-28-s2"])]
for s, prec, path, layers in jobs:
    probs = {p.name: p for p in suite(s)}
    rows = {r["layer"]: r for r in csv.DictReader(open(path))}
    for layer in layers:
        label = rows[layer][f"{prec} best"]
        v, params = cfg(label)
        r = api.run(v, probs[layer], backend="gpu", params=params, store=False, repeats=50)
        parts = {k.split(".")[0].rsplit("_", 1)[-1]: round(1000 * val, 1) for k, val in r.metrics.items()
                 if k.endswith(".time_ms")}
        print(f"{layer:28} {prec:7} {r.status:7} {1000 * r.metrics.get('time_ms', float('nan')):7.1f} us  {parts}  "
              f"{label}", flush=True)
