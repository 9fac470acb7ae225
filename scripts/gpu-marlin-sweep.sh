#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/device"]): the marlin tuning sweep. Each
# tuning switch (QSERVE_MARLIN_*, docs/marlin.md) is first checked for correctness with the quick
# GPU test (4096x4096 and the odd shapes, every scheme, M 1..256), then timed on the Llama-3.1-8B
# shapes beside the default. A variant sets one or more variables, comma-separated
# (QSERVE_MARLIN_WGMMA_MIN=1,QSERVE_MARLIN_WGMMA_MAX=256); BUILD=NAME among them runs a measurement
# build that scripts/device-variant.sh added to the bundle (bench_kernels_NAME and
# cuda-tests/test_marlin_cuda_NAME) instead of the shipped one (BUILD=h3,QSERVE_MARLIN_STREAM=2).
# Where the bundle holds sass/ (device-variant.sh puts each build's rebuilt objects there), the
# stream loop of every one is reported first (scripts/sass_loop_stats.py, $OUT/loops.txt): a build
# whose loop lost the uniform datapath (R2UR above 0) is slower for that alone (session 21).
#   SWEEP_ROUNDS=2  time every variant that many times, round after round (the table keeps each
#                   variant's fastest), the tests in the first round only
#   SWEEP_TESTS=0   time only (measurement builds whose outputs are wrong by design, e.g. the
#                   hollow ones; run the tests that matter beside the sweep)
# Output: $OUT/sweep.txt, one summary line per variant on stdout, then the variants side by side
# (scripts/bench_builds_table.py: per shape and M, and per decoder layer).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh out/device
M=${BENCH_M:-1,4,16,32,64,128,256}
K=${SWEEP_KERNELS:-marlin-fp8,marlin-nvfp4}
VARIANTS=${SWEEP_VARIANTS:-"default QSERVE_MARLIN_WARPS=8 QSERVE_MARLIN_WIDE=0"}
if [ -d "$D/sass" ] && command -v cuobjdump >/dev/null; then
  timeout 120 python3 scripts/sass_loop_stats.py "$D"/sass/*/*.o >"$OUT/loops.txt" 2>&1
  echo "stream loops: $OUT/loops.txt"
  grep -E '^file|_stream_kernel<(false|true), 32, false>' "$OUT/loops.txt"
fi
for round in $(seq 1 "${SWEEP_ROUNDS:-1}"); do
  for v in $VARIANTS; do
    [ "$v" = default ] && v=QSERVE_MARLIN_DEFAULT=1
    take_var BUILD "$v"
    suffix=${taken:+_$taken} vars=${rest:-QSERVE_MARLIN_DEFAULT=1}
    {
      echo "=== marlin: $v round $round"
      [ "$round" = 1 ] && [ "${SWEEP_TESTS:-1}" != 0 ] && env ${vars//,/ } timeout 60 "$D/cuda-tests/test_marlin_cuda$suffix" --quick | grep -E "FAIL|passed"
      env ${vars//,/ } timeout 100 "$D/bench_kernels$suffix" --kernels "$K" --m "$M"
    } >>"$OUT/sweep.txt" 2>&1
    [ "$round" = 1 ] && [ "${SWEEP_TESTS:-1}" != 0 ] && echo "$v: $(grep -A1 "=== marlin: $v round 1" "$OUT/sweep.txt" | tail -1)"
  done
done
python3 scripts/bench_builds_table.py "$OUT/sweep.txt"
