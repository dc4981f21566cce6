#!/usr/bin/env bash
# Regenerates tests/golden/kernels/*.cu from the code generator as built in
# build/ (scripts/build.sh first). Commit them with the change that alters
# them, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target kiln_tests
KILN_UPDATE_GOLDEN=1 build/tests/kiln_tests --gtest_filter='Cases/GoldenKernels.*' --gtest_brief=1
git status --short tests/golden/kernels
