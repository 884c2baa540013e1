#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job: builds ndksim and runs ndksim-perf, the perftest-like tool, on the default hardware
# profile. Extra arguments go to ndksim-perf (see `--help`); the examples are in build/examples/.
# ndksim-perf runs in the directory this is called from, so relative paths (--out_json_file results.json)
# are the caller's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(cd "$root" && scripts/build.sh | tail -n 1)
case "$dir" in
  /*) ;;
  *) dir="$root/$dir" ;;
esac
"$dir/bench/ndksim-perf" "$@"
