#!/usr/bin/env bash
# Runs on the GPU machine in one device call (~6-8 minutes; every step under `timeout` and a
# deadline, DEADLINE_S=540 from the start): where the decode step's time goes and what the MoE
# model reaches. Bundle: `TOOLS="qserve bench_decode bench_serve" TESTS="test_moe_cuda" PACK=1
# scripts/device-bundle.sh` here, then
#   run(command="bash dev/scripts/gpu-step-moe.sh", carry=["out/pack"], timeout_s=600)
# (the script unpacks out/pack/bundle.tar.xz itself; an unpacked out/device carried as is works too).
# Steps, in STEPS' order (default "test profile moe"; SANITIZE=1 appends "sanitize"):
#   test      $D/cuda-tests/test_ops_cuda and test_moe_cuda (full; each skipped where the bundle lacks it)
#   sanitize  compute-sanitizer --tool memcheck test_moe_cuda --quick
#   profile   Llama-3.1-8B shape, FP8 fp8-dynamic (the form of the 8B figures in docs/README.md),
#             marlin: decode step time with graph replays at batch 1/16/64/256 and eager at 1/16
#             (bench_decode), the per-kernel GPU time of one eager step at batch 1 and 16 (Nsight
#             Compute, dev/scripts/ncu_step_summary.py): kernel sum against step time = the gaps
#   moe       (with $D/bench_decode_base in the bundle: the first backend also from that baseline
#             build, same checkpoints, same call)
#             Qwen3-30B-A3B shape cut to MOE_LAYERS layers (scripts/init_model_cut.py), FP8
#             fp8-block and NVFP4 nvfp4-w4a16: bench_decode at 1/16/64/256 with --moe-backend
#             marlin and emulation (same call), beside the roofline of bytes read per step
#             (dev/scripts/decode_roofline.py, the copy bandwidth of the same call); the prefill of a
#             2048-token prompt as the GPU time of its kernels (ncu) and as TTFT through the server
#   detail    ncu sections (SpeedOfLight, Occupancy, LaunchStats, WarpStateStats) of the MoE
#             layer's kernels in one decode step at DETAIL_BATCHES (1 16), first MoE checkpoint
# The checkpoints are made in the background from the start (init-model / init_model_cut.py, then
# quantize, the quantizes of one model in parallel), while the tests run.
# Results: $OUT/summary.txt (printed as it grows; a table of the figures at the end) and $OUT/logs.tar.gz (every log, the ncu
# CSVs gzipped), repacked after every step so a call cut short still brings back what ran.
# Knobs: STEPS, SANITIZE=1, DEADLINE_S (540), MOE_LAYERS (8; 48 = the whole model, ~110 GB of
#   checkpoints: too much for this machine's tmpfs and disk together with anything else),
#   PROFILE_BATCHES (1,16,64,256), PROFILE_NCU_BATCHES (1,16), MOE_BATCHES (1,16,64,256),
#   MOE_BACKENDS ("marlin emulation"), MOE_CKPTS ("fp8-block nvfp4-w4a16"), DECODE_STEPS (64),
#   MOE_STEPS (32), PREFILL_PROMPT (2048: the prompt of the TTFT and of the MoE ncu run), MOE_TTFT
#   (fp8-block: checkpoints whose TTFT the server measures, "" none), MOE_NCU (fp8-block:
#   checkpoints profiled with ncu at batch 1, prefill and one decode step, "" none), NCU_CACHE
#   (none: ncu does not flush the caches before each kernel; all = ncu's default), NCU_LAUNCHES
#   (15000: kernels profiled at most in one ncu run, the rest run unprofiled), PREFILL_NCU (1: also
#   profile the MoE prefill of PREFILL_PROMPT tokens where 120 s are left; 0 not),
#   TEST_ARGS (arguments of test_moe_cuda), WORK (the models' folder: /dev/shm where it has room).
# Expected costs (estimates, not yet measured; the call prints each): checkpoints in the background
# ~60-90 s (8B: init-model ~15 s + quantize ~45-60 s; MoE 8 layers: 11.2 GB written by torch ~20 s +
# two quantizes in parallel ~40 s); test: test_moe_cuda's own time; profile ~80-140 s after its
# checkpoint (two bench_decode runs ~40 s, ncu over ~3,300 kernels); moe ~150-300 s (four
# bench_decode runs ~25 s each, the server's TTFT ~30 s, ncu over ~2,500 kernels for the decode
# step and ~8,000 for the 2048-token prefill, the latter only where 120 s are left).
# Self-check here, no GPU (tiny shapes on the CPU, reference kernels, ncu absent or faked):
#   DEVICE=cpu LLAMA_SHAPE=tiny-llama MOE_SHAPE=tiny-qwen3-moe MOE_LAYERS=1 LINEAR_BACKEND=reference \
#   MOE_BACKENDS=reference DEST=build-device dev/scripts/gpu-step-moe.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
if [ -z "${DEST:-}" ] && [ ! -x out/device/bench_decode ] && [ -f out/pack/bundle.tar.xz ]; then
  mkdir -p out && tar xJf out/pack/bundle.tar.xz -C out
fi
. scripts/gpu-env.sh out/device
for p in qserve bench_decode; do
  [ -x "$D/$p" ] || { echo "$0: no $D/$p: build the bundle here first (scripts/device-bundle.sh, see the header)" >&2; exit 1; }
done
STEPS=${STEPS:-test profile moe}
[ "${SANITIZE:-0}" = 1 ] && [[ " $STEPS " != *" sanitize "* ]] && STEPS="$STEPS sanitize"
DEADLINE=${DEADLINE_S:-540}
DEVICE=${DEVICE:-cuda}
LINEAR_BACKEND=${LINEAR_BACKEND:-marlin}
LLAMA_SHAPE=${LLAMA_SHAPE:-llama-3.1-8b}
MOE_SHAPE=${MOE_SHAPE:-qwen3-30b-a3b}
MOE_LAYERS=${MOE_LAYERS:-8}
MOE_CKPTS=${MOE_CKPTS:-fp8-block nvfp4-w4a16}
MOE_BACKENDS=${MOE_BACKENDS:-marlin emulation}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
SUM="$OUT/summary.txt"
: >"$SUM"

now() { echo $(( $(date +%s) - T0 )); }
# say TEXT: one line to stdout and the summary
say() { echo "$*" | tee -a "$SUM"; }
# limit CAP: seconds a step may take (CAP, or what is left before the deadline less 10 s)
limit() { local l=$(( DEADLINE - $(now) - 10 )); echo $(( l < $1 ? l : $1 )); }
has_step() { [[ " $STEPS " == *" $1 "* ]]; }

# The models' folder: tmpfs where it has room for what the steps make (GB, peak: BF16 and its
# quantized copies at once), else /tmp.
need=0
if has_step profile; then need=$(( need + 26 )); fi
if has_step moe; then need=$(( need + (MOE_LAYERS * 22 + 7) / 8 + 1 )); fi
avail() { df -P -B1G "$1" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
if [ -n "${WORK:-}" ]; then W=$WORK
elif [ "$(avail /dev/shm || echo 0)" -ge "$need" ] 2>/dev/null; then W=/dev/shm/qserve-step
else W=/tmp/qserve-step; fi
rm -rf "$W/logs"  # (a warm machine may keep an earlier call's; its checkpoints are reused)
mkdir -p "$W/logs"
L="$W/logs"
say "gpu-step-moe: steps '$STEPS', deadline ${DEADLINE} s, models in $W (needs ~$need GB; free: /dev/shm $(avail /dev/shm) GB, /tmp $(avail /tmp) GB)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -2 | tee -a "$SUM"
say "bundle: $(ls "$D" | tr '\n' ' ')| tests: $(ls "$D/cuda-tests" 2>/dev/null | grep -v '^lib$' | tr '\n' ' ')"
pack_logs() { tar czf "$OUT/logs.tar.gz" -C "$W" logs 2>/dev/null; }
TIMES=""
# timed NAME START: records a step's seconds for the table at the end
timed() { local s=$(( $(date +%s) - $2 )); TIMES="$TIMES$1=${s}s "; say "[$(now) s] $1: $s s"; }

# ---- checkpoints, made in the background -------------------------------------------------------
# prep_llama / prep_moe run in the background (logs $L/prep-*.log); each checkpoint folder gets a
# .complete file once written, so a warm machine's next call (same WORK) reuses it
LL="$W/$LLAMA_SHAPE-fp8"
moe_dir() { echo "$W/$MOE_SHAPE-${MOE_LAYERS}l-$1"; }
prep_llama() {
  local s=$(date +%s)
  [ -f "$LL/.complete" ] && { echo "llama-fp8: reused"; return 0; }
  rm -rf "$W/llama-bf16" "$LL"
  "$D/qserve" init-model "$W/llama-bf16" --shape "$LLAMA_SHAPE" --seed 1 || return 1
  echo "init-model $LLAMA_SHAPE: $(( $(date +%s) - s )) s"
  "$D/qserve" quantize "$W/llama-bf16" "$LL" --scheme fp8-dynamic || return 1
  echo "quantize fp8-dynamic: $(( $(date +%s) - s )) s from the start"
  rm -rf "$W/llama-bf16"
  touch "$LL/.complete"
}
prep_moe() {
  local s=$(date +%s) bf="$W/$MOE_SHAPE-${MOE_LAYERS}l-bf16" todo="" pids="" ck rc=0
  for ck in $MOE_CKPTS; do [ -f "$(moe_dir "$ck")/.complete" ] || todo="$todo $ck"; done
  [ -z "$todo" ] && { echo "moe: reused"; return 0; }
  rm -rf "$bf"
  python3 scripts/init_model_cut.py "$D/qserve" "$bf" --shape "$MOE_SHAPE" --layers "$MOE_LAYERS" --seed 1 || return 1
  echo "init $MOE_SHAPE cut to $MOE_LAYERS layers: $(( $(date +%s) - s )) s"
  for ck in $todo; do  # one quantize a scheme, in parallel (each mostly one core)
    rm -rf "$(moe_dir "$ck")"
    ( "$D/qserve" quantize "$bf" "$(moe_dir "$ck")" --scheme "$ck" >"$L/quantize-moe-$ck.log" 2>&1 &&
        touch "$(moe_dir "$ck")/.complete" && echo "quantize $ck: $(( $(date +%s) - s )) s from the start" ) &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p" || rc=1; done
  rm -rf "$bf"
  return $rc
}
PREP_LLAMA="" PREP_MOE="" REAPED=""
if has_step profile; then ( prep_llama >"$L/prep-llama.log" 2>&1 ) & PREP_LLAMA=$!; fi
if has_step moe; then ( prep_moe >"$L/prep-moe.log" 2>&1 ) & PREP_MOE=$!; fi
# ready PID NAME LOG: waits (within the deadline) for a background preparation; 0 when it succeeded
ready() {
  local s=$(date +%s)
  while kill -0 "$1" 2>/dev/null; do
    [ "$(limit 9999)" -le 30 ] && { say "$2: checkpoints not ready before the deadline"; return 1; }
    sleep 2
  done
  wait "$1"; local rc=$?
  REAPED="$REAPED $1 "
  say "$2 checkpoints: rc $rc, waited $(( $(date +%s) - s )) s; $(tr '\n' ';' <"$3" | tail -c 400)"
  return $rc
}

# ---- copy bandwidth of this call (the roofline's rate), measured once --------------------------
BW=""
copy_bw() {
  [ -n "$BW" ] && return
  BW=$(timeout 60 python3 -c 'import sys; sys.path.insert(0, "dev/scripts")
from bench_torch_kernels import copy_bandwidth; print(f"{copy_bandwidth():.0f}")' 2>>"$L/copy-bw.err" | tail -1)
  if [[ "$BW" =~ ^[0-9]+$ ]]; then say "copy bandwidth (torch, device to device): $BW GB/s"
  else BW=${COPY_GBPS:-4150}; say "copy bandwidth: not measured ($(tail -1 "$L/copy-bw.err" | cut -c1-120)); assumed $BW GB/s"; fi
}

# decode LOG TIMEOUT MODEL ARGS...: one bench_decode run (stdout LOG.txt, stderr LOG.err); says its lines
decode() {
  local log=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "${BENCH:-$D/bench_decode}" "$@" --device "$DEVICE" >"$L/$log.txt" 2>"$L/$log.err"
  local rc=$?
  say "  $log: rc $rc, $(( $(date +%s) - s )) s; $(grep -h '^batch' "$L/$log.txt" | awk '{printf "b%s %s ms %s tok/s; ", $2, $3, $5}' | sed 's/: / /g')"
  [ $rc -ne 0 ] && say "    $(grep -v '^INFO' "$L/$log.err" | tail -3 | tr '\n' ' ')"
  grep -h 'kernel moe\|kernel linear' "$L/$log.err" | sed 's/^INFO [0-9-]* [0-9:]* /    /' | head -4 >>"$SUM"
  return $rc
}
# profile_ncu NAME TIMEOUT MODEL ARGS...: Nsight Compute over an eager bench_decode run, CSV gzipped
profile_ncu() {
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  if [ ! -x "$NCU" ]; then say "  $name: no ncu on this machine, not profiled"; return 1; fi
  QSERVE_CUDA_GRAPHS=0 timeout "$t" "$NCU" --clock-control none --cache-control "${NCU_CACHE:-none}" --csv \
    --launch-count "${NCU_LAUNCHES:-15000}" --metrics gpu__time_duration.sum "$D/bench_decode" "$@" --device "$DEVICE" >"$L/$name.csv" 2>"$L/$name.err"
  local rc=$?
  gzip -f "$L/$name.csv"
  say "  $name: ncu rc $rc, $(( $(date +%s) - s )) s, $(zcat "$L/$name.csv.gz" | grep -c '^"[0-9]') kernels profiled"
  [ $rc -ne 0 ] && say "    $(tail -3 "$L/$name.err" | tr '\n' ' ')"
  return $rc
}

# ---- steps --------------------------------------------------------------------------------------
step_test() {
  local s=$(date +%s) t="$D/cuda-tests/test_moe_cuda"
  say "== test"
  if [ -x "$D/cuda-tests/test_ops_cuda" ]; then  # the router (moe_route) and the other ops the MoE layer uses
    timeout "$(limit 120)" "$D/cuda-tests/test_ops_cuda" >"$L/test_ops_cuda.log" 2>&1
    say "test_ops_cuda: rc $?, $(grep -E '^[0-9]+ passed' "$L/test_ops_cuda.log" | tail -1)"
    grep -E 'FAIL' "$L/test_ops_cuda.log" | head -10 | tee -a "$SUM"
  fi
  if [ ! -x "$t" ]; then say "test_moe_cuda: not in the bundle, skipped"; return; fi
  timeout "$(limit "${TEST_TIMEOUT:-180}")" "$t" ${TEST_ARGS:-} >"$L/test_moe_cuda.log" 2>&1
  say "test_moe_cuda ${TEST_ARGS:-}: rc $?, $(grep -E '^[0-9]+ passed' "$L/test_moe_cuda.log" | tail -1)"
  grep -E 'FAIL|error' "$L/test_moe_cuda.log" | head -10 | tee -a "$SUM"
  timed test "$s"
}

step_sanitize() {
  local s=$(date +%s) t="$D/cuda-tests/test_moe_cuda"
  say "== sanitize"
  if [ ! -x "$t" ]; then say "test_moe_cuda: not in the bundle, sanitize skipped"; return; fi
  if [ ! -x "$SAN" ]; then say "no compute-sanitizer, sanitize skipped"; return; fi
  timeout "$(limit "${SANITIZE_TIMEOUT:-240}")" "$SAN" --tool memcheck "$t" --quick >"$L/sanitize-memcheck.log" 2>&1
  say "compute-sanitizer memcheck test_moe_cuda --quick: rc $?, $(grep -E 'ERROR SUMMARY' "$L/sanitize-memcheck.log" | tail -1); $(grep -E '^[0-9]+ passed' "$L/sanitize-memcheck.log" | tail -1)"
  grep -E '^========= (Invalid|Address|Program hit)' "$L/sanitize-memcheck.log" | sort | uniq -c | head -8 | tee -a "$SUM"
  timed sanitize "$s"
}

step_profile() {
  local s=$(date +%s) b=${PROFILE_BATCHES:-1,16,64,256} nb=${PROFILE_NCU_BATCHES:-1,16}
  say "== profile: $LLAMA_SHAPE fp8-dynamic, --linear-backend $LINEAR_BACKEND"
  [ -n "$PREP_LLAMA" ] && ready "$PREP_LLAMA" llama "$L/prep-llama.log" || { timed profile "$s"; return; }
  copy_bw
  decode llama-graphs "$(limit 150)" "$LL" --linear-backend "$LINEAR_BACKEND" --batches "$b" --steps "${DECODE_STEPS:-64}" --prompt 32
  QSERVE_CUDA_GRAPHS=0 decode llama-eager "$(limit 90)" "$LL" --linear-backend "$LINEAR_BACKEND" --batches "$nb" --steps 32 --prompt 32
  if [ "$(limit 999)" -gt 60 ]; then
    profile_ncu ncu-llama-fp8 "$(limit 200)" "$LL" --linear-backend "$LINEAR_BACKEND" --batches "$nb" --steps 1 --prompt 32
    python3 dev/scripts/ncu_step_summary.py "$L/ncu-llama-fp8.csv.gz" --forwards-per-run 5 --labels "$nb" --top 12 \
      --json "$L/ncu-llama-fp8.json" >"$L/ncu-llama-fp8-summary.txt" 2>&1
  else say "  ncu skipped: too little time left"; fi
  python3 dev/scripts/decode_roofline.py "$LL" --scheme fp8-dynamic --bw-gbps "$BW" --context $(( 32 + 3 + ${DECODE_STEPS:-64} / 2 )) \
    --batches "$b" --measured "graphs=$L/llama-graphs.txt" --measured "eager=$L/llama-eager.txt" 2>&1 | tee -a "$SUM"
  gaps_table "$L/ncu-llama-fp8.json" "$L/llama-graphs.txt" "$L/llama-eager.txt" | tee -a "$SUM"
  head -40 "$L/ncu-llama-fp8-summary.txt" 2>/dev/null | cut -c1-150 >>"$SUM"
  timed profile "$s"
}

# gaps_table NCU_JSON GRAPHS_TXT EAGER_TXT: the step's kernel-time sum (ncu) against its time
gaps_table() {
  python3 - "$@" <<'PY'
import json, os, re, sys
def steps(path):
    out = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            m = re.match(r"batch\s+(\d+):\s+([0-9.]+) ms/step", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    return out
ncu = {}
if os.path.exists(sys.argv[1]):
    for r in json.load(open(sys.argv[1])):
        m = re.match(r"batch (\d+) last step", r["label"])
        if m:
            ncu[int(m.group(1))] = r["us"] / 1000
g, e = steps(sys.argv[2]), steps(sys.argv[3])
print("step time against the sum of its kernels' GPU times (ncu, serialized, eager step)")
print(f"{'batch':>5} {'kernels ms':>10} {'graph ms':>9} {'gap':>13} {'eager ms':>9} {'gap':>13}")
for b in sorted(set(ncu) | set(g) | set(e)):
    k = ncu.get(b)
    cell = lambda t: (f"{t:9.3f} {t - k:6.3f} ({(t - k) / t * 100:3.0f}%)" if t and k else
                      (f"{t:9.3f} {'—':>13}" if t else f"{'—':>9} {'—':>13}"))
    print(f"{b:5d} {k if k else float('nan'):10.3f} {cell(g.get(b))} {cell(e.get(b))}")
PY
}

step_moe() {
  local s=$(date +%s) b=${MOE_BATCHES:-1,16,64,256} ck be st=${MOE_STEPS:-32}
  say "== moe: $MOE_SHAPE cut to $MOE_LAYERS layers, $MOE_CKPTS, --moe-backend $MOE_BACKENDS (--linear-backend $LINEAR_BACKEND)"
  [ -n "$PREP_MOE" ] && ready "$PREP_MOE" moe "$L/prep-moe.log" || true
  copy_bw
  for ck in $MOE_CKPTS; do
    [ -f "$(moe_dir "$ck")/.complete" ] || { say "  $ck: no checkpoint ($(tail -c 300 "$L/quantize-moe-$ck.log" 2>/dev/null))"; continue; }
    for be in $MOE_BACKENDS; do
      [ "$(limit 999)" -gt 40 ] || { say "  moe-$ck-$be: skipped, too little time left"; continue; }
      decode "moe-$ck-$be" "$(limit 150)" "$(moe_dir "$ck")" --linear-backend "$LINEAR_BACKEND" --moe-backend "$be" \
        --batches "$b" --steps "$st" --prompt 32
    done
    local meas=()
    for be in $MOE_BACKENDS; do meas+=(--measured "$be=$L/moe-$ck-$be.txt"); done
    # the same backend from the baseline build (an A/B of a kernel change on one card, one call)
    if [ -x "$D/bench_decode_base" ] && [ "$(limit 999)" -gt 40 ]; then
      BENCH="$D/bench_decode_base" decode "moe-$ck-base" "$(limit 150)" "$(moe_dir "$ck")" --linear-backend "$LINEAR_BACKEND" \
        --moe-backend "${MOE_BACKENDS%% *}" --batches "$b" --steps "$st" --prompt 32
      meas+=(--measured "${MOE_BACKENDS%% *}-base=$L/moe-$ck-base.txt")
    fi
    python3 dev/scripts/decode_roofline.py "$(moe_dir "$ck")" --scheme "$ck" --bw-gbps "$BW" --context $(( 32 + 3 + st / 2 )) \
      --batches "$b" "${meas[@]}" 2>&1 | tee -a "$SUM"
  done
  timed moe-decode "$s"
  local s3=$(date +%s) p=${PREFILL_PROMPT:-2048}
  for ck in ${MOE_TTFT-fp8-block}; do
    [ -f "$(moe_dir "$ck")/.complete" ] || continue
    [ "$(limit 999)" -gt 70 ] || { say "  ttft-$ck: skipped, too little time left"; continue; }
    ttft "$ck" "$p"
  done
  [ -n "${MOE_TTFT-fp8-block}" ] && timed moe-ttft "$s3"
  local s2=$(date +%s) be1=${MOE_BACKENDS%% *}
  for ck in ${MOE_NCU-fp8-block}; do
    [ -f "$(moe_dir "$ck")/.complete" ] || continue
    # the decode step at batch 1 (a 1-token prompt: the prefill touches no more experts than a step)
    [ "$(limit 999)" -gt 60 ] || { say "  ncu-moe-$ck: skipped, too little time left"; continue; }
    profile_ncu "ncu-moe-$ck" "$(limit 150)" "$(moe_dir "$ck")" --linear-backend "$LINEAR_BACKEND" \
      --moe-backend "$be1" --batches 1 --steps 1 --prompt 1
    python3 dev/scripts/ncu_step_summary.py "$L/ncu-moe-$ck.csv.gz" --forwards-per-run 5 --labels 1 --top 12 \
      --json "$L/ncu-moe-$ck.json" >"$L/ncu-moe-$ck-summary.txt" 2>&1
    # the prefill of a PREFILL_PROMPT-token prompt (every expert gets tokens: many more kernels)
    if [ "${PREFILL_NCU:-1}" = 1 ] && [ "$(limit 999)" -gt 120 ]; then
      profile_ncu "ncu-moe-$ck-prefill" "$(limit 200)" "$(moe_dir "$ck")" --linear-backend "$LINEAR_BACKEND" \
        --moe-backend "$be1" --batches 1 --steps 1 --prompt "$p"
      python3 dev/scripts/ncu_step_summary.py "$L/ncu-moe-$ck-prefill.csv.gz" --forwards-per-run 5 --labels 1 --prefill \
        --top 12 --json "$L/ncu-moe-$ck-prefill.json" >"$L/ncu-moe-$ck-prefill-summary.txt" 2>&1
    elif [ "${PREFILL_NCU:-1}" = 1 ]; then say "  ncu-moe-$ck-prefill: skipped, too little time left"; fi
    python3 - "$L/ncu-moe-$ck.json" "$L/ncu-moe-$ck-prefill.json" "$p" "$L/moe-$ck-$be1.txt" $(( 32 + 3 + st / 2 )) <<'PY' | tee -a "$SUM"
import json, os, re, sys
step = None
if os.path.exists(sys.argv[4]):
    for line in open(sys.argv[4]):
        m = re.match(r"batch\s+1:\s+([0-9.]+) ms/step", line)
        step = float(m.group(1)) if m else step
for path, want in ((sys.argv[1], "batch 1 last step"), (sys.argv[2], "batch 1 prefill")):
    if not os.path.exists(path):
        print(f"  ({os.path.basename(path)}: no ncu summary)")
        continue
    for r in json.load(open(path)):
        if r["label"] != want:
            continue
        if r["kind"] == "prefill":
            print(f"  prefill {sys.argv[3]} tokens: kernels {r['us'] / 1000:.2f} ms GPU time = "
                  f"{int(sys.argv[3]) / r['us'] * 1e6:.0f} tok/s ({r['kernels']} kernels)")
        else:
            gap = (f", bench_decode's step {step:.3f} ms (context {sys.argv[5]}): host and launch gaps "
                   f"{step - r['us'] / 1000:.3f} ms" if step else "")
            print(f"  decode step batch 1 (context 4): kernels {r['us'] / 1000:.3f} ms ({r['kernels']} kernels){gap}")
        for t in r["top"][:6]:
            print(f"      {t['us']:9.1f} us {t['count']:5d}x  {t['name'][:80]}")
PY
    head -30 "$L/ncu-moe-$ck-summary.txt" 2>/dev/null | cut -c1-150 >>"$SUM"
  done
  [ -n "${MOE_NCU-fp8-block}" ] && timed moe-ncu "$s2"
  timed moe "$s"
}

# ttft CKPT PROMPT: the server on the checkpoint, then bench_serve's TTFT for PROMPT-token prompts,
# one at a time (the first of five warms up; the median is reported)
ttft() {
  local ck=$1 p=$2 dir port=$(( 20000 + RANDOM % 20000 )) log="$L/server-moe-$1.log" s=$(date +%s)
  dir=$(moe_dir "$ck")
  "$D/qserve" "$dir" --host 127.0.0.1 --port "$port" --device "$DEVICE" --linear-backend "$LINEAR_BACKEND" \
    --moe-backend "${MOE_BACKENDS%% *}" --served-model-name m --max-num-seqs 4 >"$log" 2>&1 &
  local pid=$! up=0
  for _ in $(seq 1 "$(( $(limit 120) / 2 ))"); do
    kill -0 $pid 2>/dev/null || break
    python3 -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null && { up=1; break; }
    sleep 2
  done
  if [ $up = 1 ] && [ -x "$D/bench_serve" ]; then
    local vocab
    vocab=$(python3 -c "import json; print(json.load(open('$dir/config.json'))['vocab_size'])")
    timeout "$(limit 90)" "$D/bench_serve" --url "http://127.0.0.1:$port" --model m --num-prompts 5 --concurrency 1 \
      --random-input-len "$p" --random-output-len 2 --vocab-size "$vocab" >"$L/ttft-moe-$ck.txt" 2>&1
    local f="$L/ttft-moe-$ck.txt" med
    med=$(sed -n 's/^Median TTFT (ms): *//p' "$f")
    say "  ttft-$ck: server up in $(( $(date +%s) - s )) s; $p-token prompts, $(sed -n 's/^Successful requests: *//p' "$f") of 5 answered:" \
      "median TTFT ${med:-?} ms$(python3 -c "print(f' = {$p / ($med / 1000):.0f} prompt tok/s' if $med > 0 else '')" 2>/dev/null)," \
      "mean $(sed -n 's/^Mean TTFT (ms): *//p' "$f") ms, p99 $(sed -n 's/^P99 TTFT (ms): *//p' "$f") ms"
  else
    say "  ttft-$ck: server not up (or no bench_serve): $(tail -3 "$log" | tr '\n' ' ')"
  fi
  kill "$pid" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

# detail: Nsight Compute's sections (speed of light, occupancy, launch, warp stalls) for the MoE
# layer's own kernels (route, align, gate_up, down, combine) in one decode step at batch 1 and 16
# of the first MoE checkpoint; the per-kernel lines go to the summary, the whole report to the logs
step_detail() {
  local s=$(date +%s) ck=${MOE_CKPTS%% *} b
  say "== detail: ncu sections of the MoE kernels, $ck, --moe-backend ${MOE_BACKENDS%% *}"
  [ -n "$PREP_MOE" ] && [[ "$REAPED" != *" $PREP_MOE "* ]] && { ready "$PREP_MOE" moe "$L/prep-moe.log" || true; }
  [ -f "$(moe_dir "$ck")/.complete" ] || { say "  no $ck checkpoint"; return; }
  [ -x "$NCU" ] || { say "  no ncu"; return; }
  for b in ${DETAIL_BATCHES:-1 16}; do
    [ "$(limit 999)" -gt 40 ] || { say "  detail batch $b: skipped, too little time left"; continue; }
    QSERVE_CUDA_GRAPHS=0 timeout "$(limit 120)" "$NCU" --clock-control none --cache-control none \
      -k regex:'moe_route|align_kernel|gate_up_kernel|down_kernel|combine_kernel' --launch-skip 40 --launch-count 5 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      "$D/bench_decode" "$(moe_dir "$ck")" --linear-backend "$LINEAR_BACKEND" --moe-backend "${MOE_BACKENDS%% *}" \
      --batches "$b" --steps 4 --prompt 1 --device "$DEVICE" >"$L/detail-b$b.txt" 2>&1
    say "  batch $b: ncu rc $?"
    grep -E '^  [a-zA-Z_:<>, 0-9]+\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Waves Per SM|Theoretical Occupancy|Stall' \
      "$L/detail-b$b.txt" | sed 's/  */ /g' | head -80 >>"$SUM"
  done
  timed detail "$s"
}

for st in $STEPS; do
  if [ "$(limit 999)" -le 20 ]; then say "== $st: not run, the deadline is reached"; continue; fi
  case "$st" in
    test) step_test ;;
    sanitize) step_sanitize ;;
    profile) step_profile ;;
    moe) step_moe ;;
    detail) step_detail ;;
    *) say "unknown step '$st' (test sanitize profile moe detail)" ;;
  esac
  pack_logs
done
# kill_tree PID: a process this script started and its children, by id
kill_tree() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null
}
for p in $PREP_LLAMA $PREP_MOE; do  # a preparation still running at the end (deadline reached)
  [[ "$REAPED" == *" $p "* ]] && continue
  kill -0 "$p" 2>/dev/null && { say "stopping an unfinished checkpoint preparation ($p)"; kill_tree "$p"; }
done
say "== times: $TIMES total $(now) s"
{ echo "======== summary table (all of it: $SUM; logs: $OUT/logs.tar.gz)"
  L="$L" BW="${BW:-}" TIMES="$TIMES" MOE_CKPTS="$MOE_CKPTS" MOE_BACKENDS="$MOE_BACKENDS" MOE_LAYERS="$MOE_LAYERS" \
    MOE_DIRS="$(for ck in $MOE_CKPTS; do moe_dir "$ck"; done | tr '\n' ' ')" MOE_CTX=$(( 32 + 3 + ${MOE_STEPS:-32} / 2 )) \
    LL_CTX=$(( 32 + 3 + ${DECODE_STEPS:-64} / 2 )) LL="$LL" PROMPT="${PREFILL_PROMPT:-2048}" python3 - <<'PY'
# The figures of the call in one table: the test, the 8B step against its kernels, MoE tok/s against
# the roofline per checkpoint and backend, the prefill, the steps' times.
import json, os, re, sys
sys.path.insert(0, "dev/scripts")
from decode_roofline import step_bytes
E = os.environ
L = E["L"]
def lines(name):
    p = os.path.join(L, name)
    return open(p, errors="replace").read().splitlines() if os.path.exists(p) else []
def bench(name):  # {batch: (ms, tok/s)}
    out = {}
    for ln in lines(name):
        m = re.match(r"batch\s+(\d+):\s+([0-9.]+) ms/step\s+([0-9.]+) tok/s", ln)
        if m:
            out[int(m.group(1))] = (float(m.group(2)), float(m.group(3)))
    return out
def ncu(name):  # {label: (kernels, us)}
    p = os.path.join(L, name)
    return {r["label"]: (r["kernels"], r["us"]) for r in json.load(open(p))} if os.path.exists(p) else {}
bw = float(E["BW"]) * 1e9 if E.get("BW") else 0
t = [ln for ln in lines("test_moe_cuda.log") if re.match(r"^[0-9]+ passed", ln)]
print(f"test_moe_cuda: {t[-1] if t else 'no result (not run, or no summary line)'}")
g, e, n = bench("llama-graphs.txt"), bench("llama-eager.txt"), ncu("ncu-llama-fp8.json")
if g or n:
    cfg = json.load(open(os.path.join(E["LL"], "config.json"))) if os.path.exists(os.path.join(E["LL"], "config.json")) else None
    print("8B fp8-dynamic marlin   batch | graph ms  tok/s  %roof | eager ms | kernels ms (ncu) | gap graph-kernels")
    for b in sorted(set(g) | set(e)):
        k = n.get(f"batch {b} last step")
        roof = b * bw / sum(step_bytes(cfg, "fp8-dynamic", b, int(E["LL_CTX"])).values()) if cfg and bw else 0
        gm, gt = g.get(b, (0, 0))
        print(f"  {b:27d} | {gm:8.3f} {gt:6.0f} {gt / roof * 100 if roof else 0:5.1f}% | "
              f"{e[b][0] if b in e else float('nan'):8.3f} | {k[1] / 1000 if k else float('nan'):16.3f} | "
              + (f"{gm - k[1] / 1000:.3f} ms ({(gm - k[1] / 1000) / gm * 100:.0f}%)" if k and gm else "—"))
dirs = E["MOE_DIRS"].split()
for ck, d in zip(E["MOE_CKPTS"].split(), dirs):
    runs = {be: bench(f"moe-{ck}-{be}.txt") for be in E["MOE_BACKENDS"].split()}
    if not any(runs.values()):
        continue
    cfg = json.load(open(os.path.join(d, "config.json")))
    print(f"MoE {E['MOE_LAYERS']} layers {ck}: tok/s (% of roofline at {bw / 1e9:.0f} GB/s)")
    for b in sorted({b for r in runs.values() for b in r}):
        roof = b * bw / sum(step_bytes(cfg, ck, b, int(E["MOE_CTX"])).values()) if bw else 0
        cells = "  ".join(f"{be} {r[b][1]:8.1f} ({r[b][1] / roof * 100 if roof else 0:4.1f}%)" if b in r else f"{be} —"
                          for be, r in runs.items())
        print(f"  batch {b:4d}  roofline {roof:9.0f}  {cells}")
    pf, st = ncu(f"ncu-moe-{ck}-prefill.json").get("batch 1 prefill"), ncu(f"ncu-moe-{ck}.json").get("batch 1 last step")
    if pf:
        print(f"  prefill {E['PROMPT']} tokens (ncu kernel sum): {pf[1] / 1000:.2f} ms = {int(E['PROMPT']) / pf[1] * 1e6:.0f} tok/s")
    if st:
        first = next(iter(runs.values()), {})
        print(f"  decode batch 1: kernels {st[1] / 1000:.3f} ms of a {first.get(1, (float('nan'),))[0]:.3f} ms step ({st[0]} kernels)")
    tt = [ln for ln in lines(f"ttft-moe-{ck}.txt") if "TTFT" in ln and ("Median" in ln or "Mean" in ln)]
    if tt:
        print("  TTFT " + "; ".join(re.sub(r"\s+", " ", x) for x in tt))
print(f"times: {E['TIMES']}")
PY
} 2>&1 | tee -a "$SUM"
pack_logs
