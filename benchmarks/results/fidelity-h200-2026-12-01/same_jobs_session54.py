"""Session 54: the jobs simulated on both H200 overlays, 2e177337 (8 operand collector units) and 7c4bf852 (64),
from a fidelity report's two per-job tables (the GPU times of this report's runs, and those of an earlier report's,
k7net-conv1's): cycles and time error each, the thread instructions simulated over the GPU's where the report has
them, and per layer the Spearman correlation with the GPU's times and the median absolute time error over those jobs.

    python same_jobs_session54.py fidelity-session54.md > same-jobs-session54.md
"""

import re
import sys

from same_jobs import OPTIONS, print_layers

JOB = r"\| H200 \(options (\w{8})\) \| (\S+) \| variant=(\w+)[^|]* \| ([\d.]+) \| "
ROW = re.compile(JOB + r"\d* \| [\d.]+ \| [\d.]+ \| ([\d.]+) \| ([-\d.]+) \| \w+ \| ([\d.]*) \|")  # this report's
BEFORE = re.compile(JOB + r"[\d.]+ \| ([\d.]+) \| ([-\d.]+) \|$")  # cycles, sim ms, GPU ms of the earlier report


def main(path: str) -> None:
    jobs: dict[tuple[str, str], dict[str, tuple[float, float, float, str]]] = {}
    for line in open(path):
        if (m := ROW.match(line) or BEFORE.match(line.rstrip())) and m.group(1) in OPTIONS:
            opt, layer, variant, cycles, gpu_ms, error, *insn = m.groups()
            jobs.setdefault((layer, variant), {})[opt] = (float(cycles), float(gpu_ms), float(error), "".join(insn))
    both = {k: v for k, v in sorted(jobs.items()) if len(v) == 2}
    print("| layer | variant | GPU ms | 2e177337: cycles, time error | 7c4bf852: cycles, time error | change | "
          "thread insn, sim / GPU |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for (layer, variant), d in both.items():
        old, new = d["2e177337"], d["7c4bf852"]
        cells = [f"{c:,.0f}, {e:+.1f} %" for c, _, e, _ in (old, new)]
        insn = f"{float(new[3]):.2f}" if new[3] else ""
        change = 100 * (new[0] / old[0] - 1)
        print(f"| {layer} | `{variant}` | {new[1]:.4f} | {cells[0]} | {cells[1]} | {change:+.1f} % | {insn} |")
    print()
    print_layers(both)

if __name__ == "__main__":
    main(sys.argv[1])
