#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer harnesses (clang, ASan+UBSan, in build-fuzz/) and fuzzes each for a while.
# Usage: scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]   (default: 60 s each, every harness)
# Each harness starts from its checked-in seed corpus and regressions (tests/fuzz/corpus/NAME,
# tests/fuzz/regressions/NAME) plus what earlier runs found (build-fuzz/corpus/NAME). An input that
# breaks an invariant is written to build-fuzz/artifacts/ and the script exits non-zero; copy it
# to tests/fuzz/regressions/NAME/ once the bug is fixed, so the suite replays it for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(ndk_program adversarial_peer ndk_bytes)

scripts/deps.sh
need=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

dir=build-fuzz
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DNDKSIM_SANITIZE=address,undefined -DNDKSIM_BUILD_FUZZERS=ON \
  -DNDKSIM_BUILD_TESTS=OFF -DNDKSIM_BUILD_BENCH=OFF -DNDKSIM_BUILD_EXAMPLES=OFF >/dev/null
targets=()
for h in "${harnesses[@]}"; do targets+=("ndksim_fuzz_$h"); done
cmake --build "$dir" -j "${NDKSIM_JOBS:-$(nproc)}" --target "${targets[@]}" >&2

mkdir -p "$dir/artifacts"
status=0
for h in "${harnesses[@]}"; do
  corpus="$dir/corpus/$h"
  mkdir -p "$corpus"
  seeds=("tests/fuzz/corpus/$h")
  [ -d "tests/fuzz/regressions/$h" ] && seeds+=("tests/fuzz/regressions/$h")
  echo "== fuzzing $h for ${seconds}s"
  log="$dir/fuzz-$h.log"
  # A fabric per input takes a few hundred MB under ASan: libFuzzer's default 2 GB limit leaves
  # room. -max_len with -len_control=0: programs of up to 1 KiB from the start (libFuzzer would
  # otherwise grow the limit slowly from the seeds' sizes).
  if ! "$dir/tests/fuzz/ndksim_fuzz_$h" -max_total_time="$seconds" -print_final_stats=1 -timeout=30 -max_len=1024 -len_control=0 \
      -artifact_prefix="$dir/artifacts/$h-" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    status=1
    grep -E "invariant violated|ERROR: AddressSanitizer|runtime error|SUMMARY|Test unit written" "$log" || tail -n 30 "$log"
  fi
  # The last coverage line and the final statistics: executions, speed, corpus.
  grep -E "^#[0-9]+" "$log" | tail -n 1 || true
  grep -E "stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log" || true
done
exit $status
