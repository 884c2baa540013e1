#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds ndksim into build/ (or build-<sanitizer>/ when NDKSIM_SANITIZE is set).
# Usage: scripts/build.sh [extra cmake arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

sanitize="${NDKSIM_SANITIZE:-}"
dir="build"
[ -n "$sanitize" ] && dir="build-${sanitize//,/-}"
jobs="${NDKSIM_JOBS:-$(nproc)}"

# Build output goes to stderr; stdout carries only the build directory, for the other scripts.
cmake -S . -B "$dir" -G Ninja -DNDKSIM_SANITIZE="$sanitize" "$@" >&2
cmake --build "$dir" -j "$jobs" >&2
echo "$dir"
