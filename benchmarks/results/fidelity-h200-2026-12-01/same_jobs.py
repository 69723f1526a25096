"""Session 53: the jobs simulated on both H200 overlays, 2e177337 (8 operand collector units) and 7c4bf852 (64),
from a fidelity report's per-job table: cycles and time error each, and per layer the Spearman correlation with the
GPU's times and the median absolute time error over those jobs alone.

    python same_jobs.py fidelity-session53.md > same-jobs-session53.md
"""

import re
import statistics
import sys

OPTIONS = ("2e177337", "7c4bf852")
ROW = re.compile(r"\| H200 \(options (\w{8})\) \| (\S+) \| variant=(\w+)[^|]* \| ([\d.]+) \| \d* \| [\d.]+ \| [\d.]+ "
                 r"\| ([\d.]+) \| ([-\d.]+) \|")


def ranks(xs: list[float]) -> list[int]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0] * len(xs)
    for k, i in enumerate(order):
        out[i] = k + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    n = len(a)
    return 1 - 6 * sum((x - y) ** 2 for x, y in zip(ranks(a), ranks(b), strict=True)) / (n * (n * n - 1))


def main(path: str) -> None:
    jobs: dict[tuple[str, str], dict[str, tuple[float, float, float]]] = {}
    for line in open(path):
        m = ROW.match(line)
        if m and m.group(1) in OPTIONS:
            opt, layer, variant, cycles, gpu_ms, error = m.groups()
            jobs.setdefault((layer, variant), {})[opt] = (float(cycles), float(gpu_ms), float(error))
    both = {k: v for k, v in sorted(jobs.items()) if len(v) == 2}
    print("| layer | variant | GPU ms | 2e177337: cycles, time error | 7c4bf852: cycles, time error |")
    print("| --- | --- | ---: | ---: | ---: |")
    for (layer, variant), d in both.items():
        old, new = d["2e177337"], d["7c4bf852"]
        cells = [f"{c:,.0f}, {e:+.1f} %" for c, _, e in (old, new)]
        print(f"| {layer} | `{variant}` | {new[1]:.4f} | {cells[0]} | {cells[1]} |")
    print()
    print_layers(both)


def print_layers(both: dict) -> None:
    """Per layer, over the jobs on both overlays: the Spearman correlation of each overlay's cycles with the GPU's
    times (three jobs or more) and the median absolute time error; then the error over all of them."""
    print("| layer | jobs | Spearman, 2e177337 | Spearman, 7c4bf852 | time error, 2e177337 | time error, 7c4bf852 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for layer in sorted({layer for layer, _ in both}):
        d = [v for (lay, _), v in both.items() if lay == layer]
        gpu = [v["7c4bf852"][1] for v in d]
        cells = [f"{spearman([v[o][0] for v in d], gpu):.2f}" if len(d) > 2 else "" for o in OPTIONS]
        cells += [f"{statistics.median(abs(v[o][2]) for v in d):.1f} %" for o in OPTIONS]
        print(f"| {layer} | {len(d)} | " + " | ".join(cells) + " |")
    errors = [f"{statistics.median(abs(v[o][2]) for v in both.values()):.1f} %" for o in OPTIONS]
    print(f"| all | {len(both)} | | | {errors[0]} | {errors[1]} |")


if __name__ == "__main__":
    main(sys.argv[1])
