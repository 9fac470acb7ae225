#!/usr/bin/env bash
# test_checkpoint_matrix.sh — every CLI subcommand (generate with a prompt and with ids, serve,
# backends, quantize, chat-template, tokenize, detokenize) on every corrupt-checkpoint fixture and
# on folders with each optional file missing (tests/cli/make_corrupt_checkpoints.py), over two
# bases: stories260K (one file) and a sharded tiny-qwen3 (index + 3 shards, chat template). Each
# run must end in a clean error (exit 1 or 2 with an "error:" line) or success — never a signal,
# a hang or a sanitizer report; `make SANITIZE=1 test` runs it under ASan/UBSan. Folders that only
# miss an optional file must still generate and serve. One line per fixture and command kind.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

STORIES=$TMP/stories
QWEN=$TMP/qwen
make_stories "$STORIES" || { skip checkpoint_matrix "stories260K or the converter is missing"; exit 0; }
"$BIN" init-model "$QWEN" --shape tiny-qwen3 --shard-size 0.0001 >"$TMP/init.log" 2>&1 ||
  { notok init_model_base "$(tail -c 300 "$TMP/init.log")"; exit 0; }
python3 tests/cli/make_corrupt_checkpoints.py "$STORIES" "$TMP/fx-stories" >"$TMP/stories.list" ||
  { notok make_fixtures_stories ""; exit 0; }
python3 tests/cli/make_corrupt_checkpoints.py "$QWEN" "$TMP/fx-qwen" >"$TMP/qwen.list" ||
  { notok make_fixtures_qwen ""; exit 0; }
echo '[{"role":"user","content":"Hi"}]' >"$TMP/messages.json"

# clean RC LOG: 0 when the run ended in success or a clean error (no signal, no hang, no sanitizer).
clean() {
  local rc=$1 log=$2
  [ "$rc" -ge 124 ] && return 1
  grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$log" && return 1
  [ "$rc" -eq 0 ] && return 0
  { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } && grep -qi 'error' "$log"
}

# serve_once DIR LOG: starts serve; if it gets ready, one completion then SIGTERM. Prints the rc.
serve_once() {
  local dir=$1 log=$2 pid port rc=124
  "$BIN" serve "$dir" --host 127.0.0.1 --port 0 --served-model-name m --max-num-seqs 2 >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; echo $?; return; fi
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | head -1 | sed 's/.*://')
    if [ -n "$port" ] && [ "$(command curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ]; then
      command curl -s --max-time 30 -o "$log.resp" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"prompt":"Hi","max_tokens":2}' "http://127.0.0.1:$port/v1/completions" >"$log.code"
      kill -TERM "$pid"
      for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; wait "$pid" 2>/dev/null; echo 124; return; }
      wait "$pid"; rc=$?
      # a served folder must answer the completion (200, or 400 for a model without a tokenizer)
      grep -qE '^(200|400)$' "$log.code" || rc=125
      echo $rc; return
    fi
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  echo 124
}

run_matrix() { # BASE_NAME LIST FIXTURE_ROOT
  local base=$1 list=$2 root=$3
  while read -r name kind; do
    local dir=$root/$name bad="" rc
    local -a cmds=(
      "generate-prompt|$BIN generate $dir --prompt Hi --max-tokens 2"
      "generate-ids|$BIN generate $dir --prompt-ids 1,2,3 --max-tokens 2"
      "tokenize|$BIN tokenize $dir --text Hi"
      "detokenize|$BIN detokenize $dir 1,2,3"
      "chat-template|$BIN chat-template $dir --messages $TMP/messages.json"
      "backends|$BIN backends $dir"
      "quantize|$BIN quantize $dir $TMP/q-out --scheme fp8-dynamic"
    )
    for c in "${cmds[@]}"; do
      local what=${c%%|*} cmd=${c#*|} log="$TMP/run.log"
      rm -rf "$TMP/q-out"
      timeout 60 $cmd >"$log" 2>&1 </dev/null; rc=$?
      clean "$rc" "$log" || bad="$bad $what(rc $rc: $(grep -m1 -E 'Sanitizer|runtime error|error' "$log" | head -c 160))"
      if [ "$kind" = optional ] && [ "$what" = generate-prompt ] && [ "$rc" -ne 0 ]; then
        bad="$bad $what-must-succeed(rc $rc: $(head -c 160 "$log"))"
      fi
    done
    rc=$(serve_once "$dir" "$TMP/serve.log")
    clean "$rc" "$TMP/serve.log" || bad="$bad serve(rc $rc: $(grep -m1 -E 'Sanitizer|runtime error|error' "$TMP/serve.log" | head -c 160))"
    [ "$kind" = optional ] && [ "$rc" -ne 0 ] && bad="$bad serve-must-succeed(rc $rc)"
    if [ -z "$bad" ]; then ok "${base}_${name}"; else notok "${base}_${name}" "$bad"; fi
  done <"$list"
}

start=$(date +%s)
run_matrix stories "$TMP/stories.list" "$TMP/fx-stories"
run_matrix qwen "$TMP/qwen.list" "$TMP/fx-qwen"
echo "# matrix took $(( $(date +%s) - start )) s"

# The specific regressions of issue 44 items 5 and 10, by message:
"$BIN" generate "$TMP/fx-stories/config-million-layers" --prompt Hi --max-tokens 1 >"$TMP/ml.log" 2>&1
grep -q "num_hidden_layers is 1000000 but the checkpoint's tensors stop at layer 4" "$TMP/ml.log"
check million_layers_refused_from_the_index $? "$(tail -c 300 "$TMP/ml.log")"
timeout 30 "$BIN" serve "$TMP/fx-stories/generation-config-malformed" --host 127.0.0.1 --port 0 >"$TMP/gc.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "generation_config.json" "$TMP/gc.log"
check serve_refuses_malformed_generation_config $? "rc $rc: $(tail -c 300 "$TMP/gc.log")"
"$BIN" generate "$TMP/fx-stories/generation-config-malformed" --prompt Hi --max-tokens 1 >"$TMP/gc2.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "generation_config.json" "$TMP/gc2.log"
check generate_refuses_malformed_generation_config $? "rc $rc: $(tail -c 300 "$TMP/gc2.log")"
"$BIN" generate "$TMP/fx-stories/no-tokenizer-no-eos" --prompt-ids 1,2,3 --max-tokens 3 >"$TMP/nt.log" 2>&1
check generate_without_tokenizer_or_eos_succeeds $? "$(tail -c 300 "$TMP/nt.log")"
"$BIN" generate "$TMP/fx-stories/st-tensor-dropped" --prompt Hi --max-tokens 1 >"$TMP/td.log" 2>&1
grep -q "tensor model.layers.0.mlp.gate_proj.weight .*not found in the checkpoint; note: .*belong to no tensor" "$TMP/td.log"
check dropped_tensor_named_by_its_name $? "$(tail -c 300 "$TMP/td.log")"
