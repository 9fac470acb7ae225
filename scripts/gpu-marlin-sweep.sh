#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/device"]): the marlin tuning sweep. Each
# tuning switch (QSERVE_MARLIN_*, docs/marlin.md) is first checked for correctness with the quick
# GPU test (4096x4096 and the odd shapes, every scheme, M 1..256), then timed on the Llama-3.1-8B
# shapes beside the default. A variant sets one or more variables, comma-separated
# (QSERVE_MARLIN_WGMMA_MIN=1,QSERVE_MARLIN_WGMMA_MAX=256); BUILD=NAME among them runs a measurement
# build that scripts/device-variant.sh added to the bundle (bench_kernels_NAME and
# cuda-tests/test_marlin_cuda_NAME) instead of the shipped one (BUILD=lastsums,QSERVE_MARLIN_STREAM=2).
# Output: $OUT/sweep.txt; one summary line per variant on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh out/device
M=${BENCH_M:-1,4,16,32,64,128,256}
K=${SWEEP_KERNELS:-marlin-fp8,marlin-nvfp4}
VARIANTS=${SWEEP_VARIANTS:-"default QSERVE_MARLIN_WARPS=8 QSERVE_MARLIN_WIDE=0"}
for v in $VARIANTS; do
  [ "$v" = default ] && v=QSERVE_MARLIN_DEFAULT=1
  take_var BUILD "$v"
  suffix=${taken:+_$taken} vars=${rest:-QSERVE_MARLIN_DEFAULT=1}
  {
    echo "=== marlin: $v"
    env ${vars//,/ } timeout 60 "$D/cuda-tests/test_marlin_cuda$suffix" --quick | grep -E "FAIL|passed"
    env ${vars//,/ } timeout 100 "$D/bench_kernels$suffix" --kernels "$K" --m "$M"
  } >>"$OUT/sweep.txt" 2>&1
  echo "$v: $(grep -A1 "=== marlin: $v" "$OUT/sweep.txt" | tail -1)"
done
