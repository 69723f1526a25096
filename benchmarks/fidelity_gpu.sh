#!/usr/bin/env bash
# One call on the lent GPU: the GPU side of benchmarks/fidelity.py (benchmarks/fidelity_gpu.toml: time with CUDA
# events, counters with Nsight Compute) into the results folder .scratch/fidelity-gpu, which the call carries, so
# a second call resumes where the first stopped (the sweep skips stored jobs). The folder comes back as
# $OUT/fidelity-gpu.tgz: unpack it here with `tar xzf ... -C .scratch`.
#   usage: bash benchmarks/fidelity_gpu.sh [SECONDS]   (stop the sweep after SECONDS, default 500)
set -uo pipefail
out=${OUT:-/tmp/simflow-out}; mkdir -p "$out" .scratch
python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl || exit 1
export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
timeout -s INT "${1:-500}" python3 -m simflow sweep benchmarks/fidelity_gpu.toml --results .scratch/fidelity-gpu \
  -f csv -o "$out/sweep.csv" 2> "$out/sweep.err"
echo "sweep exit $?"; tail -5 "$out/sweep.err"
tar czf "$out/fidelity-gpu.tgz" -C .scratch --exclude='*.bin' fidelity-gpu
python3 -m simflow runs --results .scratch/fidelity-gpu --json | python3 -c '
import collections, json, sys
runs = json.load(sys.stdin)
print(collections.Counter((r["backend"], r["status"]) for r in runs))
for r in runs:
    if r["status"] != "passed":
        print(r["backend"], r["variant"], r["problem"]["name"], r["status"], r["reason"][:160])'
