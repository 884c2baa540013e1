#!/usr/bin/env bash
# The main job: builds ndksim and runs the ping-pong example on the default hardware profile.
# Extra arguments are passed to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
"$dir/examples/ping_pong" "$@"
