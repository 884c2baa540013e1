#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds ndksim and runs the whole test suite. Set NDKSIM_SANITIZE=address,undefined or thread
# to run it under sanitizers (in a separate build directory).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
ctest --test-dir "$dir" --output-on-failure -j "${NDKSIM_JOBS:-$(nproc)}"
