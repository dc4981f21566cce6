#!/usr/bin/env bash
# Sets up, builds and runs kiln's main job: greedy text generation with the
# stories260K checkpoint from ../shared/models.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec build/examples/kiln generate \
  --model ../shared/models/stories260K.bin --tokenizer ../shared/models/tok512.bin \
  --prompt "Once upon a time" --steps 256 --temperature 0 "$@"
