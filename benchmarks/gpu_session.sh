#!/usr/bin/env bash
# One call on a lent GPU machine that has no package index: install the carried PyCUDA
# wheels (.whl/, see ../shared/device-wheels/README.md; pytest-xdist and execnet wheels
# beside them run tests/test_gpu.py in parallel), run the gpu tests, then the native
# benchmark. Files under $OUT come back.
#   usage: bash benchmarks/gpu_session.sh [tests|bench|all] [extra benchmark args]
set -uo pipefail
what=${1:-all}; shift || true
out=${OUT:-/tmp/simflow-out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl || exit 1
export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
rc=0
if [[ $what == tests || $what == all ]]; then
  # tests/test_gpu.py's 2,400 cases spend most of their time in nvcc: with pytest-xdist carried in .whl/ (a pure
  # wheel) they run on all but two of the machine's cores, about 4 minutes on 16 (session 58), instead of one at a
  # time; the other files' few GPU tests run after them, one at a time.
  par=(); python3 -c "import xdist" 2>/dev/null && par=(-n "$(( $(nproc) > 4 ? $(nproc) - 2 : 1 ))")
  { python3 -m pytest -q -rfEs -m gpu -p no:cacheprovider "${par[@]}" tests/test_gpu.py; a=$?
    python3 -m pytest -q -rfEs -m gpu -p no:cacheprovider --ignore=tests/test_gpu.py tests/; b=$?
    exit $(( a || b )); } 2>&1 | tee "$out/gpu-tests.log" | grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" | tail -25
  rc=${PIPESTATUS[0]}
fi
if [[ $what == bench || $what == all ]]; then
  python3 benchmarks/native.py --csv "$out/native.csv" "$@" 2>&1 | tee "$out/native.log"
  rc=$(( rc || PIPESTATUS[0] ))
fi
exit "$rc"
