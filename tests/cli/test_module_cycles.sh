#!/usr/bin/env bash
# test_module_cycles.sh — no circles between the files of src/engine and src/server
# (scripts/module_cycles.py over the built objects and the include lines): prints the circle it
# finds, and checks the checker itself on a two-file circle it builds. Prints ok / not ok / skip.
set -u
BUILD=${QSERVE_BUILD:-build}
names="checker_finds_a_circle engine_and_server_have_no_circle"
. "$(dirname "$0")/check_lib.sh"
command -v nm >/dev/null || skip_all "no nm (binutils)" $names
[ -f "$BUILD/src/engine/engine.o" ] || skip_all "no objects under $BUILD (build first)" $names

mkdir -p "$TMP/src/demo"
printf '#include "demo/b.h"\n' >"$TMP/src/demo/a.h"
printf '#include "demo/a.h"\n' >"$TMP/src/demo/b.h"
out=$(cd "$TMP" && python3 "$OLDPWD/scripts/module_cycles.py" . src/demo 2>&1)
[[ $? -ne 0 && "$out" == *"circle: src/demo/a -> src/demo/b -> src/demo/a"* ]]
check checker_finds_a_circle $? "$out"

out=$(python3 scripts/module_cycles.py "$BUILD" src/engine src/server 2>&1)
check engine_and_server_have_no_circle $? "$out"
