#!/usr/bin/env bash
# test_sass_loop_stats.sh — dev/scripts/sass_loop_stats.py on a cubin nvcc builds from a small kernel
# with a loop: the copy it hands CUDA 11.8's cuobjdump carries the old ELF ABI (OSABI, version,
# e_flags for sm_90) with the code untouched, and, where a cuobjdump is (on PATH, or
# out/sass-tools from dev/scripts/fetch-sass-tools.sh), the kernel's hot loop is found and counted, and
# --sass lists its instructions with the loop's marked; the local CUDA 11.8 cuobjdump gets the
# old-ABI copy also when it is the one on PATH.
# Prints ok / not ok / skip.
set -u
names="old_abi_header loop_counted sass_listing local_tool_on_path"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed" $names
need_nvcc $names

cat >"$TMP/loopy.cu" <<'CU'
extern "C" __global__ void loopy(float *x, int n)
{
    float a = x[threadIdx.x];
    for (int i = 0; i < n; i++)
        a = a * x[i] + 1.f;
    x[threadIdx.x] = a;
}
CU
"$NVCC" -cubin -O3 -gencode=arch=compute_90a,code=sm_90a "$TMP/loopy.cu" -o "$TMP/loopy.cubin" 2>"$TMP/nvcc.log" ||
  skip_all "nvcc could not build a cubin: $(head -c 200 "$TMP/nvcc.log")" $names

out=$(python3 - "$TMP/loopy.cubin" "$TMP" <<'PY' 2>&1
import os, struct, sys
sys.path.insert(0, 'dev/scripts')
from sass_loop_stats import old_abi_copy
os.makedirs(sys.argv[2] + '/old', exist_ok=True)
new = open(sys.argv[1], 'rb').read()
old = open(old_abi_copy(sys.argv[1], sys.argv[2] + '/old'), 'rb').read()
flags = struct.unpack_from('<I', old, 48)[0]
same_rest = old[:7] == new[:7] and old[9:48] == new[9:48] and old[52:] == new[52:]
print(f'new abi {new[8]} osabi {new[7]:#x}; old abi {old[8]} osabi {old[7]:#x} flags {flags:#x} rest {same_rest}')
again = old_abi_copy(sys.argv[2] + '/old/loopy.cubin', sys.argv[2])  # already old: returned as is
print('again', again == sys.argv[2] + '/old/loopy.cubin')
PY
)
[[ "$out" == *"new abi 8 osabi 0x41; old abi 7 osabi 0x33 flags 0x5a055a rest True"* && "$out" == *"again True"* ]]
check old_abi_header $? "$out"

if command -v cuobjdump >/dev/null || [ -x out/sass-tools/usr/bin/cuobjdump ]; then
  out=$(python3 dev/scripts/sass_loop_stats.py "$TMP/loopy.cubin" --match loopy --mark FFMA 2>&1)
  # file, kernel, instructions, loop, R2UR, U*, IMAD, LDL, STL
  [[ "$out" =~ loopy\.cubin\ +loopy\ +[0-9]+\ +[1-9][0-9]*\ +0\ +[0-9]+\ +[0-9]+\ +0\ +0 ]]
  check loop_counted $? "$out"
  out=$(python3 dev/scripts/sass_loop_stats.py "$TMP/loopy.cubin" --match loopy --mark FFMA --sass 2>&1)
  [[ "$out" == *"loopy.cubin: loopy"* ]] && grep -q '^> [0-9a-f]*  FFMA' <<<"$out" && grep -q '^  [0-9a-f]*  EXIT' <<<"$out"
  check sass_listing $? "$(head -c 600 <<<"$out")"
else
  for n in loop_counted sass_listing; do
    echo "skip $n: no cuobjdump on PATH and none in out/sass-tools (dev/scripts/fetch-sass-tools.sh)"
  done
fi
if [ -x out/sass-tools/usr/bin/cuobjdump ]; then
  out=$(PATH="$PWD/out/sass-tools/usr/bin:$PATH" python3 dev/scripts/sass_loop_stats.py "$TMP/loopy.cubin" --match loopy \
        --mark FFMA 2>&1)
  [[ "$out" =~ loopy\.cubin\ +loopy\ +[0-9]+\ +[1-9][0-9]* ]]
  check local_tool_on_path $? "$out"
else
  echo "skip local_tool_on_path: no cuobjdump in out/sass-tools (dev/scripts/fetch-sass-tools.sh)"
fi
