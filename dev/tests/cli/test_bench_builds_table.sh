#!/usr/bin/env bash
# test_bench_builds_table.sh — dev/scripts/bench_builds_table.py on a made-up file of bench_kernels
# runs under "=== NAME round N" headers: rounds of one name merge (the fastest counts), names keep
# their order, a per-layer sum appears where all four Llama shapes are present, a missing cell
# prints "-", --kernels filters, and a file without runs is an error. Prints ok / not ok / skip.
set -u
SCRIPT=dev/scripts/bench_builds_table.py
names="fastest_round layer_sum missing_cell kernel_filter no_runs"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"
command -v python3 >/dev/null || skip_all "python3 is needed" $names

row() { echo "$1 $2 $3 $4 $5 1.0 1000 50% $5"; } # kernel N K M time
{
  for round in 1 2; do
    echo "=== shipped round $round"
    echo "kernel N K M time_us TFLOP/s weight_GB/s %copy eager_us"
    # round 1 slower on the first shape: the fastest round (2) must count
    row marlin-fp8 6144 4096 32 $([ $round = 1 ] && echo 12.0 || echo 10.0)
    row marlin-fp8 4096 4096 32 8.0
    row marlin-fp8 28672 4096 32 30.0
    row marlin-fp8 4096 14336 32 20.0
    row marlin-nvfp4 6144 4096 32 9.0
    echo "=== variant round $round"
    row marlin-fp8 6144 4096 32 9.5
    row marlin-fp8 4096 4096 32 7.5
    row marlin-fp8 28672 4096 32 29.0
    # (no 4096x14336 row: no layer sum for the variant, and a "-" cell)
  done
} >"$TMP/runs.txt"
out=$(python3 $SCRIPT "$TMP/runs.txt" 2>&1)
fp8=$(sed -n '/^marlin-fp8$/,/^$/p' <<<"$out")
grep -Eq '^6144x4096 +32 +10\.0 +9\.5$' <<<"$fp8" && head -2 <<<"$fp8" | tail -1 | grep -Eq 'shipped +variant'
check fastest_round $? "$fp8"
grep -Eq '^layer +32 +68\.0 +-$' <<<"$fp8"
check layer_sum $? "$fp8"
grep -Eq '^4096x14336 +32 +20\.0 +-$' <<<"$fp8"
check missing_cell $? "$fp8"
out=$(python3 $SCRIPT "$TMP/runs.txt" --kernels marlin-nvfp4 2>&1)
grep -q '^marlin-nvfp4$' <<<"$out" && ! grep -q '^marlin-fp8$' <<<"$out"
check kernel_filter $? "$out"
echo "nothing here" >"$TMP/empty.txt"
out=$(python3 $SCRIPT "$TMP/empty.txt" 2>&1)
rc=$?
[[ $rc != 0 && "$out" == *"no bench_kernels rows"* ]]
check no_runs $? "rc $rc: $out"
