#!/usr/bin/env bash
# Prepared in session 24: the third call, worth running only if the red-sum build (rs)
# passed its tests there and was faster per decoder layer. Same bundle. End to end: bench_decode
# on random-init Llama-3.1-8B FP8 and NVFP4 checkpoints, the shipped build against rs, two rounds
# in alternation (scripts/gpu-decode-ab.sh); and test_graph_cuda under rs, whose replays must match
# eager runs bit for bit (red sums are not reproducible run to run: this shows whether its cases
# reach split groups at all). First, red sums with uneven shares on all 132 SMs, which session 19
# measured slower with the partial-sum protocol (call.sh tested rs with them forced).
# Run with: run(command="bash scripts/device-calls/call3.sh", carry=["out/pack"], timeout_s=600).
set -uo pipefail
. "$(dirname "$0")/unpack.sh"
OUT_SWEEP="$OUT/rs132"; mkdir -p "$OUT_SWEEP"
OUT="$OUT_SWEEP" SWEEP_TESTS=0 SWEEP_ROUNDS=2 SWEEP_KERNELS=marlin-fp8-ordered,marlin-nvfp4-ordered BENCH_M=16,32,48,64 \
  SWEEP_VARIANTS="BUILD=rs BUILD=rs,QSERVE_MARLIN_STREAM_CTAS=132" timeout 100 bash scripts/gpu-marlin-sweep.sh 2>&1 | tail -25
timeout 120 "$D/cuda-tests/test_graph_cuda_rs" >"$OUT/test-rs-graph.txt" 2>&1
echo "== test_graph_cuda_rs: $(tail -1 "$OUT/test-rs-graph.txt")"; grep FAIL "$OUT/test-rs-graph.txt" | head -5
mkdir -p out/device-rs && cp "$D/bench_decode_rs" out/device-rs/bench_decode
DECODE_CKPTS="fp8 nvfp4" DECODE_VARIANTS="shipped=marlin rs=marlin:BIN=out/device-rs" DECODE_BATCHES=1,16,32,64 \
  DECODE_ROUNDS=2 timeout 360 bash scripts/gpu-decode-ab.sh 2>&1 | tail -20
