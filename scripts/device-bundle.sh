#!/usr/bin/env bash
# Builds qserve with CUDA here and gathers what the GPU machine lacks into out/device/:
# the binaries, the GPU test programs, and the shared libraries the GPU machine does not have
# (libmicrohttpd, cJSON, libyaml, libunistring), found through rpath $ORIGIN/lib.
# Usage: scripts/device-bundle.sh   then run scripts/gpu-check.sh on the GPU machine with
# `carry: ["out/device"]`.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
make -j2 BUILD="$BUILD" all cuda-tests >/dev/null
dest=${DEST:-out/device}  # DEST=out/NAME keeps parallel bundles apart
rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/cuda-tests"
cp "$BUILD"/qserve "$dest/"
for t in "$BUILD"/cuda-tests/test_*; do
  case "$t" in *.d) continue;; esac
  cp "$t" "$dest/cuda-tests/"
done
for tool in convert-llama2c bench_serve bench_tokenizer qserve-eval bench_kernels; do
  [ -x "$BUILD/$tool" ] && cp "$BUILD/$tool" "$dest/"
done
# Libraries absent from the GPU machine (Ubuntu 24.04 without these -dev packages).
for lib in libmicrohttpd.so.12 libcjson.so.1 libyaml-0.so.2 libunistring.so.2; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] && cp -L "$path" "$dest/lib/"
done
# stories260K for the end-to-end checks (../shared does not travel to the GPU machine).
DATA=${QSERVE_SHARED_DATA:-../shared/data}/tinystories
if [ -d "$DATA" ]; then
  mkdir -p "$dest/data"
  cp "$DATA/stories260K.bin" "$DATA/tok512.bin" "$DATA/golden_greedy_200_ids.txt" "$DATA/golden_greedy_200.txt" "$dest/data/"
fi
# Test programs live one folder down: give them the same libraries.
ln -sfn ../lib "$dest/cuda-tests/lib"
du -sh "$dest"
