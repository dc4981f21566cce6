#!/usr/bin/env bash
# Sets up, builds and runs kiln's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/examples/kiln demo
