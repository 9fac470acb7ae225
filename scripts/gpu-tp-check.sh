#!/usr/bin/env bash
# gpu-tp-check.sh — tensor parallelism on a machine with two or more GPUs (issue 43; after
# scripts/device-bundle.sh, like gpu-check.sh): `qserve generate -tp 2` (two ranks, one GPU each,
# NCCL between them) against `-tp 1` on the same GPU kind, greedy, on tiny random models: dense
# Llama and Qwen3, Qwen3-MoE and Llama 4 Scout / Maverick, in BF16, FP8 (per-tensor, per-channel)
# and NVFP4, the MoE ones also with --enable-expert-parallel. The tokens must be identical up to the first step where the -tp 1 run's top two
# log-probs are within MARGIN (0.05: BF16 partial sums added in another order may swap a near
# tie), and the log-probs of those tokens within TOL (0.05). Also test_comm_nccl's two-rank part.
# One GPU: says so and exits 0. Needs mpirun (Open MPI) and NCCL (QSERVE_NCCL_LIBRARY, found by
# gpu-env.sh from pip's nvidia-nccl-cu12 when unset). Results in $OUT/tp.log; last line a summary.
#   TP=4  ranks to compare (default 2)   TP_MODELS="llama moe"  only those models
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh out/device
Q=$D/qserve
TP=${TP:-2}
LOG="$OUT/tp.log"
: >"$LOG"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
if [ "$gpus" -lt "$TP" ]; then
  echo "gpu-tp: skipped: needs $TP GPUs, found $gpus" | tee -a "$LOG"
  exit 0
fi
command -v mpirun >/dev/null || { echo "gpu-tp: mpirun is not on PATH (Open MPI)" | tee -a "$LOG"; exit 1; }
echo "NCCL: ${QSERVE_NCCL_LIBRARY:-(the library path)}; $gpus GPUs; -tp $TP" | tee -a "$LOG"
passed=0; failed=0
result() { # NAME RC WHY
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); echo "ok $1" | tee -a "$LOG"
  else failed=$((failed + 1)); echo "not ok $1: $3" | tee -a "$LOG"; fi
}

if [ -x "$D/cuda-tests/test_comm_nccl" ]; then
  timeout 240 "$D/cuda-tests/test_comm_nccl" >>"$LOG" 2>&1
  result test_comm_nccl $? "$(grep '^not ok' "$LOG" | head -3)"
fi

M=$(mktemp -d /tmp/qserve-tp.XXXXXX)
trap 'rm -rf "$M"' EXIT
# name shape [quantize schemes...]
models=(
  "llama tiny-llama fp8-static fp8-dynamic nvfp4"
  "qwen3 tiny-qwen3 fp8-static"
  "moe tiny-qwen3-moe fp8-static nvfp4"
  "scout tiny-llama4-scout fp8-static"
  "maverick tiny-llama4-maverick"
)
gen() { # OUT MODEL [flags]
  local out=$1; shift
  timeout 180 "$Q" generate "$@" --device cuda --prompt-ids 1,2,3,4,5,6,7 --max-tokens 32 --temperature 0 \
    --ignore-eos --logprobs 2 --json >"$out" 2>"$out.err"
}
compare() { # ONE.json TP.json: identical tokens up to the first near tie of ONE, log-probs within TOL
  python3 - "$1" "$2" "${MARGIN:-0.05}" "${TOL:-0.05}" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
margin, tol = float(sys.argv[3]), float(sys.argv[4])
n = 0
for la in a["logprobs"]:
    top = la["top"]
    if len(top) > 1 and top[0]["logprob"] - top[1]["logprob"] < margin:
        break
    n += 1
n = max(n, 1)
if a["token_ids"][:n] != b["token_ids"][:n]:
    sys.exit("tokens differ in the first %d: %s vs %s" % (n, a["token_ids"][:n], b["token_ids"][:n]))
d = max(abs(x["logprob"] - y["logprob"]) for x, y in list(zip(a["logprobs"], b["logprobs"]))[:n])
print("%d of %d tokens compared, log-probs within %.2g" % (n, len(a["token_ids"]), d))
sys.exit(0 if d < tol else "log-probs differ by %g" % d)
PY
}
for spec in "${models[@]}"; do
  set -- $spec
  name=$1 shape=$2; shift 2
  if [ -n "${TP_MODELS:-}" ] && [[ " $TP_MODELS " != *" $name "* ]]; then continue; fi
  "$Q" init-model "$M/$name" --shape "$shape" >>"$LOG" 2>&1 || { result "$name init-model" 1 "see $LOG"; continue; }
  variants="$name"
  for s in "$@"; do
    "$Q" quantize "$M/$name" "$M/$name-$s" --scheme "$s" >>"$LOG" 2>&1 && variants="$variants $name-$s"
  done
  for v in $variants; do
    gen "$M/$v.1.json" "$M/$v" && gen "$M/$v.n.json" "$M/$v" -tp "$TP"
    rc=$?
    why=$(tail -c 300 "$M/$v.n.json.err")
    if [ $rc -eq 0 ]; then why=$(compare "$M/$v.1.json" "$M/$v.n.json" 2>&1); rc=$?; fi
    echo "== $v: $why" >>"$LOG"
    grep -h "tensor parallel:.*steps\|NCCL\|kernel linear" "$M/$v.n.json.err" >>"$LOG" 2>/dev/null
    result "$v tp$TP" $rc "$why"
    case $name in moe|scout|maverick) ;; *) continue ;; esac
    # expert parallelism: whole experts a rank, each computing only its own experts' slots
    gen "$M/$v.ep.json" "$M/$v" -tp "$TP" --enable-expert-parallel
    rc=$?
    why=$(tail -c 300 "$M/$v.ep.json.err")
    if [ $rc -eq 0 ]; then why=$(compare "$M/$v.1.json" "$M/$v.ep.json" 2>&1); rc=$?; fi
    echo "== $v expert parallel: $why" >>"$LOG"
    result "$v ep$TP" $rc "$why"
  done
done
echo "gpu-tp: $passed passed, $failed failed"
[ $failed -eq 0 ]
