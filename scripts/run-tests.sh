#!/usr/bin/env bash
# Runs every test suite and prints one summary line over all of them: "N passed, N failed, N skipped".
#  - cmocka suites: $BUILD/tests/test_* (their "[  PASSED  ] N test(s)." lines are counted)
#  - shell suites:  tests/cli/test_*.sh, and the lab's scripts' (dev/tests/cli/test_*.sh), each
#                   printing "ok NAME" / "not ok NAME" / "skip NAME: why"
# Tests run from the repository root; data comes from ../shared/data (or $QSERVE_SHARED_DATA).
# TEST_FILTER=substring runs only the suites whose name contains it.
set -u
BUILD=${BUILD:-build}
export QSERVE_BIN="$PWD/$BUILD/qserve"
export QSERVE_BUILD="$PWD/$BUILD"
passed=0; failed=0; skipped=0; failed_suites=()
log_dir="$BUILD/test-logs"; mkdir -p "$log_dir"

count() { # file pattern -> sum of the first number on matching lines
  grep -E "$2" "$1" | sed -E 's/[^0-9]*([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}'
}

for t in "$BUILD"/tests/test_* tests/cli/test_*.sh dev/tests/cli/test_*.sh; do
  [ -e "$t" ] || continue
  case "$t" in *.d|*.o) continue;; esac
  name=$(basename "$t")
  if [ -n "${TEST_FILTER:-}" ] && [[ "$name" != *"$TEST_FILTER"* ]]; then continue; fi
  log="$log_dir/$name.log"
  start=$(date +%s)
  if [[ "$t" == *.sh ]]; then bash "$t" >"$log" 2>&1; rc=$?
    p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log"); s=$(grep -c '^skip ' "$log")
  else "$t" >"$log" 2>&1; rc=$?
    p=$(count "$log" '^\[  PASSED  \] [0-9]+ test'); f=$(count "$log" '^\[  FAILED  \] [0-9]+ test')
    s=$(count "$log" '^\[  SKIPPED \] [0-9]+ test')
  fi
  # A suite that crashed or exited non-zero without reporting a failure still counts as one.
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  printf '%-34s %4d passed %3d failed %3d skipped  (%ss)\n' "$name" "$p" "$f" "$s" "$(( $(date +%s) - start ))"
  if [ "$f" -gt 0 ]; then failed_suites+=("$name"); grep -E 'FAILED|not ok|ERROR|error|Assert|runtime error|Sanitizer' "$log" | head -20 | sed 's/^/    /'; fi
  grep -E '^skip |SKIPPED.*:|^\[  SKIPPED \] [a-z]' "$log" | head -5 | sed 's/^/    /'
done
[ ${#failed_suites[@]} -gt 0 ] && echo "failed suites: ${failed_suites[*]} (logs in $log_dir)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
