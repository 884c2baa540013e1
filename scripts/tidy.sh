#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs clang-tidy's default checks over every translation unit in src/, bench/ and the C++ examples
# (using build/'s compile_commands.json), with the project's headers in src/ and include/; any
# diagnostic in project code fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
command -v run-clang-tidy >/dev/null || { echo "run-clang-tidy not found (Debian package clang-tidy)" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The compile commands are g++'s: clang does not know some of its warning options (GCC 12's
# -Wno-restrict), which is no finding about the code.
run-clang-tidy -p "$dir" -j "${NDKSIM_JOBS:-$(nproc)}" -quiet -header-filter="$PWD/(src|include)/" \
  -extra-arg=-Wno-unknown-warning-option "$PWD/src/" "$PWD/bench/" "$PWD/examples/.*\.cc\$" >"$log" 2>&1 || true
# Diagnostics in system headers are suppressed by clang-tidy and only counted; anything printed
# as "warning:" or "error:" is ours.
if grep -E "(warning|error):" "$log"; then
  echo "clang-tidy: diagnostics in project code (see above)" >&2
  exit 1
fi
echo "clang-tidy: no diagnostics in $(grep -c '^clang-tidy' "$log") translation units"
