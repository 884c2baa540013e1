#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds ndksim and runs ndksim-perf, the perftest-like tool, on the default hardware
# profile. Extra arguments go to ndksim-perf (see `--help`); the examples are in build/examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
"$dir/bench/ndksim-perf" "$@"
