#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool, after scripts/device-bundle.sh here, with
# carry ["out/device"]): device facts, every GPU test, the kernel benchmarks (ours and torch's,
# same run), and the end-to-end checks and figures (gpu-e2e.sh). Each step has a time limit so a
# hung kernel cannot eat the call; logs land in $OUT (few files: the device tool returns at most
# 8) and the run ends with one summary line.
#   GPU_TESTS="test_a test_b"  only those tests     GPU_BENCH=0  skip the kernel benchmarks
#   BENCH_M=1,4,16,64          M of the benchmarks   E2E_ONLY=... see gpu_e2e.py
#   TEST_ARGS_<test>=...       arguments for one test (TEST_ARGS_test_marlin_cuda=--quick)
#   GPU_FORCED="VAR=v,VAR=v ..."  the tuning-switch sets test_marlin_cuda --quick also runs under
#                              (default: the stream kernel forced, also with its rewrite-free path
#                              — the quick shapes reach that path no other way — and the wgmma
#                              kernel forced; "" none; a bundle of the dev build only: the
#                              product reads no QSERVE_MARLIN_* knob)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh out/device
export E2E_T0=$(date +%s)
LOG="$OUT/tests.log"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | tee "$LOG"
passed=0; failed=0; skipped=0
# run_test LABEL [VAR=v,VAR=v] PROGRAM ARGS...: one GPU test program (under environment variables
# given comma-separated, "" for none), its log appended to $LOG, its counts added to the totals.
run_test() {
  local label=$1 vars=$2; shift 2
  echo "=== $label" >>"$LOG"
  local s=$(date +%s) rc
  env ${vars//,/ } timeout "${TEST_TIMEOUT:-240}" "$@" >/tmp/gpu-test.log 2>&1; rc=$?
  cat /tmp/gpu-test.log >>"$LOG"
  echo "$label: rc $rc, $(( $(date +%s) - s )) s, $(tail -n 1 /tmp/gpu-test.log)"
  local line p f sk
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' /tmp/gpu-test.log | tail -1)
  p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  sk=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-1})); skipped=$((skipped + ${sk:-0}))
  [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ] && failed=$((failed + 1))
  grep -E 'FAIL|error' /tmp/gpu-test.log | head -12
}
for t in "$D"/cuda-tests/test_*; do
  name=$(basename "$t")
  if [ -n "${GPU_TESTS:-}" ] && [[ " $GPU_TESTS " != *" $name "* ]]; then continue; fi
  args_var="TEST_ARGS_$name"  # e.g. TEST_ARGS_test_marlin_cuda=--quick
  run_test "$name" "" "$t" ${!args_var:-}
done
# The default run reaches the Hopper marlin kernels only where the dispatch rule takes them: each
# is also forced for every M it can take (the quick shapes: 4096x4096 and the odd ones).
t="$D/cuda-tests/test_marlin_cuda"
if [ -x "$t" ] && [ ! -f "$D/DEV" ]; then
  echo "forced marlin runs: skipped (the bundle is the product build: scripts/device-bundle.sh DEV=0)"
elif [ -x "$t" ] && { [ -z "${GPU_TESTS:-}" ] || [[ " $GPU_TESTS " == *" test_marlin_cuda "* ]]; }; then
  for v in ${GPU_FORCED-QSERVE_MARLIN_STREAM=2,QSERVE_MARLIN_STREAM_MIN=1 QSERVE_MARLIN_STREAM=2,QSERVE_MARLIN_STREAM_MIN=1,QSERVE_MARLIN_STREAM_XP=1 QSERVE_MARLIN_WGMMA=2,QSERVE_MARLIN_WGMMA_MIN=1,QSERVE_MARLIN_WGMMA_MAX=256}; do
    run_test "test_marlin_cuda --quick $v" "$v" "$t" --quick
  done
fi
if [ "${GPU_BENCH:-1}" = 1 ] && [ ! -x "$D/bench_kernels" ]; then
  echo "benchmarks: skipped (bench_kernels is the lab's: a bundle of the dev build has it)"
elif [ "${GPU_BENCH:-1}" = 1 ]; then
  M=${BENCH_M:-1,4,16,32,64,128,256}
  { timeout 150 "$D/bench_kernels" --m "$M"; echo "--- torch (same run)"; timeout 120 python3 dev/scripts/bench_torch_kernels.py "$M"; } \
    >"$OUT/bench.txt" 2>&1
  echo "benchmarks: $OUT/bench.txt ($(wc -l <"$OUT/bench.txt") lines)"
fi
if [ -x scripts/gpu-e2e.sh ]; then scripts/gpu-e2e.sh "$OUT"; fi
echo "gpu: $passed passed, $failed failed, $skipped skipped"
