#!/usr/bin/env bash
# test_module_cycles.sh — no circles anywhere in the tree: between the files of src/* and cuda/,
# and between the folders themselves (scripts/module_cycles.py over the built objects and the
# include lines; docs/developing.md "No circles"). Prints the circle it finds, and checks the
# checker itself on a two-file and a two-folder circle it builds. Prints ok / not ok / skip.
set -u
BUILD=${QSERVE_BUILD:-build}
names="checker_finds_a_circle checker_finds_a_folder_circle files_have_no_circle folders_have_no_circle"
. "$(dirname "$0")/check_lib.sh"
command -v nm >/dev/null || skip_all "no nm (binutils)" $names
[ -f "$BUILD/src/engine/engine.o" ] || skip_all "no objects under $BUILD (build first)" $names

mkdir -p "$TMP/src/demo"
printf '#include "demo/b.h"\n' >"$TMP/src/demo/a.h"
printf '#include "demo/a.h"\n' >"$TMP/src/demo/b.h"
out=$(cd "$TMP" && python3 "$OLDPWD/scripts/module_cycles.py" . src/demo 2>&1)
[[ $? -ne 0 && "$out" == *"circle: src/demo/a -> src/demo/b -> src/demo/a"* ]]
check checker_finds_a_circle $? "$out"

# Two folders whose files form no circle (up/a -> low/b, low/c -> up/d), but the folders do.
mkdir -p "$TMP/src/up" "$TMP/src/low"
printf '#include "low/b.h"\n' >"$TMP/src/up/a.h"
printf '\n' >"$TMP/src/low/b.h"
printf '#include "up/d.h"\n' >"$TMP/src/low/c.h"
printf '\n' >"$TMP/src/up/d.h"
files=$(cd "$TMP" && python3 "$OLDPWD/scripts/module_cycles.py" . src/up src/low 2>&1)
files_rc=$?
out=$(cd "$TMP" && python3 "$OLDPWD/scripts/module_cycles.py" --folders . src/up src/low 2>&1)
folders_rc=$?
[[ $files_rc -eq 0 && $folders_rc -ne 0 && "$out" == *"circle: src/low -> src/up -> src/low"* ]]
check checker_finds_a_folder_circle $? "files: $files; folders: $out"

folders=(src/*/ cuda)
folders=("${folders[@]%/}")
out=$(python3 scripts/module_cycles.py "$BUILD" "${folders[@]}" 2>&1)
check files_have_no_circle $? "$out"

out=$(python3 scripts/module_cycles.py --folders "$BUILD" "${folders[@]}" 2>&1)
check folders_have_no_circle $? "$out"
