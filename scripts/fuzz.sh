#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer harnesses (clang, ASan+UBSan: the build-address-undefined/ build that the
# suite also runs under) and fuzzes each for a while.
# Usage: scripts/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]   (default: 60 s each, every harness)
# Each harness starts from its checked-in seed corpus and regressions (tests/fuzz/corpus/NAME,
# tests/fuzz/regressions/NAME) plus what earlier runs found (build-address-undefined/corpus/NAME).
# An input that breaks an invariant is written to build-address-undefined/artifacts/ and the script
# exits non-zero; copy it to tests/fuzz/regressions/NAME/ once the bug is fixed, so the suite
# replays it for ever.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(ndk_program adversarial_peer ndk_bytes)

targets=""
for h in "${harnesses[@]}"; do targets+=" ndksim_fuzz_$h"; done
# The ASan+UBSan build (clang, with the harnesses): the one the suite runs under those sanitizers.
dir=$(NDKSIM_SANITIZE=address,undefined NDKSIM_TARGETS="$targets" scripts/build.sh | tail -n 1)

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
