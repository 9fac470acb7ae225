#!/usr/bin/env bash
# test_bench_prefix.sh — build/bench_prefix on a tiny init-model checkpoint on the CPU: the TTFT
# table shows the repeated prompt computing only what its cached full blocks leave, the lookup
# line a positive cost, and the replay table the cache on (hits) and off (none) over the same
# prompt tokens; bad flags are errors. Prints ok / not ok / skip.
set -u
BIN=${QSERVE_BIN:-build/qserve}
BUILD=${QSERVE_BUILD:-build}
TOOL=$BUILD/bench_prefix
names="ttft_table lookup_line replay_table bad_flag"
. "$(dirname "$0")/check_lib.sh"
[ -x "$TOOL" ] || skip_all "$TOOL is not built" $names
"$BIN" init-model "$TMP/m" --shape tiny-llama --seed 3 >/dev/null 2>&1 || { echo "not ok init: init-model failed"; exit 1; }

"$TOOL" "$TMP/m" --device cpu --shared 100 --suffix 8 --reps 1 --turns 3 --turn-tokens 20 --reply 6 --convs 2 \
  >"$TMP/out.md" 2>"$TMP/err.txt"
rc=$?
# 108-token prompt: 6 full blocks (96 tokens) of the shared 100 are cached, 12 tokens computed
[ $rc = 0 ] && grep -q '^| same prefix again, cache on | [0-9.]* | 12 (96 cached) |$' "$TMP/out.md" &&
  grep -q '^| same prefix again, cache off (cold) | [0-9.]* | 108 |$' "$TMP/out.md"
check ttft_table $? "rc $rc: $(head -c 600 "$TMP/out.md") $(tail -c 300 "$TMP/err.txt")"
grep -Eq '^prefix lookup \(hash 6 full blocks, find them all\): [0-9.]+ us per request' "$TMP/out.md"
check lookup_line $? "$(grep lookup "$TMP/out.md")"
# replay: turn t resends 20 t + 6 (t - 1) tokens; prompt tokens 2 x (20 + 46 + 72) = 276 both ways
on=$(grep '^| on |' "$TMP/out.md"); off=$(grep '^| off |' "$TMP/out.md")
echo "$on" | awk -F'|' '{exit !($4 + 0 == 276 && $5 + 0 > 0)}' && echo "$off" | awk -F'|' '{exit !($4 + 0 == 276 && $5 + 0 == 0)}'
check replay_table $? "on: $on off: $off"
"$TOOL" "$TMP/m" --shared 0 >/dev/null 2>"$TMP/bad.txt"
rc=$?; [ $rc = 2 ] && grep -q -- "--shared needs a positive integer" "$TMP/bad.txt"
check bad_flag $? "rc $rc: $(head -c 300 "$TMP/bad.txt")"
