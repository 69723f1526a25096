"""How long simflow takes to start, beside `python -c pass` measured in the same run (issue 56's targets:
`simflow --help` under 0.3 s, `simflow parse` of a small log under 0.5 s, on the 2-core machine).

    python benchmarks/startup.py [--repeats N]

Each command runs N times in a fresh interpreter (as a user types it); the median wall time is printed, with
the modules it loaded that it need not (numpy, pandas, the kernel families)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "examples" / "accelsim-fork_qv100_batch3x3_global.log.gz"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "simflow --help": [sys.executable, "-m", "simflow", "--help"],
    "simflow --version": [sys.executable, "-m", "simflow", "--version"],
    "simflow parse (small log)": [sys.executable, "-m", "simflow", "parse", str(LOG)],
}
HEAVY = ("numpy", "pandas", "simflow.kernels.families", "simflow.kernels.tensor_cores", "simflow.kernels.wgmma")


def loaded(argv: list[str]) -> list[str]:
    """The heavy modules a command imports (python -X importtime)."""
    if argv[1] != "-m":
        return []
    proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, cwd=ROOT)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return [m for m in HEAVY if m in names]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, {args.repeats} runs each")
    rows = []
    for name, argv in COMMANDS.items():
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, cwd=ROOT, env=env, check=True)
            times.append(time.perf_counter() - start)
        rows.append((name, statistics.median(times), min(times), loaded(argv)))
    base = rows[0][1]
    print(f"{'command':28} {'median s':>9} {'min s':>7} {'x pass':>7}  heavy modules loaded")
    for name, median, fastest, heavy in rows:
        print(f"{name:28} {median:9.3f} {fastest:7.3f} {median / base:7.1f}  {', '.join(heavy) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
