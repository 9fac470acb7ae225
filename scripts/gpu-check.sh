#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool, after scripts/device-bundle.sh here, with
# carry ["out/device"]): device facts, every GPU test, and end-to-end checks when the models are
# there. Writes logs under $OUT and ends with one summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEST:-out/device}
OUT=${OUT:-/tmp/qserve-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
passed=0; failed=0; skipped=0
for t in "$D"/cuda-tests/test_*; do
  name=$(basename "$t")
  # GPU_TESTS="test_a test_b" runs only those
  if [ -n "${GPU_TESTS:-}" ] && [[ " $GPU_TESTS " != *" $name "* ]]; then continue; fi
  "$t" >"$OUT/$name.log" 2>&1; rc=$?
  tail -n 1 "$OUT/$name.log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$OUT/$name.log" | tail -1)
  p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1})); skipped=$((skipped + ${s:-0}))
  [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ] && failed=$((failed + 1))
  grep -E 'FAIL|error' "$OUT/$name.log" | head -20
done
if [ -x scripts/gpu-e2e.sh ]; then scripts/gpu-e2e.sh "$OUT"; fi
echo "gpu: $passed passed, $failed failed, $skipped skipped"
