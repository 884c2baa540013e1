#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the property tests (tests/property_test.cc) over many seeds.
# Usage: scripts/property.sh [FIRST_SEED] [COUNT]   (default: seeds 1..1000)
# The suite itself runs a fixed 24 seeds; this is the long run. A failing seed is printed with
# what broke; rerun it alone with NDKSIM_PROPERTY_SEEDS=SEED:1.
set -euo pipefail
cd "$(dirname "$0")/.."
first="${1:-1}"
count="${2:-1000}"
dir=$(scripts/build.sh | tail -n 1)
NDKSIM_PROPERTY_SEEDS="$first:$count" "$dir/tests/ndksim_tests" --gtest_filter='Seeds/Properties.*' --gtest_brief=1
