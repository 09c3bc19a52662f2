#!/usr/bin/env bash
# Builds hoop and runs the whole test suite: set-up, configure, build, ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build
cmake --build build -j2
cd build
ctest --output-on-failure
