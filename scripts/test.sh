#!/usr/bin/env bash
# Sets up, builds and runs the test suite (the `cpu` label: everything that
# needs no GPU), then builds the parsers' fuzz targets with clang's libFuzzer
# and runs each for a few seconds (tests/fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh clang libclang-rt-14-dev
scripts/build.sh
ctest --test-dir build -L cpu --output-on-failure --parallel "$(nproc)" --timeout 600
cmake -S tests/fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build build-fuzz --parallel "$(nproc)"
ctest --test-dir build-fuzz -L cpu --output-on-failure
