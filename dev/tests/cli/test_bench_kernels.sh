#!/usr/bin/env bash
# test_bench_kernels.sh — build-dev/bench_kernels' flags, checked before it looks for a GPU (so here on
# the CPU): --kernels takes whole names (and the read and ring probes' row names), and an unknown one
# ("marlin-fp", a prefix of real names) is an error that names it and lists the valid ones; an
# unknown flag prints the usage. Prints ok /
# not ok / skip.
set -u
BUILD=${QSERVE_BUILD:-build}
TOOL=${QSERVE_DEV_BUILD:-$BUILD-dev}/bench_kernels # the lab's tool: `make dev` builds it
names="unknown_kernel read_rows ring_rows unknown_flag"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"
[ -x "$TOOL" ] || skip_all "$TOOL is not built (make dev builds it, with CUDA only)" $names
# a build without nvcc (NO_CUDA=1) links bench_kernels' stub, which only says so
"$TOOL" --help 2>&1 | grep -q "this build has no CUDA" && skip_all "$TOOL was built without CUDA" $names

"$TOOL" --kernels marlin-fp8,marlin-fp >/dev/null 2>"$TMP/e1.txt"
rc=$?; [ $rc = 2 ] && grep -q "unknown kernel 'marlin-fp'" "$TMP/e1.txt" && grep -q "marlin-fp8-ordered" "$TMP/e1.txt"
check unknown_kernel $? "rc $rc: $(head -c 300 "$TMP/e1.txt")"
# the read rows' own names pass the check (the run then stops at "no CUDA device", or runs on a GPU)
"$TOOL" --kernels read-fp8-bytes,read-nvfp4-bytes,marlin-fp8 --m 1 --iters 1 >/dev/null 2>"$TMP/e3.txt"
! grep -q "unknown kernel" "$TMP/e3.txt"
check read_rows $? "$(head -c 300 "$TMP/e3.txt")"
"$TOOL" --kernels ring,ring4-fp8-bytes,ring8-fp8-bytes,ring12-fp8-bytes,ring8-allsms-fp8-bytes,ring4-shared-fp8-bytes \
  --m 1 --iters 1 \
  >/dev/null 2>"$TMP/e4.txt"
! grep -q "unknown kernel" "$TMP/e4.txt"
check ring_rows $? "$(head -c 300 "$TMP/e4.txt")"
"$TOOL" --bogus >/dev/null 2>"$TMP/e2.txt"
rc=$?; [ $rc = 2 ] && grep -q "usage: bench_kernels" "$TMP/e2.txt"
check unknown_flag $? "rc $rc: $(head -c 300 "$TMP/e2.txt")"
