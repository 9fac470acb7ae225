#!/usr/bin/env bash
# test_lab_separation.sh — the lab (dev/) stays out of the product: the product build's plan (make
# -n) compiles nothing under dev/ and no -DQS_DEV_KNOBS, while `make DEV=1` (what `make dev` runs)
# adds the probes, bench_kernels and the knobs; a built product library holds no probe object and
# no lab switch's name (QSERVE_MARLIN_*, QSERVE_ATTN_GROUPED, QSERVE_ATTN_PREFILL, QSERVE_OPS_PDL:
# so it cannot read one), and a built dev library holds both. Prints ok / not ok / skip.
set -u
BUILD=${QSERVE_BUILD:-build}
names="product_plan_has_no_lab dev_plan_has_lab product_lib_has_no_lab dev_lib_has_lab"
. "$(dirname "$0")/check_lib.sh"
need_nvcc $names

product=$(make -n NVCC="$NVCC" BUILD="$TMP/p" CUDA_ARCHS=90a all cuda-tests 2>&1)
[[ "$product" == *"cuda/marlin_stream.cu"* && "$product" != *dev/* && "$product" != *QS_DEV_KNOBS* ]]
check product_plan_has_no_lab $? "$(grep -m3 -E 'dev/|QS_DEV_KNOBS|^make' <<<"$product")"

dev=$(make -n NVCC="$NVCC" DEV=1 BUILD="$TMP/d" CUDA_ARCHS=90a all cuda-tests 2>&1)
[[ "$dev" == *"dev/cuda/read_probe.cu"* && "$dev" == *"dev/cuda/ring_probe.cu"* &&
   "$dev" == *"dev/tools/bench_kernels.c"* && "$dev" == *"dev/tests/cuda/test_read_probe_cuda.c"* &&
   "$dev" == *"-DQS_DEV_KNOBS"* ]]
check dev_plan_has_lab $? "$(grep -m3 -E 'dev/|^make' <<<"$dev")"

# lib_has_lab LIB: 0 where the library holds a probe object or a knob's name, 1 where neither
lib_has_lab() {
  ar t "$1" | grep -qE '^(read|ring)_probe\.o$' && return 0
  grep -qaE 'QSERVE_MARLIN_|QSERVE_ATTN_GROUPED|QSERVE_ATTN_PREFILL|QSERVE_OPS_PDL' "$1"
}
lib=$BUILD/libqserve.a
if [ -f "$lib" ] && ar t "$lib" | grep -q '^marlin_stream\.o$'; then
  ! lib_has_lab "$lib"
  check product_lib_has_no_lab $? "$lib holds a probe or a lab switch's name"
else
  echo "skip product_lib_has_no_lab: $lib is not a CUDA build"
fi
dev_lib=${QSERVE_DEV_BUILD:-$BUILD-dev}/libqserve.a
if [ -f "$dev_lib" ] && ar t "$dev_lib" | grep -q '^marlin_stream\.o$'; then
  ar t "$dev_lib" | grep -q '^read_probe\.o$' && grep -qa 'QSERVE_MARLIN_STREAM' "$dev_lib" &&
    grep -qa 'QSERVE_ATTN_GROUPED' "$dev_lib" && grep -qa 'QSERVE_OPS_PDL' "$dev_lib"
  check dev_lib_has_lab $? "$dev_lib lacks the probes or the knobs"
else
  echo "skip dev_lib_has_lab: no CUDA dev build at $dev_lib (make dev)"
fi
