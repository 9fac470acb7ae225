#!/usr/bin/env bash
# test_cubin_text_diff.sh — dev/scripts/cubin_text_diff.py on cubins nvcc builds from two small
# files: a kernel left alone is "same" (also one in an anonymous namespace, whose mangled name
# carries a per-file hash), a changed one "DIFF", a kernel only one file has "only-in-A", the exit
# status says whether any differs, --match filters, and a file that is not a cubin is refused by
# name. Prints ok / not ok / skip.
set -u
names="same_and_diff match_filter not_a_cubin"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed" $names
need_nvcc $names

kernels() { # $1: the scale kernel's factor, $2: 1 to add a third kernel
  cat <<CU
extern "C" __global__ void kept(float *x) { x[threadIdx.x] += 1.f; }
extern "C" __global__ void scale(float *x) { x[threadIdx.x] *= $1; }
namespace { __global__ void hidden(float *x) { x[threadIdx.x] -= 2.f; } }
void *hidden_address() { return (void *)hidden; }
$([ "$2" = 1 ] && echo 'extern "C" __global__ void extra(float *x) { x[0] = 0.f; }')
CU
}
kernels 2.f 1 >"$TMP/a.cu"
kernels 3.f 0 >"$TMP/b_other_name.cu"
for f in a b_other_name; do
  "$NVCC" -cubin -O3 -gencode=arch=compute_90a,code=sm_90a "$TMP/$f.cu" -o "$TMP/$f.cubin" 2>"$TMP/nvcc.log" ||
    skip_all "nvcc could not build a cubin: $(head -c 200 "$TMP/nvcc.log")" $names
done

out=$(python3 dev/scripts/cubin_text_diff.py "$TMP/a.cubin" "$TMP/b_other_name.cubin" 2>&1)
rc=$?
[[ $rc == 1 && "$out" =~ same\ +[0-9]+\ +[0-9]+\ +kept && "$out" =~ DIFF\ +[0-9]+\ +[0-9]+\ +scale &&
   "$out" =~ only-in-A\ +[0-9]+\ +0\ +extra && "$out" =~ same\ +[0-9]+\ +[0-9]+\ +.*hidden &&
   "$out" == *"1 DIFF, 1 only-in-A, 2 same"* ]]
check same_and_diff $? "rc $rc: $out"

out=$(python3 dev/scripts/cubin_text_diff.py "$TMP/a.cubin" "$TMP/b_other_name.cubin" --match 'kept|hidden' 2>&1)
rc=$?
[[ $rc == 0 && "$out" == *"2 same"* && "$out" != *scale* ]]
check match_filter $? "rc $rc: $out"

out=$(python3 dev/scripts/cubin_text_diff.py "$TMP/a.cubin" "$TMP/a.cu" 2>&1)
rc=$?
[[ $rc == 2 && "$out" == *"$TMP/a.cu: not a 64-bit little-endian ELF file"* ]]
check not_a_cubin $? "rc $rc: $out"
