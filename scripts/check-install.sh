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
# perftest's program names are installed as links that run one test each.
out=$("$work/prefix/bin/ndksim_send_lat" -n 10 --no-progress)
grep -q "^ 2 " <<<"$out" || { echo "installed ndksim_send_lat did not print a row for 2 B" >&2; exit 1; }
echo "installed ndksim_send_lat: ok"
# The plotter is installed beside it (its --help needs no matplotlib).
"$work/prefix/bin/ndksim-plot" --help | grep -q "ndksim-perf" || { echo "installed ndksim-plot --help failed" >&2; exit 1; }
echo "installed ndksim-plot: ok"
# scripts/run.sh runs ndksim-perf in the caller's directory: a relative --out_json_file lands there.
repo=$PWD
(cd "$work" && "$repo/scripts/run.sh" --op send --size 32 --iters 10 --no-progress --out_json_file rel.json >/dev/null)
[ -s "$work/rel.json" ] || { echo "scripts/run.sh did not write --out_json_file rel.json in the caller's directory" >&2; exit 1; }
echo "scripts/run.sh from another directory: ok"
for example in ping-pong rdma-write-read link-flap; do
  "$work/prefix/bin/ndksim-example-$example" >/dev/null ||
    { echo "installed ndksim-example-$example failed" >&2; exit 1; }
done
echo "installed examples: ok"
for doc in README.md LICENSE CHANGELOG.md docs/conformance.md; do
  [ -f "$work/prefix/share/doc/ndksim/$doc" ] || { echo "share/doc/ndksim/$doc is not installed" >&2; exit 1; }
done
echo "installed documentation: ok"
# Every header is under include/ndksim/ (the WDK-named NDK headers in include/ndksim/wdk/).
others=$(find "$work/prefix/include" -mindepth 1 -maxdepth 1 ! -name ndksim)
[ -z "$others" ] || { echo "headers outside include/ndksim/: $others" >&2; exit 1; }
[ -f "$work/prefix/include/ndksim/wdk/ndkpi.h" ] || { echo "include/ndksim/wdk/ndkpi.h is not installed" >&2; exit 1; }
echo "installed headers under include/ndksim/: ok"
# The man pages: ndksim-perf(1), its perftest-named links (ndksim_write_bw.1, ...) and ndksim(7).
for page in man1/ndksim-perf.1 man1/ndksim_write_bw.1 man1/ndksim_send_lat.1 man7/ndksim.7; do
  [ -f "$work/prefix/share/man/$page" ] || { echo "share/man/$page is not installed" >&2; exit 1; }
done
if command -v man >/dev/null; then
  out=$(man -M "$work/prefix/share/man" ndksim_send_lat 2>&1) || true
  grep -q "ndksim_send_lat \[options\]" <<<"$out" || { echo "man ndksim_send_lat did not show ndksim-perf(1): $out" >&2; exit 1; }
fi
echo "installed man pages: ok"
# pkg-config, for builds without CMake.
cat > "$work/pc.cc" <<'CXX'
#include <ndkpi.h>
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
# ndksim-kernel.pc: a kernel-mode consumer in C, compiled as C with the WDK headers' flags (and no
# C++ flag), linked into a program of its own and run.
cat > "$work/kernel_pc.c" <<'C'
#include <wdm.h>
#include <stdio.h>
int main(void) {
  UNICODE_STRING name;
  RtlInitUnicodeString(&name, L"ndksim");
  printf("pkg-config kernel consumer: %u bytes\n", (unsigned)name.Length);
  return name.Length == 12 ? 0 : 1;
}
C
# shellcheck disable=SC2046  # the flags are words
gcc -std=c11 "$work/kernel_pc.c" -o "$work/kernel_pc" $(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs ndksim-kernel)
"$work/kernel_pc"
# tests/consumer is a user's project: find_package(ndksim), the fixture, matchers and fault rules,
# and no C++ standard of its own (the package carries its C++20 requirement).
cmake -S tests/consumer -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/my_tests" --gtest_brief=1
echo "find_package(ndksim) consumer: ok"

# The first CMake block of a document, printed to stdout; and its first block of another language.
block() { awk -v lang="$2" '$0 == "```" lang {n++; if (n == 1) on = 1; next} /^```$/ {on = 0} on' "$1"; }

# The README's CMake block is a whole project: with the README's test beside it, it configures,
# builds and runs exactly as printed.
mkdir -p "$work/readme"
block README.md cmake >"$work/readme/CMakeLists.txt"
block README.md cpp >"$work/readme/my_tests.cc"
cmake -S "$work/readme" -B "$work/readme/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/readme/build" >/dev/null
"$work/readme/build/my_tests" --gtest_brief=1
echo "README's CMake block, as printed: ok"

# docs/kernel.md's CMake block likewise, with a driver source and a test of its own.
mkdir -p "$work/kernel"
block docs/kernel.md cmake >"$work/kernel/CMakeLists.txt"
cat >"$work/kernel/consumer.c" <<'C'
#include <wdm.h>
ULONG ConsumerAnswer(VOID) { LARGE_INTEGER x; x.QuadPart = 42; return x.LowPart; }
C
cat >"$work/kernel/tests.cc" <<'CXX'
#include <gtest/gtest.h>
#include <wdm.h>
extern "C" ULONG ConsumerAnswer(VOID);
TEST(Consumer, Links) { EXPECT_EQ(ConsumerAnswer(), 42u); }
CXX
cmake -S "$work/kernel" -B "$work/kernel/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/kernel/build" >/dev/null
"$work/kernel/build/my_consumer_tests" --gtest_brief=1
echo "docs/kernel.md's CMake block, as printed: ok"

# docs/benchmarking.md's two blocks are a whole posting-path benchmark project: it builds against
# the installed package (ndksim::benchmark) and measures.
mkdir -p "$work/bench"
block docs/benchmarking.md cmake >"$work/bench/CMakeLists.txt"
block docs/benchmarking.md cpp >"$work/bench/my_bench.cc"
cmake -S "$work/bench" -B "$work/bench/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/bench/build" >/dev/null
out=$("$work/bench/build/my_bench" --benchmark_min_time=0.01)
grep -q "doorbells" <<<"$out" || { echo "docs/benchmarking.md's benchmark printed no counters" >&2; exit 1; }
echo "docs/benchmarking.md's benchmark, as printed: ok"
