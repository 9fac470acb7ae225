#!/usr/bin/env bash
# test_include_rules.sh — the Makefile's include rules are build errors: in a copy of the tree, a
# file added to src/cpu that includes model/ (a layer above the backends) fails to compile, as does
# one added to src/core that includes cpu/ (a backend) and, where nvcc is found, one added to cuda/
# that includes engine/; the same folders' files that include only core/, util/ and their own
# folder compile. Prints ok / not ok / skip.
set -u
names="cpu_includes_core_util_cpu cpu_include_of_model_fails core_include_of_cpu_fails cuda_includes_core_util
cuda_include_of_engine_fails"
. "$(dirname "$0")/check_lib.sh"

cp -r Makefile src cuda "$TMP/"
tree=$TMP
# compile_one FILE: builds FILE's object in the copy (CPU only for .c), output in $TMP/out.log
compile_one() {
  local obj=b/${1%.*}.o
  # (MAKEFLAGS and SANITIZE cleared: a parent `make SANITIZE=1 test` passes both down and would rename BUILD)
  MAKEFLAGS= make -s -C "$tree" SANITIZE= NO_CUDA="${NO_CUDA_FOR:-1}" ${NVCC:+NVCC="$NVCC"} CUDA_ARCHS=90a BUILD=b "$obj" >"$TMP/out.log" 2>&1
}

cat >"$tree/src/cpu/zz_good_include.c" <<'EOF'
#include "core/tensor.h"
#include "cpu/backend_cpu.h"
#include "util/error.h"
const qs_backend *zz_good(void) { return &qs_backend_cpu; }
EOF
compile_one src/cpu/zz_good_include.c
check cpu_includes_core_util_cpu $? "$(head -5 "$TMP/out.log")"

cat >"$tree/src/cpu/zz_bad_include.c" <<'EOF'
#include "model/model.h"
int zz_bad(void) { return 0; }
EOF
compile_one src/cpu/zz_bad_include.c
rc=$?
[ $rc -ne 0 ] && grep -q 'model/model.h: No such file' "$TMP/out.log"
check cpu_include_of_model_fails $? "rc $rc: $(head -5 "$TMP/out.log")"

cat >"$tree/src/core/zz_bad_include.c" <<'EOF'
#include "cpu/backend_cpu.h"
int zz_bad_core(void) { return 0; }
EOF
compile_one src/core/zz_bad_include.c
rc=$?
[ $rc -ne 0 ] && grep -q 'cpu/backend_cpu.h: No such file' "$TMP/out.log"
check core_include_of_cpu_fails $? "rc $rc: $(head -5 "$TMP/out.log")"

NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  echo "skip cuda_includes_core_util: no nvcc (the CUDA toolkit)"
  echo "skip cuda_include_of_engine_fails: no nvcc (the CUDA toolkit)"
  exit 0
fi
NO_CUDA_FOR=0
cat >"$tree/cuda/zz_good_include.cu" <<'EOF'
#include "core/kv_layout.h"
#include "cuda_check.h"
#include "util/error.h"
__global__ void zz_good_kernel(int *x) { x[0] = QS_KV_BLOCK_SIZE; }
EOF
compile_one cuda/zz_good_include.cu
check cuda_includes_core_util $? "$(head -5 "$TMP/out.log")"

cat >"$tree/cuda/zz_bad_include.cu" <<'EOF'
#include "engine/scheduler.h"
__global__ void zz_bad_kernel(int *x) { x[0] = QS_KV_BLOCK_SIZE; }
EOF
compile_one cuda/zz_bad_include.cu
rc=$?
[ $rc -ne 0 ] && grep -q 'engine/scheduler.h' "$TMP/out.log" && grep -qi 'no such file' "$TMP/out.log"
check cuda_include_of_engine_fails $? "rc $rc: $(head -5 "$TMP/out.log")"
