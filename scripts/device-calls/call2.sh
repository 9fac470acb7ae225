#!/usr/bin/env bash
# Prepared in session 24: the second call, same bundle as call1.sh (which see). Two questions:
# 1. the ring probe (cuda/ring_probe.h) beside the plain read: can the stream kernel's transport
#    alone (bulk copies into a ring of 4 / 8 / 12 stages) stream a layer's bytes as the read does?
# 2. the small-M kernel at 1-16 tokens when the next call's CTAs can sit beside this one's: its
#    CTAs load their first batch of weights before waiting for the previous kernel (programmatic
#    dependent launch), but with every slot of the SM taken (4096x4096 at M = 1: 256 CTAs in 264
#    slots at two per SM) they can only start as this call's CTAs leave. Three per SM
#    (QSERVE_MARLIN_GEMV_OCC=3: 396 slots) or two strips a CTA (QSERVE_MARLIN_GEMV_STRIPS=2: 128
#    CTAs) leave room; both were measured in sessions 5-6, before the kernels had dependent launch.
#    With each, and alone, the gv build (-DQS_MARLIN_GEMV_EARLY_BATCHES=2: both weight batches
#    requested before the wait); and the g3 build (-DQS_MARLIN_GEMV_IN_FLIGHT=3: three batches in
#    flight per warp up to 8 tokens, against the latency Nsight found), alone and at three CTAs an SM.
# Run with: run(command="bash scripts/device-calls/call2.sh", carry=["out/pack"], timeout_s=600).
set -uo pipefail
. "$(dirname "$0")/unpack.sh"
timeout 90 "$D/bench_kernels" --kernels read,ring --m 1 >"$OUT/ring.txt" 2>&1
echo "== ring rc=$?"; tail -26 "$OUT/ring.txt"
SWEEP_ROUNDS=2 SWEEP_KERNELS=marlin-fp8-ordered,marlin-nvfp4-ordered BENCH_M=1,4,8,12,16 \
  SWEEP_VARIANTS="default QSERVE_MARLIN_GEMV_OCC=3 QSERVE_MARLIN_GEMV_STRIPS=2 BUILD=gv BUILD=gv,QSERVE_MARLIN_GEMV_OCC=3 BUILD=gv,QSERVE_MARLIN_GEMV_STRIPS=2 BUILD=g3 BUILD=g3,QSERVE_MARLIN_GEMV_OCC=3" \
  timeout 470 bash scripts/gpu-marlin-sweep.sh >"$OUT/gemv-sweep-summary.txt" 2>&1
echo "== gemv sweep rc=$?"; tail -40 "$OUT/gemv-sweep-summary.txt"
