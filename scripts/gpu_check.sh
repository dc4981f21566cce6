#!/usr/bin/env bash
# Runs on the GPU machine (see the developers' guide): the gpu-labelled tests,
# sharded over parallel processes, then `kiln generate --device cuda` against
# the golden text. Expects .devbundle/bundle.tar.gz (../shared/tools/device-bundle
# .devbundle build/tests/kiln_tests build/examples/kiln) and the test models in
# .devbundle/models. Usage: scripts/gpu_check.sh [gtest filter] (default Gpu*).
set -uo pipefail
out=${OUT:-/tmp/kiln-gpu-check}
mkdir -p "$out"
tar xzf .devbundle/bundle.tar.gz -C /tmp
# The tests find the models at the path they were built with (../shared).
# Without them the model tests fail on loading and the golden text is
# empty: say so first (carry .devbundle/models).
if [ ! -f .devbundle/models/stories260K.bin ]; then
  echo "gpu_check: .devbundle/models/stories260K.bin missing: carry .devbundle/models" >&2
  exit 2
fi
mkdir -p /work/shared && cp -r .devbundle/models /work/shared/
filter=${1:-Gpu*}
shards=${SHARDS:-8}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
start=$(date +%s)
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i /tmp/bundle/run kiln_tests \
    --gtest_filter="$filter" --gtest_brief=1 > "$out/shard$i.log" 2>&1 &
done
wait
echo "tests took $(( $(date +%s) - start )) s"
cat "$out"/shard*.log | grep -E "^\[  (PASSED|FAILED|SKIPPED) " | sort | uniq -c | sort -rn | head -40
cat "$out"/shard*.log | grep -E "tests? ran|PASSED  \]" | awk '{print}' | head -20
if [ "${GOLDEN:-1}" = 1 ]; then
  /tmp/bundle/run kiln generate --model /work/shared/models/stories260K.bin \
    --tokenizer /work/shared/models/tok512.bin --prompt "Once upon a time" --steps 64 \
    --temperature 0 --device cuda > "$out/golden.txt" 2> "$out/golden.err"
  if cmp -s "$out/golden.txt" /work/shared/models/stories260K.golden.txt; then
    echo "golden on cuda: MATCH"; else echo "golden on cuda: DIFFERENT"; cat "$out/golden.txt"; fi
  cat "$out/golden.err"
fi
