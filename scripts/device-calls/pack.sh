#!/usr/bin/env bash
# pack.sh — builds the one bundle the calls in this folder run (out/pack/bundle.tar.xz), here, on
# the development machine: the current commit with lead0.patch applied (the NVFP4 64-token
# rewrite-free kernel taking its zero lead at run time, so that the calls test it as the default),
# the test programs the calls run, and four measurement builds of marlin beside the default:
#   of  -DQS_MARLIN_STREAM_ONE_FULL=1   one full-barrier arrival a stage (session 23)
#   rs  -DQS_MARLIN_STREAM_RED_SUM=1    split groups summed by L2 reductions (session 24)
#   gv  -DQS_MARLIN_GEMV_EARLY_BATCHES=2  small-M: both weight batches before the wait (session 24)
#   g3  -DQS_MARLIN_GEMV_IN_FLIGHT=3      small-M: three batches in flight up to 8 tokens (session 24)
# lead0.patch is taken back out on exit, whatever happens. out/pack/BUILT_FROM names the commit.
# Then: run(command="bash scripts/device-calls/call1.sh", carry=["out/pack"], timeout_s=600), and
# call2.sh, call3.sh likewise (each script's header says what it asks and when to run it).
set -euo pipefail
cd "$(dirname "$0")/../.."
git diff --quiet -- cuda/marlin_stream.cu || { echo "pack.sh: cuda/marlin_stream.cu has changes; commit or stash them first" >&2; exit 1; }
git apply scripts/device-calls/lead0.patch
trap 'git checkout -- cuda/marlin_stream.cu' EXIT
TESTS="test_marlin_cuda test_linear_cuda test_read_probe_cuda" bash scripts/device-bundle.sh
TOOLS="bench_kernels cuda-tests/test_marlin_cuda" bash scripts/device-variant.sh of -DQS_MARLIN_STREAM_ONE_FULL=1
TOOLS="bench_kernels bench_decode cuda-tests/test_marlin_cuda cuda-tests/test_graph_cuda" \
  bash scripts/device-variant.sh rs -DQS_MARLIN_STREAM_RED_SUM=1
FILES=cuda/marlin_gemv.cu TOOLS="bench_kernels cuda-tests/test_marlin_cuda" bash scripts/device-variant.sh gv -DQS_MARLIN_GEMV_EARLY_BATCHES=2
FILES=cuda/marlin_gemv.cu TOOLS="bench_kernels cuda-tests/test_marlin_cuda" bash scripts/device-variant.sh g3 -DQS_MARLIN_GEMV_IN_FLIGHT=3
PACK_ONLY=1 bash scripts/device-bundle.sh
git rev-parse --short HEAD >out/pack/BUILT_FROM
echo "pack.sh: out/pack/bundle.tar.xz from $(cat out/pack/BUILT_FROM) + lead0.patch"
