#!/usr/bin/env bash
# Build GPGPU-Sim from a git repository at a pinned commit, natively or in docker/Dockerfile.
#
# usage: install-gpgpusim.sh REPO_URL COMMIT PREFIX [JOBS]
#        install-gpgpusim.sh --patch-only TREE     (apply the build fixes below to a checkout, build nothing)
#
# Needs CUDA_INSTALL_PATH (a CUDA 11.x with bin/nvcc, include/, lib64/) and the simulator's
# build dependencies (build-essential xutils-dev bison flex zlib1g-dev libglu1-mesa-dev git).
# PREFIX must not exist yet: the script clones into it.
#
# Three fixes, each applied only to a tree that needs it (upstream gpgpu-sim/gpgpu-sim_distribution
# dev at 6b244a5d needs the first two, the accel-sim fork at 667834cf the third) and recorded in
# PREFIX/SIMFLOW_PATCHES:
#   parser-tokens  bison 3.8 writes comments with string literals beside the token values in
#                  ptx.tab.h; the Makefile turns those lines into ptx_parser_decode.def, which then
#                  fails to compile ("unable to find string literal operator 'operator\"\"end'").
#                  Fix: drop the comments and bison's YY* pseudo-tokens from that list.
#   push-config    __cudaPushCallConfiguration (libcuda/cuda_runtime_api.cc) falls off its end
#                  without a return; gcc 12 at -O3 then miscompiles it and every launch segfaults.
#                  Fix: return 0, as the fork does.
#   occupancy      the fork samples the warp slots behind gpu_occupancy (get_current_occupancy in
#                  src/gpgpu-sim/gpu-sim.cc) only inside `if (g_power_simulation_enabled)`, so with
#                  AccelWattch off (SM7_QV100) it divides 0 by 0 and prints -nan%. Fix: sample every
#                  core cycle, outside that block, as upstream does.
set -euo pipefail

usage() {
  echo "usage: $0 REPO_URL COMMIT PREFIX [JOBS]" >&2
  echo "       $0 --patch-only TREE" >&2
  exit 2
}

# Applies the fixes the tree in $1 needs; prints one line per fix applied, and fails if a fix
# was needed but did not take.
patch_tree() {
  local tree=$1 applied=()
  local makefile=$tree/src/cuda-sim/Makefile api=$tree/libcuda/cuda_runtime_api.cc
  if [ -f "$makefile" ] && grep -q 'ptx_parser_decode\.def' "$makefile" \
     && ! grep -qE 'YYUNDEF|YY\(error' "$makefile"; then
    sed -i -E \
      -e '/> \$\(OUTPUT_DIR\)\/ptx_parser_decode\.def/ s#\| sed .s/\[=,\]//g. \|#| sed -E "s:[[:space:]]*/[*].*[*]/::" | sed "s/[=,]//g" |#' \
      -e '/> \$\(OUTPUT_DIR\)\/ptx_parser_decode\.def/ s#[[:space:]]*> \$\(OUTPUT_DIR\)/ptx_parser_decode\.def# | sed -E "/[(]YY(error|EOF|EMPTY|UNDEF),/d" > $(OUTPUT_DIR)/ptx_parser_decode.def#' \
      "$makefile"
    if ! grep -qF 'YY(error|EOF|EMPTY|UNDEF)' "$makefile" || ! grep -qF 's:[[:space:]]*/[*].*[*]/::' "$makefile"; then
      echo "install-gpgpusim.sh: could not apply the parser-tokens fix to $makefile" >&2
      exit 1
    fi
    applied+=("parser-tokens src/cuda-sim/Makefile")
  fi
  if [ -f "$api" ] && awk '
      /__cudaPushCallConfiguration\(dim3/ { inside = 1 }
      inside && /^}/ { exit (last ~ /return/) ? 1 : 0 }
      inside && NF { last = $0 }
      END { if (!inside) exit 1 }' "$api"; then
    sed -i -E '/__cudaPushCallConfiguration\(dim3/,/^}/ s/^([[:space:]]*)(cudaConfigureCallInternal\(gridDim, blockDim, sharedMem, stream\);)$/\1\2\n\1return 0;/' "$api"
    if ! sed -n '/__cudaPushCallConfiguration(dim3/,/^}/p' "$api" | grep -q 'return 0;'; then
      echo "install-gpgpusim.sh: could not apply the push-config fix to $api" >&2
      exit 1
    fi
    applied+=("push-config libcuda/cuda_runtime_api.cc")
  fi
  local gpusim=$tree/src/gpgpu-sim/gpu-sim.cc
  local guarded='if \(m_config\.g_power_simulation_enabled\) \{[^}]*get_current_occupancy'
  if [ -f "$gpusim" ] && grep -Pzq "$guarded" "$gpusim"; then
    perl -0pi -e '
      s/\n([ \t]*)m_cluster\[i\]->get_current_occupancy\(\n[ \t]*gpu_occupancy\.aggregate_warp_slot_filled,\n[ \t]*gpu_occupancy\.aggregate_theoretical_warp_slots\);(\n[ \t]*\}\n)/$2/
      and s/(\n([ \t]*)\/\/ Update core icnt\/cache stats for AccelWattch\n[ \t]*if \(m_config\.g_power_simulation_enabled\) \{)/\n$2m_cluster[i]->get_current_occupancy(  \/\/ simflow: every cycle, as upstream\n$2    gpu_occupancy.aggregate_warp_slot_filled,\n$2    gpu_occupancy.aggregate_theoretical_warp_slots);$1/' "$gpusim"
    if grep -Pzq "$guarded" "$gpusim" || ! grep -q 'get_current_occupancy(  // simflow' "$gpusim"; then
      echo "install-gpgpusim.sh: could not apply the occupancy fix to $gpusim" >&2
      exit 1
    fi
    applied+=("occupancy src/gpgpu-sim/gpu-sim.cc")
  fi
  for fix in "${applied[@]}"; do
    echo "$fix"
  done
}

if [ "${1:-}" = "--patch-only" ]; then
  [ $# -eq 2 ] || usage
  patch_tree "$2"
  exit 0
fi
[ $# -ge 3 ] && [ $# -le 4 ] || usage
repo=$1 commit=$2 prefix=$3 jobs=${4:-$(nproc)}
: "${CUDA_INSTALL_PATH:?set CUDA_INSTALL_PATH to a CUDA 11.x install (a folder with bin/nvcc, include/, lib64/)}"
if [ -e "$prefix" ]; then
  echo "install-gpgpusim.sh: $prefix exists already; remove it or choose another PREFIX (the script clones into a new folder)" >&2
  exit 1
fi

# Only the pinned commit is fetched (a few MB instead of the whole history; a copy of the
# repository that lacks old objects still serves it). Servers that refuse a fetch by commit, or a
# short commit, get a full fetch.
git init --quiet "$prefix"
git -C "$prefix" remote add origin "$repo"
if git -C "$prefix" fetch --quiet --depth 1 origin "$commit" 2>/dev/null; then
  git -C "$prefix" checkout --quiet --detach FETCH_HEAD
else
  git -C "$prefix" fetch --quiet origin '+refs/heads/*:refs/remotes/origin/*'
  git -C "$prefix" checkout --quiet --detach "$commit"
fi
case "$(git -C "$prefix" rev-parse HEAD)" in
  "$commit"*) ;;
  *) echo "install-gpgpusim.sh: $repo gave $(git -C "$prefix" rev-parse HEAD), not $commit" >&2; exit 1 ;;
esac
# Any user (docker run --user UID:GID) may read the tree's git metadata for the build string.
git config --global --add safe.directory "$prefix" 2>/dev/null || true

patch_tree "$prefix" > "$prefix/SIMFLOW_PATCHES"
if [ -s "$prefix/SIMFLOW_PATCHES" ]; then
  echo "install-gpgpusim.sh: applied: $(paste -sd ';' "$prefix/SIMFLOW_PATCHES")"
fi

cd "$prefix"
export PATH="$CUDA_INSTALL_PATH/bin:$PATH"  # CUDA 11's helpers before any other toolkit's
set +u  # setup_environment reads unset variables
# shellcheck disable=SC1091
if ! source setup_environment release || [ "${GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN:-}" != 1 ]; then
  echo "install-gpgpusim.sh: setup_environment failed (CUDA_INSTALL_PATH=$CUDA_INSTALL_PATH)" >&2
  exit 1
fi
set -u
make -j"$jobs"
lib="$GPGPUSIM_ROOT/lib/$GPGPUSIM_CONFIG/libcudart.so"
if [ ! -f "$lib" ]; then
  echo "install-gpgpusim.sh: the build made no $lib" >&2
  exit 1
fi
rm -rf build  # object files; the libraries are in lib/
echo "install-gpgpusim.sh: built $repo at $(git rev-parse HEAD) into $prefix ($lib)"
