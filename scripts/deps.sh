#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages ndksim needs to build and test, if any are missing.
# Usage: scripts/deps.sh [clang|docs]   (clang: also clang and its runtime, for the ASan+UBSan build
# and the libFuzzer harnesses; docs: also doxygen, for the API reference)
set -euo pipefail

packages=(cmake ninja-build g++ pkg-config libgtest-dev libgmock-dev libbenchmark-dev libfmt-dev libcli11-dev
          nlohmann-json3-dev clang-tidy groff-base)
[ "${1:-}" = clang ] && packages+=(clang libclang-rt-14-dev)
[ "${1:-}" = docs ] && packages+=(doxygen)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ndksim: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
