#!/usr/bin/env bash
# call1.sh — the first device call (prepared in session 24; no device was lent in sessions 23-25).
# The bundle, out/pack/bundle.tar.xz from scripts/device-calls/pack.sh, is the commit in
# out/pack/BUILT_FROM + lead0.patch (kRunTimeZeroLead for the NVFP4 64-token rewrite-free kernel
# alone; cubin_text_diff: 1 DIFF, 27 same; its loop 341 here), with two measurement builds of the
# stream kernel added: of (-DQS_MARLIN_STREAM_ONE_FULL=1) and rs (-DQS_MARLIN_STREAM_RED_SUM=1),
# each with lead0 too.
# Run with: run(command="bash scripts/device-calls/call1.sh", carry=["out/pack"], timeout_s=600).
# Everything lands in $OUT; stdout keeps a summary. call2.sh (same bundle) has the probes that did
# not fit here; call3.sh the red sums end to end.
set -uo pipefail
. "$(dirname "$0")/unpack.sh"
# 1. the kernel table with torch in the same run (M 1-64), test_linear_cuda (its ordered NVFP4
#    case reaches the lead0 kernel) and the ring probe's test, stories260K end to end
GPU_TESTS="test_linear_cuda test_read_probe_cuda" BENCH_M=1,8,12,16,24,32,40,48,56,64 E2E_ONLY=stories \
  TEST_TIMEOUT=150 timeout 260 bash scripts/gpu-check.sh >"$OUT/check.txt" 2>&1
echo "== gpu-check rc=$?"; grep -E 'passed|FAIL|failed' "$OUT/check.txt" | head -20
# 2. the shipped build (with lead0: its landing test) and both measurement builds, each tested
#    with the stream kernel forced four ways and in full; those that pass are timed side by side
#    (ordered rows, where decode runs them)
SWEEP_TESTS=stream SWEEP_ROUNDS=2 SWEEP_KERNELS=marlin-fp8-ordered,marlin-nvfp4-ordered BENCH_M=16,32,48,64 \
  SWEEP_VARIANTS="default BUILD=rs BUILD=of" timeout 320 bash scripts/gpu-marlin-sweep.sh >"$OUT/sweep-summary.txt" 2>&1
echo "== sweep rc=$?"; tail -45 "$OUT/sweep-summary.txt"
