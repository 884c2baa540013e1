#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Plots ndksim-perf --out_json results versus message size (see scripts/plot.py --help), installing
# Debian's python3-matplotlib first if the system Python lacks it. Paths are relative to the directory
# it is called from; installed with ndksim-perf, the same plotter is `ndksim-plot`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Always the system interpreter: a pyenv python3 on PATH would not see the Debian package.
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  echo "ndksim: installing python3-matplotlib" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib
fi
exec /usr/bin/python3 "$root/scripts/plot.py" "$@"
