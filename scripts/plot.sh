#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Plots ndksim-perf --out_json results versus message size (see scripts/plot.py --help), installing
# Debian's python3-matplotlib first if the system Python lacks it. Paths are relative to the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

# Always the system interpreter: a pyenv python3 on PATH would not see the Debian package.
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  echo "ndksim: installing python3-matplotlib" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends python3-matplotlib
fi
exec /usr/bin/python3 scripts/plot.py "$@"
