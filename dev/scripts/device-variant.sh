#!/usr/bin/env bash
# Adds a measurement variant of the device build to the bundle: a copy of build-device/ (from
# scripts/device-bundle.sh, run first) with the named CUDA files rebuilt under extra nvcc flags,
# its tools copied into the bundle as TOOL_NAME, its rebuilt objects (and the base build's) into
# sass/NAME/ and sass/base/ for the loop check; each ~10-20 s to build here. The build is the lab's
# (DEV=1: bench_kernels, the QSERVE_MARLIN_* knobs), as scripts/device-bundle.sh makes it.
# Usage: dev/scripts/device-variant.sh NAME "EXTRA NVCC FLAGS"
#   FILES="cuda/marlin_stream.cu"  the CUDA files the flags change (default: the stream kernel)
#   TOOLS="bench_kernels"          the programs to copy (default: bench_kernels)
#   DEST=out/device                the bundle (default out/device)
# e.g. dev/scripts/device-variant.sh x1 -DQS_MY_IDEA=1  ->  out/device/bench_kernels_x1
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 2 ] || { echo "usage: $0 NAME \"EXTRA NVCC FLAGS\"" >&2; exit 2; }
name=$1 flags=$2
[[ "$name" =~ ^[A-Za-z0-9_]+$ ]] || { echo "$0: NAME must be letters, digits or _ (got '$name')" >&2; exit 2; }
base=${BUILD:-build-device-dev} dest=${DEST:-out/device} build=build-variant-$name
[ -d "$base" ] || { echo "$0: no $base/: run scripts/device-bundle.sh first" >&2; exit 1; }
[ -d "$dest" ] || { echo "$0: no bundle at $dest" >&2; exit 1; }
CUDA_ARCHS=${CUDA_ARCHS:-90a}
rm -rf "$build"
cp -a "$base" "$build"
# (cp -a keeps the base build's times: only what is removed here is rebuilt)
for f in ${FILES:-cuda/marlin_stream.cu}; do
  [ -f "$f" ] || { echo "$0: no file $f" >&2; exit 1; }
  rm -f "$build/${f%.cu}.o"
done
rm -f "$build/libqserve.a"
tools=${TOOLS:-bench_kernels}
targets=""
for t in $tools; do rm -f "$build/$t"; targets+=" $build/$t"; done
make -j2 DEV=1 BUILD="$build" CUDA_ARCHS="$CUDA_ARCHS" NVCC_EXTRA="$flags" $targets >/dev/null
for t in $tools; do cp "$build/$t" "$dest/${t}_$name"; done
# The rebuilt objects, and the base build's, for the stream loop's check on the GPU machine
# (dev/scripts/sass_loop_stats.py, run by gpu-marlin-sweep.sh before it times anything): a variant
# whose loop lost the uniform datapath is slower for that alone (docs/decisions.md).
for f in ${FILES:-cuda/marlin_stream.cu}; do
  obj=${f%.cu}.o
  mkdir -p "$dest/sass/$name" "$dest/sass/base"
  cp "$build/$obj" "$dest/sass/$name/"
  if [ -e "$base/$obj" ]; then cp "$base/$obj" "$dest/sass/base/"; fi
done
echo "$dest: $(for t in $tools; do printf '%s_%s ' "$t" "$name"; done)"
