#!/usr/bin/env bash
# Sets up, builds and runs the test suite (the `cpu` label: everything that
# needs no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build -L cpu --output-on-failure --parallel "$(nproc)" --timeout 600
