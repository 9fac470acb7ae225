#!/usr/bin/env bash
# test_source_layers.sh — the folder structure the build relies on: the applications (APPS in the
# Makefile: cli, quantize, eval) stand above the library, so no library file includes an app
# header, libqserve.a holds no app object and each app archive holds its own; a program that
# includes no app header links the library alone; and the Jinja engine's files (src/jinja)
# include one another without a circle. Prints ok / not ok.
set -u
BUILD=${QSERVE_BUILD:-build}
. "$(dirname "$0")/check_lib.sh"

apps=$(sed -n 's/^APPS *:= *//p' Makefile)
[ -n "$apps" ]
check makefile_names_apps $? "no APPS line in the Makefile"
app_alt=$(tr ' ' '|' <<<"$apps")

# every #include of an app header from outside the app folders
leaks=$(grep -rnE "^#include \"($app_alt)/" src | grep -vE "^src/($app_alt)/")
[ -z "$leaks" ]
check library_includes_no_app $? "$(head -3 <<<"$leaks")"

lib=$BUILD/libqserve.a
if [ -f "$lib" ]; then
  in_lib=$(ar t "$lib")
  stray=""; missing=""
  for a in $apps; do
    for c in src/"$a"/*.c; do
      o=$(basename "$c" .c).o
      [ "$o" = main.o ] && continue
      grep -qx "$o" <<<"$in_lib" && stray+=" $a/$o"
      ar t "$BUILD/libqserve-$a.a" 2>/dev/null | grep -qx "$o" || missing+=" $a/$o"
    done
  done
  [ -z "$stray" ]
  check library_archive_has_no_app_object $? "in $lib:$stray"
  [ -z "$missing" ]
  check app_archives_hold_their_objects $? "not in their libqserve-APP.a:$missing"
else
  check library_archive_has_no_app_object 1 "$lib not built"
fi

# the link plan of a library-only test and of one that uses the quantize app
# (MAKEFLAGS and SANITIZE cleared: a parent `make SANITIZE=1 test` passes both down and would rename BUILD)
plan=$(MAKEFLAGS= make -n -B SANITIZE= NO_CUDA=1 BUILD="$TMP/p" "$TMP/p/tests/test_chat_template" "$TMP/p/tests/test_quant_roundtrip" 2>&1)
lib_only=$(grep -E -- "-o $TMP/p/tests/test_chat_template " <<<"$plan")
[[ -n "$lib_only" && "$lib_only" == *libqserve.a* && "$lib_only" != *libqserve-* ]]
check library_test_links_library_alone $? "$lib_only"
with_app=$(grep -E -- "-o $TMP/p/tests/test_quant_roundtrip " <<<"$plan")
[[ "$with_app" == *"libqserve-cli.a $TMP/p/libqserve-quantize.a $TMP/p/libqserve.a"* ]]
check app_test_links_its_apps_first $? "$with_app"

# the Jinja files' include graph (x.c and x.h are one node) has no cycle
cycle=$(python3 - <<'EOF'
import glob, os, re, sys
edges = {}
for path in glob.glob("src/jinja/*.[ch]"):
    node = os.path.splitext(os.path.basename(path))[0]
    for dep in re.findall(r'^#include "jinja/(\w+)\.h"', open(path).read(), re.M):
        if dep != node:
            edges.setdefault(node, set()).add(dep)
state = {}
def visit(n, path):
    if state.get(n) == "done":
        return None
    if state.get(n) == "open":
        return path[path.index(n):] + [n]
    state[n] = "open"
    for d in sorted(edges.get(n, ())):
        found = visit(d, path + [n])
        if found:
            return found
    state[n] = "done"
    return None
for n in sorted(edges):
    found = visit(n, [])
    if found:
        print(" -> ".join(found))
        break
EOF
)
[ -z "$cycle" ] && [ -f src/jinja/jinja_eval.h ]
check jinja_includes_have_no_cycle $? "$cycle"
