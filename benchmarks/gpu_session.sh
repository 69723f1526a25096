#!/usr/bin/env bash
# One call on a lent GPU machine that has no package index: install the carried PyCUDA
# wheels (.whl/, see ../shared/device-wheels/README.md), run the gpu tests, then the
# native benchmark. Files under $OUT come back.
#   usage: bash benchmarks/gpu_session.sh [tests|bench|all] [extra benchmark args]
set -uo pipefail
what=${1:-all}; shift || true
out=${OUT:-/tmp/simflow-out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl || exit 1
export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/ 2>&1 | tee "$out/gpu-tests.log" | tail -25
  rc=${PIPESTATUS[0]}
fi
if [[ $what == bench || $what == all ]]; then
  python3 benchmarks/native.py --csv "$out/native.csv" "$@" 2>&1 | tee "$out/native.log"
  rc=$(( rc || PIPESTATUS[0] ))
fi
exit "$rc"
