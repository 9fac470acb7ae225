#!/usr/bin/env bash
# test_device_scripts.sh — the GPU-bundle helpers that run here: scripts/device-bundle.sh with
# PACK_ONLY=1 packs an existing bundle (its folder at the archive's top, every file intact) and
# refuses a missing one; dev/scripts/device-variant.sh refuses a bad variant name and a missing base
# build, naming the culprit; dev/scripts/gpu-marlin-sweep.sh, run on a fake bundle (programs that print
# canned results), tests each variant once, times it every round, and prints the variants side by
# side, or with SWEEP_TESTS=0 times them without tests; a variant that fails its test is not
# timed; SWEEP_TESTS=stream runs the quick test with the stream kernel forced four ways, then the
# full test. Prints ok / not ok / skip.
set -u
names="pack_round_trip pack_missing_bundle variant_bad_name variant_missing_build sweep_rounds_table sweep_no_tests
       sweep_failed_not_timed sweep_stream_tests"
. "$(dirname "$0")/../../../tests/cli/check_lib.sh"

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

out=$(dev/scripts/device-variant.sh "a b" -DX=1 2>&1)
rc=$?
[[ $rc == 2 && "$out" == *"NAME must be letters, digits or _ (got 'a b')"* ]]
check variant_bad_name $? "rc $rc: $out"

out=$(BUILD="$TMP/no-build" dev/scripts/device-variant.sh v1 -DX=1 2>&1)
rc=$?
[[ $rc == 1 && "$out" == *"no $TMP/no-build/"* ]]
check variant_missing_build $? "rc $rc: $out"

# A fake bundle: each bench_kernels prints one row whose time grows with every call (8.5 in round
# 1, 9.5 in round 2: the table must keep the fastest round, not the last), each test a summary.
command -v python3 >/dev/null || skip_all "no python3" sweep_rounds_table sweep_no_tests sweep_failed_not_timed sweep_stream_tests
fake="$TMP/out/fake"
mkdir -p "$fake/cuda-tests" "$fake/lib"
for b in bench_kernels bench_kernels_v2; do
  cat >"$fake/$b" <<'FAKE'
#!/usr/bin/env bash
n=$(( $(cat "$0.calls" 2>/dev/null || echo 0) + 1 )); echo $n >"$0.calls"
echo "marlin-fp8-ordered       4096   4096    32       $(( 7 + n )).5     1.0   1000   50%   9.9"
FAKE
  chmod +x "$fake/$b"
done
for t in test_marlin_cuda test_marlin_cuda_v2; do
  printf '#!/usr/bin/env bash\necho "542 passed, 0 failed, 2 skipped"\n' >"$fake/cuda-tests/$t"
  chmod +x "$fake/cuda-tests/$t"
done
out=$(OUT="$TMP/sweep" DEST="$fake" SWEEP_ROUNDS=2 SWEEP_VARIANTS="default BUILD=v2,QSERVE_X=1" \
      dev/scripts/gpu-marlin-sweep.sh 2>&1)
rc=$?
tests=$(grep -c "542 passed" "$TMP/sweep/sweep.txt")
[[ $rc == 0 && $tests == 2 && "$out" == *"QSERVE_MARLIN_DEFAULT=1: 542 passed"* &&
   "$out" == *"BUILD=v2,QSERVE_X=1: 542 passed"* &&
   "$out" =~ 4096x4096\ +32\ +8\.5\ +8\.5 ]]
check sweep_rounds_table $? "rc $rc, tests run $tests: $out"

rm -f "$fake"/*.calls
out=$(OUT="$TMP/sweep0" DEST="$fake" SWEEP_TESTS=0 SWEEP_VARIANTS="default BUILD=v2" dev/scripts/gpu-marlin-sweep.sh 2>&1)
rc=$?
tests=$(grep -c "passed" "$TMP/sweep0/sweep.txt")
timed=$(grep -c "marlin-fp8-ordered" "$TMP/sweep0/sweep.txt")
[[ $rc == 0 && $tests == 0 && $timed == 2 && "$out" =~ 4096x4096\ +32\ +8\.5\ +8\.5 ]]
check sweep_no_tests $? "rc $rc, tests run $tests, timed $timed: $out"

# A build whose test fails (v3) is reported and left out of the timing; v2 is timed.
rm -f "$fake"/*.calls
cp "$fake/bench_kernels" "$fake/bench_kernels_v3"
printf '#!/usr/bin/env bash\necho "case x FAIL"\necho "541 passed, 1 failed, 2 skipped"\nexit 1\n' >"$fake/cuda-tests/test_marlin_cuda_v3"
chmod +x "$fake/cuda-tests/test_marlin_cuda_v3"
out=$(OUT="$TMP/sweep3" DEST="$fake" SWEEP_VARIANTS="BUILD=v3 BUILD=v2" dev/scripts/gpu-marlin-sweep.sh 2>&1)
rc=$?
[[ $rc == 0 && "$out" == *"BUILD=v3: failed its tests, not timed"* && ! -e "$fake/bench_kernels_v3.calls" &&
   -e "$fake/bench_kernels_v2.calls" ]] && grep -q "case x FAIL" "$TMP/sweep3/sweep.txt"
check sweep_failed_not_timed $? "rc $rc: $out"

# SWEEP_TESTS=stream: four quick runs with the stream kernel forced (each as the test saw its
# switches), then the full run, all under the variant's own switches.
cat >"$fake/cuda-tests/test_marlin_cuda_v2" <<'FAKE'
#!/usr/bin/env bash
echo "args [$*] stream ${QSERVE_MARLIN_STREAM:-} min ${QSERVE_MARLIN_STREAM_MIN:-} xp ${QSERVE_MARLIN_STREAM_XP:-} ctas ${QSERVE_MARLIN_STREAM_CTAS:-} x ${QSERVE_X:-}" >>"$0.log"
echo "542 passed, 0 failed, 2 skipped"
FAKE
chmod +x "$fake/cuda-tests/test_marlin_cuda_v2"
out=$(OUT="$TMP/sweep4" DEST="$fake" SWEEP_TESTS=stream SWEEP_VARIANTS="BUILD=v2,QSERVE_X=1" dev/scripts/gpu-marlin-sweep.sh 2>&1)
rc=$?
want="args [--quick] stream 2 min 1 xp  ctas  x 1
args [--quick] stream 2 min 1 xp 1 ctas  x 1
args [--quick] stream 2 min 1 xp 0 ctas  x 1
args [--quick] stream 2 min 1 xp  ctas 132 x 1
args [] stream  min  xp  ctas  x 1"
[[ $rc == 0 && "$(cat "$fake/cuda-tests/test_marlin_cuda_v2.log")" == "$want" ]]
check sweep_stream_tests $? "rc $rc: $(cat "$fake/cuda-tests/test_marlin_cuda_v2.log" 2>&1) / $out"
