#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds ndksim and runs the whole test suite. Set NDKSIM_SANITIZE=address,undefined or thread
# to run it under sanitizers (in a separate build directory).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(scripts/build.sh | tail -n 1)
exclude=()
if [ "${NDKSIM_SANITIZE:-}" = thread ]; then
  # ThreadSanitizer checks what threads share. The model's calibration and scale suites run one
  # thread for minutes of simulated time (three fifths of the suite's time under TSan) and so give
  # it nothing to check; they run in every other build, under ASan+UBSan too. So do the kernel
  # environment's crash reports (tests named ...IsReportedAsACrash): they throw out of a SIGSEGV
  # handler, which TSan's own signal handling does not allow, on one thread with nothing shared.
  exclude=(-E '^(Calibration|NicWideRate|[A-Za-z]+/QpScalability|TransportAtScale|Seeds/ReadStorms|PcieLinkDirection)\.|IsReportedAsACrash$')
fi
ctest --test-dir "$dir" --output-on-failure -j "${NDKSIM_JOBS:-$(nproc)}" "${exclude[@]}"
