#!/usr/bin/env bash
# One call on the lent GPU: 'simflow profile' (Nsight Compute counters) for the variants that
# benchmarks/correlate.md compares with the simulator, on batch3x3 and fmnist-conv1 at B=1.
# Records go to $OUT/results (simflow.db and the run folders), to be joined with simulator runs.
#   usage: bash benchmarks/profile_variants.sh
set -uo pipefail
out=${OUT:-/tmp/simflow-out}; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --target .pysite .whl/*.whl || exit 1
export PYTHONPATH=$PWD/.pysite:$PWD PYTHONUNBUFFERED=1 SIMFLOW_CACHE=/tmp/simflow-cache
export SIMFLOW_RESULTS=$out/results
ncu --version | tail -1
rc=0
for problem in "--problem batch3x3" "--problem fmnist-conv1 --batch 1"; do
  while read -r variant params; do
    args=()
    for p in $params; do args+=(--param "$p"); done
    python3 -m simflow profile "$variant" "${args[@]}" $problem --json > "$out/last.json" 2> "$out/last.err"
    code=$?
    python3 - "$out/last.json" "$variant" "$params" "$problem" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])) if open(sys.argv[1]).read().strip() else {}
m = r.get("metrics", {})
print(f"{sys.argv[2]:16} {sys.argv[3]:22} {sys.argv[4]:34} {r.get('status', 'NO OUTPUT'):10} "
      f"cycles={m.get('gpu_sim_cycle', float('nan')):.0f} thread_insn={m.get('gpu_sim_insn', float('nan')):.0f} "
      f"shmem={m.get('gpgpu_n_shmem_insn', float('nan')):.0f}")
PY
    if [[ $code -ne 0 ]]; then rc=1; tail -3 "$out/last.err"; fi
  done <<'LIST'
global
global unroll=both
constant
constant unroll=both
shared
shared unroll=both
shared tile=8
shared tile=32
shared_weights
shared_constant
LIST
done
rm -f "$out/last.json" "$out/last.err"
exit "$rc"
