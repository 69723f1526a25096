#!/usr/bin/env bash
# Entry point of the simflow GPGPU-Sim image: set up the simulator's environment, then run
# the command (default in the image: simflow doctor). simflow on the host runs
#   simflow sim-exec /simflow/run
# here, on a run folder it prepared and mounted.
set -euo pipefail
: "${GPGPUSIM_ROOT:?set GPGPUSIM_ROOT to the GPGPU-Sim folder}"
: "${CUDA_INSTALL_PATH:?CUDA_INSTALL_PATH must name a CUDA 11.x install}"
export PATH="$CUDA_INSTALL_PATH/bin:$PATH"
setup_log=$(mktemp)
set +u  # setup_environment reads unset variables
# shellcheck disable=SC1091
if ! source "$GPGPUSIM_ROOT/setup_environment" release >"$setup_log" 2>&1 \
   || [ "${GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN:-}" != 1 ]; then
  echo "simflow-entrypoint: GPGPU-Sim's setup_environment failed:" >&2
  cat "$setup_log" >&2
  rm -f "$setup_log"
  exit 1
fi
set -u
rm -f "$setup_log"
if [ $# -eq 0 ]; then
  set -- simflow doctor
fi
exec "$@"
