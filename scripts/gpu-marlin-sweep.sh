#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/device"]): the marlin tuning sweep — the
# kernel's tuning switches (QSERVE_MARLIN_ROTATE / _WIDE / _WAVES, docs/marlin.md) one at a time
# against the default, for the Llama-3.1-8B shapes, beside cublaslt FP8 and torch's baselines of
# the same run. Output: $OUT/sweep.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
D=${DEST:-out/device}
OUT=${OUT:-/tmp/qserve-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
M=${BENCH_M:-1,4,16,32,64,128,256}
K=${SWEEP_KERNELS:-marlin-fp8,marlin-nvfp4}
{
  for v in "default" "QSERVE_MARLIN_ROTATE=0" "QSERVE_MARLIN_WIDE=0" "QSERVE_MARLIN_WAVES=2"; do
    echo "=== marlin: $v"
    if [ "$v" = default ]; then timeout 100 "$D/bench_kernels" --kernels "$K" --m "$M"
    else env "$v" timeout 100 "$D/bench_kernels" --kernels "$K" --m "$M"; fi
  done
} >"$OUT/sweep.txt" 2>&1
grep -E "^===|^device" "$OUT/sweep.txt"
