#!/usr/bin/env bash
# test_tp.sh — tensor parallelism on CPU ranks (docs/parallel.md). `qserve generate -tp 2` equals
# -tp 1 (greedy tokens identical, logprobs within 1e-3) on tiny Llama, Qwen2 (q/k/v bias) and
# Qwen3 (q/k norm) checkpoints in BF16/F32, FP8 per-channel (fp8-dynamic: close, see below), FP8 per-tensor
# (fp8-static), FP8 128x128 blocks, NVFP4 and NVFP4 weight-only, and with more ranks than KV heads
# (-tp 4: replicated KV heads), with an odd vocabulary (501: padded to 512, 245 real rows on rank 1),
# on Qwen3-MoE and Mixtral in BF16, FP8 per-tensor and NVFP4, and on Llama 4 Scout (chunked
# attention, q/k norm, NoPE temperature, routed and shared experts) and Maverick (dense layers
# interleaved), experts tensor-parallel and with --enable-expert-parallel (whole experts per rank,
# each computing only its own experts' tokens); stories260K under -tp 2 keeps llama2.c's greedy golden;
# `mpirun -np 2 qserve ... -tp 2` works; what does not split or is not sharded (FP8 blocks cut
# mid-block, expert parallelism of a dense model, pipeline parallelism) is a start-up
# error naming it. A -tp 2 server answers the
# openai client, drains and exits 0 on SIGTERM, and ends within seconds with an error naming the
# rank when a rank is killed or hangs mid-request. Prints ok / not ok / skip.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh
Q=$BIN
names="tp2_llama tp2_qwen2_bias tp2_qwen3 tp2_fp8_dynamic tp2_fp8_static tp2_fp8_block tp2_nvfp4 tp2_nvfp4_w4a16 tp4_replicated_kv tp2_odd_vocab tp2_qwen3_moe tp2_mixtral tp2_moe_fp8_static tp2_moe_nvfp4 ep2_qwen3_moe ep2_mixtral ep2_moe_nvfp4 ep2_online_fp8_runs tp2_llama4_scout tp2_llama4_maverick ep2_llama4_scout ep2_llama4_maverick tp2_llama4_fp8_static stories_tp2_golden mpirun_direct fp8_block_split_refused expert_parallel_dense_refused pipeline_refused backends_tp server_tp2_openai_client server_tp2_drains kill_rank_ends_server hung_rank_ends_server"
if ! command -v mpirun >/dev/null || ! "$Q" generate --help >/dev/null 2>&1; then
  for n in $names; do skip "$n" "Open MPI's mpirun is not on PATH (scripts/install-deps.sh installs openmpi-bin)"; done
  exit 0
fi
export QSERVE_TP_TIMEOUT=${QSERVE_TP_TIMEOUT:-30}
# sanitized builds: Open MPI's allocations held until exit are not qserve's (full stacks to match them)
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan-openmpi.supp:fast_unwind_on_malloc=0}
M=$TMP/m
mkdir -p "$M"
"$Q" init-model "$M/llama" --shape tiny-llama --dtype f32 >/dev/null 2>&1
"$Q" init-model "$M/qwen2" --shape tiny-qwen2 >/dev/null 2>&1
"$Q" init-model "$M/qwen3" --shape tiny-qwen3 >/dev/null 2>&1
"$Q" init-model "$M/blocks" --shape tiny-llama-tp-blocks >/dev/null 2>&1
"$Q" init-model "$M/moe" --shape tiny-qwen3-moe >/dev/null 2>&1
"$Q" init-model "$M/mixtral" --shape tiny-mixtral >/dev/null 2>&1
"$Q" init-model "$M/llama4" --shape tiny-llama4-scout >/dev/null 2>&1
"$Q" init-model "$M/maverick" --shape tiny-llama4-maverick >/dev/null 2>&1
"$Q" init-model "$M/odd" --shape tiny-llama-odd-vocab >/dev/null 2>&1
"$Q" quantize "$M/llama4" "$M/llama4-fp8-static" --scheme fp8-static >/dev/null 2>&1
for s in fp8-static nvfp4; do "$Q" quantize "$M/moe" "$M/moe-$s" --scheme "$s" >/dev/null 2>&1; done
for s in fp8-dynamic fp8-static nvfp4 nvfp4-w4a16; do "$Q" quantize "$M/llama" "$M/llama-$s" --scheme "$s" >/dev/null 2>&1; done
"$Q" quantize "$M/blocks" "$M/blocks-fp8-block" --scheme fp8-block >/dev/null 2>&1
"$Q" quantize "$M/llama" "$M/llama-fp8-block" --scheme fp8-block >/dev/null 2>&1

gen() { # OUT MODEL [flags]: greedy generation with logprobs as JSON
  local out=$1; shift
  timeout 120 "$Q" generate "$@" --prompt-ids 1,2,3,4,5,6,7 --max-tokens 24 --temperature 0 --ignore-eos --logprobs 1 \
    --json >"$out" 2>"$out.err"
}
same() { # A.json B.json [N TOL]: the first N tokens (default all) identical, their logprobs within TOL
  python3 - "$1" "$2" "${3:-0}" "${4:-1e-3}" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
n = int(sys.argv[3]) or len(a["token_ids"])
if a["token_ids"][:n] != b["token_ids"][:n]:
    sys.exit("tokens differ: %s vs %s" % (a["token_ids"], b["token_ids"]))
d = max(abs(x["logprob"] - y["logprob"]) for x, y in list(zip(a["logprobs"], b["logprobs"]))[:n])
sys.exit(0 if d < float(sys.argv[4]) else "logprobs differ by %g" % d)
PY
}
equal_tp() { # NAME MODEL "TP [FLAGS]" [N TOL]
  gen "$TMP/$1.1.json" "$2" && gen "$TMP/$1.n.json" "$2" -tp $3 &&
    why=$(same "$TMP/$1.1.json" "$TMP/$1.n.json" "${4:-0}" "${5:-1e-3}" 2>&1)
  check "$1" $? "${why:-$(tail -c 400 "$TMP/$1.n.json.err")}"
}
equal_tp tp2_llama "$M/llama" 2
equal_tp tp2_qwen2_bias "$M/qwen2" 2
equal_tp tp2_qwen3 "$M/qwen3" 2
# dynamic per-token FP8 activations: o_proj and down_proj quantize each rank's slice of a row with
# its own scale (as vLLM does), so the numbers differ slightly from one rank's; the random tiny
# model has near-tied logits, so only the first 16 tokens must agree, their logprobs within 0.02
equal_tp tp2_fp8_dynamic "$M/llama-fp8-dynamic" 2 16 0.02
equal_tp tp2_fp8_static "$M/llama-fp8-static" 2
equal_tp tp2_fp8_block "$M/blocks-fp8-block" 2
equal_tp tp2_nvfp4 "$M/llama-nvfp4" 2
equal_tp tp2_nvfp4_w4a16 "$M/llama-nvfp4-w4a16" 2
equal_tp tp4_replicated_kv "$M/llama" 4   # 4 ranks, 2 KV heads: each KV head on two ranks
# vocabulary 501: padded to 512 (vLLM's multiple of 64), rank 1 holds 245 real rows; no pad id
# reaches the sampler (the gathered rows hold the 501 real logits only)
equal_tp tp2_odd_vocab "$M/odd" 2
# MoE, experts tensor-parallel: each expert's intermediate columns split, the router replicated
equal_tp tp2_qwen3_moe "$M/moe" 2
equal_tp tp2_mixtral "$M/mixtral" 2
equal_tp tp2_moe_fp8_static "$M/moe-fp8-static" 2
equal_tp tp2_moe_nvfp4 "$M/moe-nvfp4" 2
# --enable-expert-parallel: whole experts per rank (4 of 8, 2 of 4), the other slots weigh 0
equal_tp ep2_qwen3_moe "$M/moe" "2 --enable-expert-parallel"
equal_tp ep2_mixtral "$M/mixtral" "2 --enable-expert-parallel"
equal_tp ep2_moe_nvfp4 "$M/moe-nvfp4" "2 --enable-expert-parallel"
# online FP8 quantizes every expert before the ranks keep their own: it runs and stops cleanly
gen "$TMP/ep_fp8.json" "$M/moe" -tp 2 --enable-expert-parallel --quantization fp8 &&
  python3 -c "import json,sys; sys.exit(0 if len(json.load(open('$TMP/ep_fp8.json'))['token_ids']) == 24 else 1)" &&
  grep -q "rank 0 stopped after" "$TMP/ep_fp8.json.err"
check ep2_online_fp8_runs $? "$(tail -c 400 "$TMP/ep_fp8.json.err")"
# Llama 4: 31 positions cross the 16-token attention chunk; Maverick's dense layers interleave
# with MoE ones; the shared expert is cut like a dense MLP, also under expert parallelism
equal_tp tp2_llama4_scout "$M/llama4" 2
equal_tp tp2_llama4_maverick "$M/maverick" 2
equal_tp ep2_llama4_scout "$M/llama4" "2 --enable-expert-parallel"
equal_tp ep2_llama4_maverick "$M/maverick" "2 --enable-expert-parallel"
equal_tp tp2_llama4_fp8_static "$M/llama4-fp8-static" 2

# a real trained model keeps llama2.c's greedy golden with its heads split over two ranks
S=$TMP/stories
if make_stories "$S"; then
  timeout 120 "$Q" generate "$S" --prompt-ids 1 --max-tokens 200 --temperature 0 --ignore-eos --json -tp 2 \
    >"$TMP/st.json" 2>"$TMP/st.err"
  python3 -c "import json,sys; d=json.load(open('$TMP/st.json')); sys.exit(0 if d['token_ids']==[int(x) for x in open('$SHARED/tinystories/golden_greedy_200_ids.txt').read().split()] else 1)"
  check stories_tp2_golden $? "$(tail -c 400 "$TMP/st.err")"
else
  skip stories_tp2_golden "stories260K or the converter is missing"
fi

# started by mpirun itself (as across hosts): the same tokens
timeout 120 mpirun -np 2 --oversubscribe --bind-to none $( [ "$(id -u)" = 0 ] && echo --allow-run-as-root ) \
  "$Q" generate "$M/llama" --prompt-ids 1,2,3,4,5,6,7 --max-tokens 24 --temperature 0 --ignore-eos --logprobs 1 \
  --json -tp 2 >"$TMP/mpi.json" 2>"$TMP/mpi.err" && why=$(same "$TMP/tp2_llama.1.json" "$TMP/mpi.json" 2>&1)
check mpirun_direct $? "${why:-$(tail -c 400 "$TMP/mpi.err")}"

refused() { # NAME EXPECTED_TEXT CMD...: fails (non-zero) within a minute, saying EXPECTED_TEXT
  local name=$1 want=$2; shift 2
  timeout 60 "$@" >"$TMP/r.out" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -qF -- "$want" "$TMP/r.out"
  check "$name" $? "rc $rc: $(tail -c 400 "$TMP/r.out")"
}
refused fp8_block_split_refused "32 output rows per rank do not split on its 128-element scale blocks" \
  "$Q" generate "$M/llama-fp8-block" --prompt-ids 1,2 --max-tokens 2 -tp 2
refused expert_parallel_dense_refused "--enable-expert-parallel: LlamaForCausalLM has no MoE layers" \
  "$Q" generate "$M/llama" --prompt-ids 1,2 --max-tokens 2 -tp 2 --enable-expert-parallel
refused pipeline_refused "--pipeline-parallel-size 2: pipeline parallelism is not implemented" \
  "$Q" serve "$M/llama" --pipeline-parallel-size 2

# `qserve backends -tp 2` shows each rank's shard shapes
"$Q" backends "$M/llama-fp8-dynamic" -tp 2 >"$TMP/b.out" 2>&1 &&
  grep -q "rank 1 of 2" "$TMP/b.out" && grep -q "q_proj.*\[32 x 64\]" "$TMP/b.out" && grep -q "o_proj.*\[64 x 32\]" "$TMP/b.out"
check backends_tp $? "$(tail -c 600 "$TMP/b.out")"

# the server: the openai client's checks (stories260K goldens) through two ranks
if [ -d "$S" ] && [ -d tests/node/node_modules/openai ] && command -v node >/dev/null; then
  if start_server "$S" -tp 2 --api-key nodekey; then
    QSERVE_TEST_KEY=nodekey timeout 120 node tests/node/openai_client.mjs "$URL" stories >"$TMP/node.out" 2>&1
    rc=$?
    ! grep -q '^not ok' "$TMP/node.out" && [ "$(grep -c '^ok' "$TMP/node.out")" -gt 3 ]
    check server_tp2_openai_client $? "node exited $rc: $(grep '^not ok' "$TMP/node.out" | head -3)"
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID"
    rc=$?
    SERVER_PID=
    [ $rc -eq 0 ] && grep -q "shutdown complete" "$TMP/server.log" && grep -q "\[rank 1\] tensor parallel: rank 0 stopped" "$TMP/server.log"
    check server_tp2_drains $? "rc $rc: $(tail -c 400 "$TMP/server.log")"
  else
    notok server_tp2_openai_client "$(tail -c 600 "$TMP/server.log")"
    skip server_tp2_drains "the server did not start"
  fi
else
  skip server_tp2_openai_client "stories260K, node or the openai package is missing"
  skip server_tp2_drains "stories260K, node or the openai package is missing"
fi

# rank_pid: the pid of tensor-parallel rank $1 among the server's processes
rank_pid() {
  local p
  for p in $(pgrep -f "qserve serve $M/llama"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
  done
}
# A rank killed (SIGKILL) or stopped (SIGSTOP: a hang) during a long request ends the server
# within seconds, non-zero, with an error that says what happened.
fault() { # NAME SIGNAL EXPECTED_TEXT
  if ! start_server "$M/llama" -tp 2; then
    notok "$1" "$(tail -c 600 "$TMP/server.log")"
    return
  fi
  curl -s --max-time 60 "$URL/v1/completions" -H "Content-Type: application/json" -d '{"model":"stories","prompt":[1,2,3],"max_tokens":2000,"n":16,"ignore_eos":true,"stream":true}' \
    >"$TMP/fault.out" 2>&1 &
  local cpid=$! r1 t0 rc
  # mid-request: once the first tokens have streamed (16 x 2000 tokens take seconds more)
  for _ in $(seq 1 100); do [ -s "$TMP/fault.out" ] && break; sleep 0.05; done
  r1=$(rank_pid 1)
  t0=$(date +%s)
  [ -n "$r1" ] && kill "-$2" "$r1"
  for _ in $(seq 1 200); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$SERVER_PID" 2>/dev/null && { kill -KILL "$SERVER_PID"; [ -n "$r1" ] && kill -KILL "$r1"; }
  wait "$SERVER_PID"
  rc=$?
  SERVER_PID=
  wait "$cpid"
  local took=$(( $(date +%s) - t0 ))
  [ -n "$r1" ] && [ $rc -ne 0 ] && [ $took -le 15 ] && grep -qF -- "$3" "$TMP/server.log" &&
    grep -q "the ranks ended with status" "$TMP/server.log"
  check "$1" $? "rank 1 pid '$r1', exit $rc after ${took}s: $(tail -c 500 "$TMP/server.log")"
}
fault kill_rank_ends_server KILL "process rank 1"
export QSERVE_TP_TIMEOUT=3
fault hung_rank_ends_server STOP "waited 3 s for the other ranks: a rank died or hangs"
exit 0
