#!/usr/bin/env bash
# test_bench_decode.sh — build/bench_decode on a tiny init-model checkpoint on the CPU: one line per
# batch size with a positive step time and tok/s that agree; QSERVE_ACT_ORDER=0 runs too; bad
# flags and a missing model are errors that name the culprit. Prints ok / not ok / skip.
set -u
BIN=${QSERVE_BIN:-build/qserve}
BUILD=${QSERVE_BUILD:-build}
TOOL=$BUILD/bench_decode
names="batches natural_order bad_batch unknown_flag missing_model"
. "$(dirname "$0")/check_lib.sh"
[ -x "$TOOL" ] || skip_all "$TOOL is not built" $names
"$BIN" init-model "$TMP/m" --shape tiny-llama --seed 3 >/dev/null 2>&1 || { echo "not ok init: init-model failed"; exit 1; }

# "batch    B:   T ms/step   R tok/s  (...)" for B = 1 and 3, with R = B * 1000 / T (to print precision)
lines_ok() {
  python3 - "$1" <<'PY'
import re, sys
rows = [re.match(r"batch\s+(\d+):\s+([0-9.]+) ms/step\s+([0-9.]+) tok/s", l) for l in open(sys.argv[1])]
rows = [r for r in rows if r]
ok = [int(r.group(1)) for r in rows] == [1, 3] and all(
    float(r.group(2)) > 0 and abs(float(r.group(3)) - int(r.group(1)) * 1e3 / float(r.group(2))) <= 0.01 * float(r.group(3)) + 0.2
    for r in rows)
sys.exit(0 if ok else 1)
PY
}
"$TOOL" "$TMP/m" --device cpu --batches 1,3 --prompt 6 --steps 5 >"$TMP/out.txt" 2>"$TMP/err.txt" && lines_ok "$TMP/out.txt"
check batches $? "$(head -c 300 "$TMP/out.txt") $(tail -c 300 "$TMP/err.txt")"
QSERVE_ACT_ORDER=0 "$TOOL" "$TMP/m" --device cpu --batches 1,3 --prompt 6 --steps 5 >"$TMP/nat.txt" 2>"$TMP/err.txt" &&
  lines_ok "$TMP/nat.txt" && grep -q "QSERVE_ACT_ORDER=0" "$TMP/err.txt"
check natural_order $? "$(tail -c 300 "$TMP/err.txt")"

"$TOOL" "$TMP/m" --device cpu --batches 2,0 >/dev/null 2>"$TMP/e1.txt"
rc=$?; [ $rc = 2 ] && grep -q -- "--batches" "$TMP/e1.txt"
check bad_batch $? "rc $rc: $(head -c 200 "$TMP/e1.txt")"
"$TOOL" "$TMP/m" --device cpu --bogus >/dev/null 2>"$TMP/e2.txt"
rc=$?; [ $rc = 2 ] && grep -q -- "--bogus" "$TMP/e2.txt"
check unknown_flag $? "rc $rc: $(head -c 200 "$TMP/e2.txt")"
"$TOOL" "$TMP/none" --device cpu >/dev/null 2>"$TMP/e3.txt"
rc=$?; [ $rc = 1 ] && grep -q "none" "$TMP/e3.txt"
check missing_model $? "rc $rc: $(head -c 200 "$TMP/e3.txt")"
