#!/usr/bin/env bash
# Build GPGPU-Sim from a git repository at a pinned commit (run by docker/Dockerfile).
# usage: install-gpgpusim.sh REPO_URL COMMIT PREFIX [JOBS]
# Needs CUDA_INSTALL_PATH (a CUDA 11.x with bin/nvcc, include/, lib64/) and the simulator's
# build dependencies (build-essential xutils-dev bison flex zlib1g-dev libglu1-mesa-dev git).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 REPO_URL COMMIT PREFIX [JOBS]" >&2
  exit 2
fi
repo=$1 commit=$2 prefix=$3 jobs=${4:-$(nproc)}
: "${CUDA_INSTALL_PATH:?set CUDA_INSTALL_PATH to a CUDA 11.x install}"

git clone --quiet "$repo" "$prefix"
git -C "$prefix" checkout --quiet --detach "$commit"
# Any user (docker run --user UID:GID) may read the tree's git metadata for the build string.
git config --global --add safe.directory "$prefix" 2>/dev/null || true

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
