#!/usr/bin/env bash
# Runs on the GPU machine (device tool, carry ["out/device"] after scripts/device-bundle.sh):
# decode-step throughput end to end without the server (bench_decode) for several backends and
# switches, each run DECODE_ROUNDS times in alternation, on random-init checkpoints it makes
# itself; prints one table of decode tok/s (mean over the rounds, and the rounds' spread) and
# writes it to $OUT/decode-ab.txt. Session 17 measured activation orders this way (docs/marlin.md).
#   DECODE_CKPTS="fp8 nvfp4"   checkpoints (quantize schemes fp8-dynamic / nvfp4-w4a16 / fp8-static)
#   DECODE_VARIANTS="ordered=marlin natural=marlin:QSERVE_ACT_ORDER=0 cublaslt=cublaslt@fp8"
#                              name=backend[@ckpt,ckpt][:VAR=v,VAR=v] (@: only those checkpoints;
#                              BIN=dir among the variables: that bundle's bench_decode, e.g. an
#                              older build carried beside out/device, for an A/B of two builds)
#   DECODE_BATCHES=1,16,32,64  DECODE_STEPS=64  DECODE_ROUNDS=2  DECODE_PROMPT=32 (context = prompt + steps)
#   DECODE_SHAPE=llama-3.1-8b  (tiny-llama with DECODE_DEVICE=cpu: a self-check here, no GPU)
set -uo pipefail
cd "$(dirname "$0")/../.."
. scripts/gpu-env.sh out/device
W=${DECODE_WORK:-/dev/shm/qserve-decode}
mkdir -p "$W"
SHAPE=${DECODE_SHAPE:-llama-3.1-8b}
DEVICE=${DECODE_DEVICE:-cuda}
CKPTS=${DECODE_CKPTS:-fp8 nvfp4}
VARIANTS=${DECODE_VARIANTS:-ordered=marlin natural=marlin:QSERVE_ACT_ORDER=0 cublaslt=cublaslt@fp8}
BATCHES=${DECODE_BATCHES:-1,16,32,64}
ROUNDS=${DECODE_ROUNDS:-2}
scheme_of() { case "$1" in fp8) echo fp8-dynamic;; nvfp4) echo nvfp4-w4a16;; fp8s) echo fp8-static;; *) echo "$1";; esac; }
t0=$(date +%s)
[ -d "$W/bf16" ] || "$D/qserve" init-model "$W/bf16" --shape "$SHAPE" --seed 1 >/dev/null 2>&1 || { echo "init-model failed"; exit 1; }
for ck in $CKPTS; do
  [ -d "$W/$ck" ] || "$D/qserve" quantize "$W/bf16" "$W/$ck" --scheme "$(scheme_of "$ck")" >"$W/quantize-$ck.log" 2>&1 ||
    { echo "quantize $ck failed: $(tail -c 300 "$W/quantize-$ck.log")"; exit 1; }
done
echo "checkpoints ($SHAPE: $CKPTS): $(( $(date +%s) - t0 )) s"
raw="$OUT/decode-ab-raw.txt"
: >"$raw"
for r in $(seq 1 "$ROUNDS"); do
  for ck in $CKPTS; do
    for v in $VARIANTS; do
      name=${v%%=*}; rest=${v#*=}; vars=""
      [[ "$rest" == *:* ]] && { vars=${rest#*:}; rest=${rest%%:*}; }
      backend=${rest%%@*}; only=""
      [[ "$rest" == *@* ]] && only=${rest#*@}
      [ -n "$only" ] && [[ ",$only," != *",$ck,"* ]] && continue
      take_var BIN "$vars"
      bin=${taken:-$D} vars=$rest
      env ${vars//,/ } timeout 150 "$bin/bench_decode" "$W/$ck" --device "$DEVICE" --linear-backend "$backend" \
        --batches "$BATCHES" --steps "${DECODE_STEPS:-64}" --prompt "${DECODE_PROMPT:-32}" 2>>"$OUT/decode-ab-err.txt" |
        sed -n "s/^batch *\([0-9]*\): *\([0-9.]*\) ms\/step *\([0-9.]*\) tok\/s.*/$r $ck $name \1 \3/p" >>"$raw"
    done
  done
done
python3 - "$raw" "$BATCHES" "$VARIANTS" <<'PY' | tee "$OUT/decode-ab.txt"
import collections, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, ck, name, b, tok = line.split()
    runs[(ck, name, int(b))].append(float(tok))
batches = [int(b) for b in sys.argv[2].split(",")]
order = [v.split("=", 1)[0] for v in sys.argv[3].split()]  # DECODE_VARIANTS' order: the first is the base
mean = lambda v: sum(v) / len(v)
print("decode tok/s (mean over rounds; spread = (max - min) / mean); then each variant against the")
print("first one of its checkpoint in DECODE_VARIANTS' order")
print(f"{'checkpoint':10} {'variant':12} " + " ".join(f"{'batch ' + str(b):>18}" for b in batches))
names = sorted({(k[0], k[1]) for k in runs})
for ck, name in names:
    cells = []
    for b in batches:
        v = runs.get((ck, name, b), [])
        cells.append(f"{mean(v):10.1f} ±{(max(v) - min(v)) / mean(v) * 100:4.1f}%" if v else f"{'—':>18}")
    print(f"{ck:10} {name:12} " + " ".join(f"{c:>18}" for c in cells))
for ck in sorted({ck for ck, _ in names}):
    present = [n for n in order if (ck, n) in names]
    for name in present[1:]:
        cells = []
        for b in batches:
            v, base = runs.get((ck, name, b)), runs.get((ck, present[0], b))
            cells.append(f"{(mean(v) / mean(base) - 1) * 100:+.1f}%" if v and base else "—")
        print(f"{ck:10} {name + ' vs ' + present[0]:24} " + " ".join(f"{c:>12}" for c in cells))
PY
echo "total: $(( $(date +%s) - t0 )) s"
