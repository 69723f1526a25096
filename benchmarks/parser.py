"""Parser throughput and peak memory on a large log made by repeating a real one.

    python benchmarks/parser.py [--size-gb 1.0] [--rounds 3] [--log tests/data/...log.gz] [--keep FILE]

parse_file and the CLI read with the parser's compiled scanner (simflow.sim.log_scan); "regex only" is the same
parse where no C compiler is found. The large log is the real two-kernel log repeated (each copy is a whole
process's output, so the parser sees thousands of kernel blocks). Each parse runs in a child process so its peak RSS
is its own, and so does `simflow parse` as a user runs it (CLI, CSV to /dev/null); the baseline is a plain line
loop over the same file in the same run, written in a function (at module level, its counter is a global and the
loop takes about 1.6x as long: a slower floor would flatter the parser).
Times are CPU seconds of the child (its own process time), so a busy machine moves them less; the four are
measured in turn --rounds times, and each one's fastest round is the figure (this machine's speed drifts by
a third from one minute to the next).
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOG = ROOT / "tests" / "data" / "gpgpusim-dev_qv100_global-then-shared.log.gz"

CHILD = """
import resource, sys, time
sys.path.insert(0, {root!r})
t = time.process_time()
if sys.argv[2] in ("parse", "regex"):
    from simflow.sim import log_scan
    from simflow.sim.log import parse_file
    if sys.argv[2] == "regex":  # the same parse without the compiled scanner: the regex reads every block
        log_scan._LOADED["lib"] = None
    elif not log_scan.compiled():
        sys.exit("no C compiler: parse_file would use the regex")
    log = parse_file(sys.argv[1])
    n = len(log.kernels)
elif sys.argv[2] == "cli":  # as a user runs it: `simflow parse LOG --format csv -o /dev/null`, its own process
    import os, subprocess
    env = dict(os.environ, PYTHONPATH={root!r})
    subprocess.run([sys.executable, "-m", "simflow", "parse", sys.argv[1], "--format", "csv", "-o", os.devnull],
                   env=env, check=False)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(usage.ru_utime + usage.ru_stime, 0, usage.ru_maxrss)
    sys.exit(0)
else:
    def count_lines(path):  # in a function: its counter is a local, the fastest plain loop Python has
        n = 0
        with open(path, errors="replace") as f:
            for _ in f:
                n += 1
        return n
    n = count_lines(sys.argv[1])
dt = time.process_time() - t
print(dt, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def make_log(source: Path, target: Path, size: float) -> None:
    chunk = gzip.open(source, "rb").read()
    copies = max(1, int(size / len(chunk)))
    with open(target, "wb") as out:
        for _ in range(copies):
            out.write(chunk)


def measure(path: Path, mode: str) -> tuple[float, int, int]:
    proc = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT)), str(path), mode],
                          capture_output=True, text=True, check=True)
    seconds, count, rss_kb = proc.stdout.split()
    return float(seconds), int(count), int(rss_kb)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gb", type=float, default=1.0)
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--keep", type=Path, help="write the large log here and keep it")
    ap.add_argument("--rounds", type=int, default=3, help="measure each this many times, in turn; keep the fastest")
    args = ap.parse_args(argv)
    target = args.keep or Path(tempfile.mkdtemp()) / "big.log"
    make_log(args.log, target, args.size_gb * 1e9)
    size_mb = target.stat().st_size / 1e6
    rounds = {"lines": [], "parse": [], "cli": [], "regex": []}
    try:
        for _ in range(args.rounds):
            for mode, seen in rounds.items():
                seen.append(measure(target, mode))
    finally:
        if not args.keep:
            os.unlink(target)
    (base_s, lines, base_rss), (parse_s, kernels, parse_rss), (cli_s, _, cli_rss), (regex_s, _, regex_rss) = (
        min(seen) for seen in rounds.values())
    print(f"log: {size_mb:.0f} MB, {lines:,} lines, {kernels:,} kernel blocks (from {args.log.name})")
    for mode, seen in rounds.items():
        print(f"rounds, {mode}: " + " ".join(f"{s:.1f}" for s, _, _ in seen) + " CPU s")
    print(f"{'':24s}{'CPU s':>10s}{'MB/s':>10s}{'peak RSS MB':>14s}")
    print(f"{'plain line loop':24s}{base_s:10.1f}{size_mb / base_s:10.1f}{base_rss / 1024:14.1f}")
    print(f"{'simflow parse_file':24s}{parse_s:10.1f}{size_mb / parse_s:10.1f}{parse_rss / 1024:14.1f}")
    print(f"{'simflow parse (the CLI)':24s}{cli_s:10.1f}{size_mb / cli_s:10.1f}{cli_rss / 1024:14.1f}")
    print(f"{'parse_file, regex only':24s}{regex_s:10.1f}{size_mb / regex_s:10.1f}{regex_rss / 1024:14.1f}"
          "   (no C compiler: every block read by the regex)")
    print(f"parser / line loop time: {parse_s / base_s:.2f}x; the CLI: {cli_s / base_s:.2f}x "
          f"(the CLI at {base_s / cli_s:.0%} of the line loop's speed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
