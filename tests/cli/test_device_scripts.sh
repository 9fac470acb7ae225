#!/usr/bin/env bash
# test_device_scripts.sh — the GPU-bundle helpers that run here: scripts/device-bundle.sh with
# PACK_ONLY=1 packs an existing bundle (its folder at the archive's top, every file intact) and
# refuses a missing one; scripts/device-variant.sh refuses a bad variant name and a missing base
# build, naming the culprit. Prints ok / not ok / skip.
set -u
names="pack_round_trip pack_missing_bundle variant_bad_name variant_missing_build"
. "$(dirname "$0")/check_lib.sh"

mkdir -p "$TMP/out/bundle/lib"
head -c 100000 /dev/urandom >"$TMP/out/bundle/tool"
echo "library" >"$TMP/out/bundle/lib/libx.so"
out=$(DEST="$TMP/out/bundle" PACK_TO="$TMP/pack" PACK_ONLY=1 scripts/device-bundle.sh 2>&1)
rc=$?
mkdir -p "$TMP/x"
tar xJf "$TMP/pack/bundle.tar.xz" -C "$TMP/x" 2>/dev/null
cmp -s "$TMP/out/bundle/tool" "$TMP/x/bundle/tool" && cmp -s "$TMP/out/bundle/lib/libx.so" "$TMP/x/bundle/lib/libx.so"
check pack_round_trip $(( rc != 0 || $? != 0 )) "rc $rc: $out"

out=$(DEST="$TMP/out/none" PACK_TO="$TMP/pack2" PACK_ONLY=1 scripts/device-bundle.sh 2>&1)
rc=$?
[[ $rc != 0 && "$out" == *"no bundle at $TMP/out/none"* && ! -e "$TMP/pack2/bundle.tar.xz" ]]
check pack_missing_bundle $? "rc $rc: $out"

out=$(scripts/device-variant.sh "a b" -DX=1 2>&1)
rc=$?
[[ $rc == 2 && "$out" == *"NAME must be letters, digits or _ (got 'a b')"* ]]
check variant_bad_name $? "rc $rc: $out"

out=$(BUILD="$TMP/no-build" scripts/device-variant.sh v1 -DX=1 2>&1)
rc=$?
[[ $rc == 1 && "$out" == *"no $TMP/no-build/"* ]]
check variant_missing_build $? "rc $rc: $out"
