#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/device"]): the marlin tuning sweep. Each
# tuning switch (QSERVE_MARLIN_*, docs/marlin.md) is first checked for correctness with the quick
# GPU test (4096x4096 and the odd shapes, every scheme, M 1..256), then timed on the Llama-3.1-8B
# shapes beside the default. A variant sets one or more variables, comma-separated
# (QSERVE_MARLIN_WGMMA_MIN=1,QSERVE_MARLIN_WGMMA_MAX=256); BUILD=NAME among them runs a measurement
# build that dev/scripts/device-variant.sh added to the bundle (bench_kernels_NAME and
# cuda-tests/test_marlin_cuda_NAME) instead of the shipped one (BUILD=h3,QSERVE_MARLIN_STREAM=2).
# Where the bundle holds sass/ (device-variant.sh puts each build's rebuilt objects there), the
# stream loop of every one is reported first (dev/scripts/sass_loop_stats.py, $OUT/loops.txt): a build
# whose loop lost the uniform datapath (R2UR above 0) is slower for that alone (session 21).
#   SWEEP_ROUNDS=2  time every variant that many times, round after round (the table keeps each
#                   variant's fastest); the tests run once, before any timing, and a variant that
#                   fails them (or runs past their time limit) is not timed
#   SWEEP_TESTS=0   time only (measurement builds whose outputs are wrong by design, e.g. the
#                   hollow ones; run the tests that matter beside the sweep)
#   SWEEP_TESTS=stream  instead of the quick test as dispatched: the quick test with the stream
#                   kernel forced four ways (as dispatched, its rewrite-free path, its rewrite path,
#                   uneven shares on all 132 SMs), then the full test — what a build of the stream
#                   kernel must pass before it is timed
# Output: $OUT/sweep.txt, one summary line per variant on stdout, then the variants side by side
# (dev/scripts/bench_builds_table.py: per shape and M, and per decoder layer).
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu-env.sh out/device
M=${BENCH_M:-1,4,16,32,64,128,256}
K=${SWEEP_KERNELS:-marlin-fp8,marlin-nvfp4}
VARIANTS=${SWEEP_VARIANTS:-"default QSERVE_MARLIN_WARPS=8 QSERVE_MARLIN_WIDE=0"}
if [ -d "$D/sass" ] && command -v cuobjdump >/dev/null; then
  timeout 120 python3 dev/scripts/sass_loop_stats.py "$D"/sass/*/*.o >"$OUT/loops.txt" 2>&1
  echo "stream loops: $OUT/loops.txt"
  grep -E '^file|_stream_kernel<(false|true), 32, false>' "$OUT/loops.txt"
fi
# run_test LABEL VARS SECONDS PROGRAM ARGS...: the test under VARS (comma-separated) with a time
# limit, its summary line (and failures) into sweep.txt and on stdout; its status.
run_test() {
  local label=$1 vars=$2 limit=$3 rc
  shift 3
  env ${vars//,/ } timeout "$limit" "$@" >"$OUT/sweep-test.log" 2>&1
  rc=$?
  { grep FAIL "$OUT/sweep-test.log" | head -20; echo "$label: $(tail -1 "$OUT/sweep-test.log")"; } >>"$OUT/sweep.txt"
  echo "$label: $(tail -1 "$OUT/sweep-test.log")$([ $rc = 0 ] || echo " (rc $rc)")"
  return $rc
}
timed=""
for v in $VARIANTS; do
  [ "$v" = default ] && v=QSERVE_MARLIN_DEFAULT=1
  take_var BUILD "$v"
  vars=${rest:-QSERVE_MARLIN_DEFAULT=1} t="$D/cuda-tests/test_marlin_cuda${taken:+_$taken}"
  [ "${SWEEP_TESTS:-1}" = 0 ] && { timed+=" $v"; continue; }
  echo "=== marlin: $v round 1" >>"$OUT/sweep.txt"
  ok=1
  case "${SWEEP_TESTS:-1}" in
    stream)
      for forced in "" ,QSERVE_MARLIN_STREAM_XP=1 ,QSERVE_MARLIN_STREAM_XP=0 ,QSERVE_MARLIN_STREAM_CTAS=132; do
        f="$vars,QSERVE_MARLIN_STREAM=2,QSERVE_MARLIN_STREAM_MIN=1$forced"
        run_test "$v, stream forced${forced:+ ${forced#,}}" "$f" 60 "$t" --quick || { ok=0; break; }
      done
      [ $ok = 1 ] && { run_test "$v, full" "$vars" 200 "$t" || ok=0; } ;;
    *) run_test "$v" "$vars" 60 "$t" --quick || ok=0 ;;
  esac
  if [ $ok = 1 ]; then timed+=" $v"; else echo "$v: failed its tests, not timed"; fi
done
for round in $(seq 1 "${SWEEP_ROUNDS:-1}"); do
  for v in $timed; do
    take_var BUILD "$v"
    suffix=${taken:+_$taken} vars=${rest:-QSERVE_MARLIN_DEFAULT=1}
    {
      echo "=== marlin: $v round $round"
      env ${vars//,/ } timeout 100 "$D/bench_kernels$suffix" --kernels "$K" --m "$M"
    } >>"$OUT/sweep.txt" 2>&1
  done
done
python3 dev/scripts/bench_builds_table.py "$OUT/sweep.txt"
