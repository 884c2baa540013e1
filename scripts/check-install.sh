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
out=$("$work/prefix/bin/ndksim-perf" --op send --size 32 --iters 10 --no-progress)
grep -q "^ *32 " <<<"$out" || { echo "installed ndksim-perf did not print a row for 32 B" >&2; exit 1; }
echo "installed ndksim-perf: ok"
for example in ping-pong rdma-write-read link-flap; do
  "$work/prefix/bin/ndksim-example-$example" >/dev/null ||
    { echo "installed ndksim-example-$example failed" >&2; exit 1; }
done
echo "installed examples: ok"
for doc in README.md LICENSE CHANGELOG.md docs/conformance.md; do
  [ -f "$work/prefix/share/doc/ndksim/$doc" ] || { echo "share/doc/ndksim/$doc is not installed" >&2; exit 1; }
done
echo "installed documentation: ok"
# pkg-config, for builds without CMake.
cat > "$work/pc.cc" <<'CXX'
#include <ndksim/fabric.h>
#include <ndksim/version.h>
#include <cstdio>
int main() {
  ndksim::Fabric fabric;
  fabric.AddNode({"n", {"192.0.2.1"}});
  std::printf("pkg-config consumer of ndksim %s: ok\n", NDKSIM_VERSION_STRING);
}
CXX
# shellcheck disable=SC2046  # the flags are words
g++ "$work/pc.cc" -o "$work/pc" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs ndksim)
"$work/pc"
# tests/consumer is a user's project: find_package(ndksim), the fixture, matchers and fault rules,
# and no C++ standard of its own (the package carries its C++20 requirement).
# The README's CMake lines are the ones this project uses.
awk '/^```cmake$/{on=1; next} /^```$/{on=0} on' README.md | while IFS= read -r line; do
  grep -qxF "$line" tests/consumer/CMakeLists.txt ||
    { echo "README's CMake line is not in tests/consumer/CMakeLists.txt: $line" >&2; exit 1; }
done
cmake -S tests/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/my_tests" --gtest_brief=1
echo "find_package(ndksim) consumer: ok"
