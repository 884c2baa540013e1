#!/usr/bin/env bash
# Installs ndksim into a scratch prefix, runs the installed ndksim-perf, and builds a tiny consumer
# with find_package(ndksim).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$dir" --prefix "$work/prefix" >/dev/null
"$work/prefix/bin/ndksim-perf" --op send --size 32 --iters 10 --no-progress | grep -q "^ *32 " ||
  { echo "installed ndksim-perf did not print a row for 32 B" >&2; exit 1; }
echo "installed ndksim-perf: ok"
mkdir -p "$work/consumer"
cat > "$work/consumer/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(ndksim REQUIRED)
add_executable(consumer main.cc)
target_link_libraries(consumer PRIVATE ndksim::ndksim)
CMAKE
cat > "$work/consumer/main.cc" <<'CXX'
#include <ndksim/fabric.h>
#include <cstdio>
int main() {
  ndksim::Fabric fabric;
  ndksim::Node& node = fabric.AddNode({"n0", {"192.0.2.1"}});
  NDK_ADAPTER* adapter = nullptr;
  if (node.OpenAdapter(NDK_VERSION{2, 1}, &adapter) != STATUS_SUCCESS) return 1;
  node.CloseAdapter(adapter);
  std::puts("find_package(ndksim) consumer: ok");
  return 0;
}
CXX
cmake -S "$work/consumer" -B "$work/consumer/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
"$work/consumer/build/consumer"
