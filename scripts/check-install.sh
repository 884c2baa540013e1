#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs ndksim into a scratch prefix, runs the installed ndksim-perf, and builds and runs an
# external consumer project (tests/consumer) against it with find_package(ndksim).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$dir" --prefix "$work/prefix" >/dev/null
"$work/prefix/bin/ndksim-perf" --op send --size 32 --iters 10 --no-progress | grep -q "^ *32 " ||
  { echo "installed ndksim-perf did not print a row for 32 B" >&2; exit 1; }
echo "installed ndksim-perf: ok"
# tests/consumer is a user's project: find_package(ndksim), the fixture, matchers and fault rules,
# and no C++ standard of its own (the package carries its C++20 requirement).
cmake -S tests/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer_tests" --gtest_brief=1
echo "find_package(ndksim) consumer: ok"
