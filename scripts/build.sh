#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds ndksim into build/ (or build-<sanitizer>/ when NDKSIM_SANITIZE is set).
# Usage: scripts/build.sh [extra cmake arguments]; NDKSIM_TARGETS="a b" builds only those targets.
#
# The normal build is the Release build users install, with warnings as errors (NDKSIM_WERROR).
# NDKSIM_COMPILER=clang builds it with clang into build-clang/ instead of g++ into build/.
# NDKSIM_SANITIZE=address,undefined builds with clang and with the libFuzzer harnesses, so the one
# ASan+UBSan build serves both the suite and scripts/fuzz.sh. NDKSIM_SANITIZE=thread builds with g++.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize="${NDKSIM_SANITIZE:-}"
compiler="${NDKSIM_COMPILER:-gcc}"
dir="build"
[ "$compiler" = clang ] && dir="build-clang"
[ -n "$sanitize" ] && dir="build-${sanitize//,/-}"
jobs="${NDKSIM_JOBS:-$(nproc)}"
args=(-DNDKSIM_SANITIZE="$sanitize" -DNDKSIM_WERROR=ON)
if [ "$sanitize" = "address,undefined" ]; then
  scripts/deps.sh clang
  export CC=clang CXX=clang++
  args+=(-DNDKSIM_BUILD_FUZZERS=ON)
elif [ -z "$sanitize" ] && [ "$compiler" = clang ]; then
  scripts/deps.sh clang
  export CC=clang CXX=clang++
elif [ -z "$sanitize" ] && [ "$compiler" != gcc ]; then
  echo "scripts/build.sh: NDKSIM_COMPILER is gcc or clang, not '$compiler'" >&2
  exit 2
else
  scripts/deps.sh
fi
# Sanitizer builds run the suite only: no wall-clock benchmarks, and -O1 with line tables (enough
# for the sanitizers' stack traces, and much quicker to compile than -O2 -g); the test programs'
# own code compiles at -O0 (tests/CMakeLists.txt).
micro=ON
if [ -z "$sanitize" ]; then
  args+=(-DCMAKE_BUILD_TYPE=Release)
else
  micro=OFF
  args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
fi
args+=(-DNDKSIM_BUILD_MICROBENCHMARKS="$micro")
# A build directory configured with another compiler is configured afresh.
if [ -f "$dir/CMakeCache.txt" ]; then
  cached=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
  want=$(command -v "${CXX:-c++}")
  [ "$(readlink -f "$cached")" = "$(readlink -f "$want")" ] || rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
fi

# Build output goes to stderr; stdout carries only the build directory, for the other scripts.
cmake -S . -B "$dir" -G Ninja "${args[@]}" "$@" >&2
targets=()
for t in ${NDKSIM_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j "$jobs" "${targets[@]}" >&2
echo "$dir"
