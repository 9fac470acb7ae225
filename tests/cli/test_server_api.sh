#!/usr/bin/env bash
# test_server_api.sh — the HTTP API with curl against a real model (stories260K on CPU): every
# endpoint, the OpenAI parameters (greedy output equal to `qserve generate`, streaming equal to
# non-streaming, stop strings, n, seed, logprobs, echo, token-id prompts, logit_bias, usage), the
# error bodies and statuses (400 with param, 404, 405, 413, 401), client disconnects freeing
# their sequences, and SIGTERM exiting 0.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_api "stories260K or the converter is missing ($STORIES_DATA, $BUILD_DIR/convert-llama2c)"
  exit 0
fi

# --- startup errors ---
# (tensor parallelism itself: tests/cli/test_tp.sh) a rank count that does not split the model's
# 8 heads ends every rank with the reason; pipeline parallelism is refused before anything starts
timeout 60 "$BIN" serve "$MODEL" --tensor-parallel-size 3 --host 127.0.0.1 --port 0 >"$TMP/tp.out" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "tensor-parallel-size 3 does not divide num_attention_heads" "$TMP/tp.out"
check tensor_parallel_is_a_clear_error $? "rc $rc: $(tail -c 300 "$TMP/tp.out")"
"$BIN" serve "$MODEL" --pipeline-parallel-size 2 >"$TMP/pp.out" 2>&1
check pipeline_parallel_is_a_clear_error $(( $? == 2 ? 0 : 1 )) "$(head -c 200 "$TMP/pp.out")"
grep -q "pipeline-parallel-size 2" "$TMP/pp.out"
check pipeline_parallel_message_names_flag $? "$(head -c 200 "$TMP/pp.out")"
timeout 20 "$BIN" serve "$TMP/no-such-model" --host 127.0.0.1 --port 0 >"$TMP/bad.out" 2>&1
check missing_model_exits_1 $(( $? == 1 ? 0 : 1 )) "$(tail -c 300 "$TMP/bad.out")"

if ! start_server "$MODEL" --max-num-seqs 8 --seed 7; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
ok server_starts
grep -q "listening on http://127.0.0.1:$PORT" "$TMP/server.log"
check startup_logs_url $? "no URL line"

# --- simple endpoints ---
check health_200 $(( $(curl -s -o /dev/null -w '%{http_code}' "$URL/health") == 200 ? 0 : 1 )) ""
models=$(curl -s "$URL/v1/models")
[ "$(echo "$models" | json '.data[0].id')" = stories ] && [ "$(echo "$models" | json '.object')" = list ]
check models_lists_served_name $? "$models"
[ "$(status_of /v1/models '' -X POST)" = 405 ]
check wrong_method_405 $? "$(cat "$TMP/body")"
[ "$(status_of /v1/nothing '{}')" = 404 ]
check unknown_route_404 $? "$(cat "$TMP/body")"

# --- completions: greedy equals `qserve generate` ---
PROMPT="Once upon a time"
want=$("$BIN" generate "$MODEL" --prompt "$PROMPT" --max-tokens 40 --temperature 0 2>/dev/null)
resp=$(curl -s "$URL/v1/completions" -d "{\"model\":\"stories\",\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0}")
text=$(echo "$resp" | json '.choices[0].text')
[ -n "$want" ] && [ "$text" = "$want" ]
check completion_greedy_matches_generate $? "got '$text' want '$want'"
shape=$(echo "$resp" | json '[r.object, r.id.startsWith("cmpl-"), typeof r.created, r.model, r.choices[0].index, r.choices[0].finish_reason, r.usage.completion_tokens, r.usage.total_tokens - r.usage.prompt_tokens]')
[ "$shape" = '["text_completion",true,"number","stories",0,"length",40,40]' ]
check completion_response_shape $? "$shape"
ntok=$(curl -s "$URL/tokenize" -d "{\"prompt\":\"$PROMPT\"}" | json '.count')
[ "$(echo "$resp" | json '.usage.prompt_tokens')" = "$ntok" ]
check usage_prompt_tokens_match_tokenize $? "tokenize says $ntok: $resp"

# token-id prompt gives the same text
ids=$(curl -s "$URL/tokenize" -d "{\"prompt\":\"$PROMPT\"}" | json '.tokens')
t2=$(curl -s "$URL/v1/completions" -d "{\"prompt\":$ids,\"max_tokens\":40,\"temperature\":0}" | json '.choices[0].text')
[ "$t2" = "$want" ]
check token_id_prompt_same_text $? "$t2"
# list of prompts and list of token-id lists
two=$(curl -s "$URL/v1/completions" -d "{\"prompt\":[\"$PROMPT\",\"The dog\"],\"max_tokens\":8,\"temperature\":0}")
[ "$(echo "$two" | json '.choices.map(c=>c.index)')" = '[0,1]' ] && [ "$(echo "$two" | json '.choices[0].text')" = "$(echo "$want" | head -c 0)$(echo "$two" | json '.choices[0].text')" ]
check list_of_prompts_two_choices $? "$two"
two_ids=$(curl -s "$URL/v1/completions" -d "{\"prompt\":[$ids,$ids],\"max_tokens\":8,\"temperature\":0}" | json '[r.choices.length, r.choices[0].text === r.choices[1].text]')
[ "$two_ids" = '[2,true]' ]
check list_of_token_id_lists $? "$two_ids"

# streaming: chunks concatenate to the same text, end with [DONE], usage chunk when asked
curl -sN "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$TMP/stream"
streamed=$(grep '^data: {' "$TMP/stream" | sed 's/^data: //' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let t="";for(const l of s.trim().split("\n")){const c=JSON.parse(l);for(const ch of c.choices)t+=ch.text;}process.stdout.write(t)})')
[ "$streamed" = "$want" ]
check stream_concatenation_equals_whole $? "got '$streamed'"
[ "$(tail -n 2 "$TMP/stream" | head -1)" = "data: [DONE]" ]
check stream_ends_with_done $? "$(tail -c 200 "$TMP/stream")"
usage=$(grep '^data: {' "$TMP/stream" | tail -1 | sed 's/^data: //' | json '[r.choices.length, r.usage.completion_tokens]')
[ "$usage" = '[0,40]' ]
check stream_include_usage_chunk $? "$usage"
fin=$(grep '^data: {' "$TMP/stream" | tail -2 | head -1 | sed 's/^data: //' | json '.choices[0].finish_reason')
[ "$fin" = length ]
check stream_last_choice_finish_reason $? "$fin"

# stop strings: output ends before the stop string, finish_reason stop
stop_word=$(echo "$want" | awk '{print $5}')
sresp=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"stop\":[\"zzz\",\"$stop_word\"]}")
stext=$(echo "$sresp" | json '.choices[0].text')
case "$want" in "$stext$stop_word"*) r=0;; *) r=1;; esac
[ "$(echo "$sresp" | json '.choices[0].finish_reason')" = stop ] && [ $r -eq 0 ] && [ "${stext#*$stop_word}" = "$stext" ]
check stop_string_cuts_output $? "stop '$stop_word': '$stext'"
sstream=$(curl -sN "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"stop\":\"$stop_word\",\"stream\":true}" | grep '^data: {' | sed 's/^data: //' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let t="";for(const l of s.trim().split("\n")){for(const ch of JSON.parse(l).choices)t+=ch.text;}process.stdout.write(t)})')
[ "$sstream" = "$stext" ]
check stop_string_streamed_same $? "'$sstream' vs '$stext'"
inc=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"stop\":\"$stop_word\",\"include_stop_str_in_output\":true}" | json '.choices[0].text')
[ "$inc" = "$stext$stop_word" ]
check include_stop_str_in_output $? "$inc"

# stop_token_ids: stop at the 3rd generated token
third=$("$BIN" generate "$MODEL" --prompt "$PROMPT" --max-tokens 3 --temperature 0 --json 2>/dev/null | json '.token_ids[2]')
st=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":40,\"temperature\":0,\"stop_token_ids\":[$third]}" | json '[r.choices[0].finish_reason, r.usage.completion_tokens]')
[ "$st" = '["stop",3]' ]
check stop_token_ids $? "$st (token $third)"

# echo, logprobs, n, seed, logit_bias, ignore_eos, max_tokens default
echo_text=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":5,\"temperature\":0,\"echo\":true}" | json '.choices[0].text')
case "$echo_text" in "$PROMPT"*) r=0;; *) r=1;; esac
check echo_prepends_prompt $r "$echo_text"
lp=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":6,\"temperature\":0,\"logprobs\":2}" | json '[r.choices[0].logprobs.tokens.length, r.choices[0].logprobs.token_logprobs.every(x=>x<=0), r.choices[0].logprobs.top_logprobs.every(o=>Object.keys(o).length>=1 && Object.keys(o).length<=3), r.choices[0].logprobs.text_offset[0]]')
[ "$lp" = '[6,true,true,0]' ]
check completion_logprobs $? "$lp"
clp=$(curl -s "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Tom"}],"max_tokens":4,"temperature":0,"logprobs":true,"top_logprobs":3}' | json '[r.choices[0].logprobs.content.length, r.choices[0].logprobs.content[0].top_logprobs.length, Array.isArray(r.choices[0].logprobs.content[0].bytes)]')
[ "$clp" = '[4,3,true]' ]
check chat_logprobs $? "$clp"
n3=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":12,\"temperature\":1,\"seed\":42,\"n\":3}")
n3b=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":12,\"temperature\":1,\"seed\":42,\"n\":3}")
[ "$(echo "$n3" | json '[r.choices.length, r.usage.completion_tokens]')" = '[3,36]' ]
check n_3_choices $? "$n3"
[ "$(echo "$n3" | json '.choices.map(c=>c.text)')" = "$(echo "$n3b" | json '.choices.map(c=>c.text)')" ]
check seed_reproducible $? "$(echo "$n3" | json '.choices.map(c=>c.text)') vs $(echo "$n3b" | json '.choices.map(c=>c.text)')"
[ "$(echo "$n3" | json 'new Set(r.choices.map(c=>c.text)).size')" -gt 1 ]
check n_samples_differ $? "$(echo "$n3" | json '.choices.map(c=>c.text)')"
the_id=$(curl -s "$URL/tokenize" -d '{"prompt":"the","add_special_tokens":false}' | json '.tokens[0]')
lb=$(curl -s "$URL/v1/completions" -d "{\"prompt\":[1],\"max_tokens\":5,\"temperature\":0,\"logit_bias\":{\"$the_id\":100}}" | json '.choices[0].text')
[ "$(curl -s "$URL/tokenize" -d "{\"prompt\":\"$lb\",\"add_special_tokens\":false}" | json 'new Set(r.tokens).size')" = 1 ]
check logit_bias_forces_token $? "'$lb'"
ie=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":300,\"temperature\":0,\"ignore_eos\":true,\"stop_token_ids\":[]}" | json '[r.usage.completion_tokens, r.choices[0].finish_reason]')
[ "$ie" = '[300,"length"]' ]
check ignore_eos_runs_to_max_tokens $? "$ie"
df=$(curl -s "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"temperature\":0}" | json '[r.choices[0].finish_reason, r.usage.completion_tokens > 0]')
case "$df" in '["stop",true]'|'["length",true]') r=0;; *) r=1;; esac
check max_tokens_defaults_to_context $r "$df"
pen=$(post /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":20,\"temperature\":0.8,\"top_p\":0.9,\"top_k\":20,\"min_p\":0.05,\"presence_penalty\":0.5,\"frequency_penalty\":0.5,\"repetition_penalty\":1.1,\"user\":\"u1\",\"seed\":1}" | tail -1)
[ "$pen" = 200 ]
check sampling_parameters_accepted $? "$pen"

# --- chat ---
chat=$(curl -s "$URL/v1/chat/completions" -d '{"model":"stories","messages":[{"role":"user","content":"Lily went to"}],"max_tokens":20,"temperature":0}')
cshape=$(echo "$chat" | json '[r.object, r.id.startsWith("chatcmpl-"), r.choices[0].message.role, r.choices[0].message.content.length>0, r.usage.completion_tokens]')
[ "$cshape" = '["chat.completion",true,"assistant",true,20]' ]
check chat_completion_shape $? "$chat"
chat_want=$("$BIN" generate "$MODEL" --chat --prompt "Lily went to" --max-tokens 20 --temperature 0 2>/dev/null)
[ "$(echo "$chat" | json '.choices[0].message.content')" = "$chat_want" ]
check chat_greedy_matches_generate_chat $? "'$(echo "$chat" | json '.choices[0].message.content')' vs '$chat_want'"
curl -sN "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Lily went to"}],"max_tokens":20,"temperature":0,"stream":true}' >"$TMP/cstream"
cs=$(grep '^data: {' "$TMP/cstream" | sed 's/^data: //' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const L=s.trim().split("\n").map(JSON.parse);let t="";for(const c of L)for(const ch of c.choices)t+=ch.delta.content||"";process.stdout.write(JSON.stringify([L[0].object,L[0].choices[0].delta.role,t,L[L.length-1].choices[0].finish_reason]))})')
[ "$cs" = "$(node -e 'process.stdout.write(JSON.stringify(["chat.completion.chunk","assistant",process.argv[1],"length"]))' "$(echo "$chat" | json '.choices[0].message.content')")" ]
check chat_stream_matches_whole $? "$cs"
tools=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"none","chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":true}' | tail -1)
[ "$tools" = 200 ]
check chat_tools_and_kwargs_passthrough $? "$tools"
# tools without tool_choice mean "auto", which needs --enable-auto-tool-choice (vLLM's answer)
auto=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]}')
[ "$(echo "$auto" | tail -1)" = 400 ] && [ "$(echo "$auto" | head -n -1 | json '.error.param')" = tool_choice ]
check chat_tools_auto_needs_flag $? "$auto"

# --- tokenize / detokenize ---
tk=$(curl -s "$URL/tokenize" -d '{"model":"stories","prompt":"Hello world"}')
[ "$(echo "$tk" | json '[r.count === r.tokens.length, r.max_model_len]')" = '[true,512]' ]
check tokenize_body $? "$tk"
dt=$(curl -s "$URL/detokenize" -d "{\"tokens\":$(echo "$tk" | json '.tokens.slice(1)')}" | json '.prompt')
[ "$dt" = "Hello world" ]
check detokenize_roundtrip $? "'$dt'"
[ "$(status_of /detokenize '{"tokens":[99999]}')" = 400 ]
check detokenize_bad_id_400 $? "$(cat "$TMP/body")"
tkc=$(curl -s "$URL/tokenize" -d '{"messages":[{"role":"user","content":"Hi"}]}' | json '.count')
[ "$tkc" -ge 2 ] 2>/dev/null
check tokenize_messages $? "$tkc"

# --- errors ---
err_is() { # NAME STATUS PARAM PATH BODY [curl args]: status and error body fields
  local name=$1 want=$2 param=$3 path=$4 body=$5; shift 5
  local got; got=$(status_of "$path" "$body" "$@")
  local fields; fields=$(json '[r.error.type.length>0, r.error.message.length>0, r.error.param, "code" in r.error]' <"$TMP/body" 2>/dev/null)
  [ "$got" = "$want" ] && [ "$fields" = "[true,true,$param,true]" ]
  check "$name" $? "status $got body $(head -c 300 "$TMP/body")"
}
err_is malformed_json_400 400 null /v1/completions '{"prompt": "x",'
err_is not_an_object_400 400 null /v1/completions '[1,2,3]'
err_is wrong_type_400 400 '"max_tokens"' /v1/completions '{"prompt":"x","max_tokens":"ten"}'
err_is out_of_range_400 400 '"temperature"' /v1/completions '{"prompt":"x","temperature":5}'
err_is huge_number_400 400 '"max_tokens"' /v1/completions '{"prompt":"x","max_tokens":1e999}'
err_is negative_n_400 400 '"n"' /v1/completions '{"prompt":"x","n":-1}'
err_is missing_prompt_400 400 '"prompt"' /v1/completions '{"max_tokens":3}'
err_is bad_token_id_400 400 '"prompt"' /v1/completions '{"prompt":[1,600]}'
err_is chat_missing_messages_400 400 '"messages"' /v1/chat/completions '{"prompt":"x"}'
err_is unknown_model_404 404 '"model"' /v1/completions '{"model":"gpt-9","prompt":"x"}'
err_is too_long_400 400 '"max_tokens"' /v1/completions "{\"prompt\":\"$PROMPT\",\"max_tokens\":600}"
grep -q "512" "$TMP/body" && grep -q "605" "$TMP/body"
check too_long_message_has_both_numbers $? "$(cat "$TMP/body")"
long_prompt=$(printf 'the dog ran %.0s' $(seq 1 300))
err_is prompt_beyond_context_400 400 '"prompt"' /v1/completions "{\"prompt\":\"$long_prompt\",\"max_tokens\":5}"
err_is invalid_utf8_400 400 '"prompt"' /v1/completions "$(printf '{"prompt":"bad \xff\xfe bytes"}')"
head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$TMP/big"
big=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$TMP/big" "$URL/v1/completions")
[ "$big" = 413 ]
check oversize_body_413 $? "$big"
big_chunked=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/big" "$URL/v1/completions")
[ "$big_chunked" = 413 ]
check oversize_chunked_body_413 $? "$big_chunked"

# --- a client that disconnects has its sequence aborted at once ---
running() { curl -s "$URL/metrics" | awk '/^vllm:num_requests_running/ {print $2}'; }
# 32 x 450 tokens keep the engine busy for many seconds; the clients give up after a second
# (long enough to be admitted even on a loaded machine). The server notices at its next step.
curl -sN --max-time 1 "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":450,\"n\":32,\"ignore_eos\":true,\"stream\":true}" >/dev/null 2>&1
curl -s --max-time 1 "$URL/v1/completions" -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":450,\"n\":32,\"ignore_eos\":true}" >/dev/null 2>&1
disconnects() { curl -s "$URL/metrics" | awk '/^qserve:http_client_disconnects_total/ {print $2}'; }
idle=1
for _ in $(seq 1 100); do [ "$(running)" = 0 ] && [ "$(disconnects)" -ge 2 ] 2>/dev/null && { idle=0; break; }; sleep 0.1; done
check disconnect_frees_sequences $idle "running=$(running)"
disc=$(disconnects)
[ "${disc:-0}" -ge 2 ]
check disconnects_counted $? "disconnects=$disc"
aborts=$(curl -s "$URL/metrics" | grep 'finished_reason="abort"' | awk '{print $2}')
[ "${aborts:-0}" -ge 16 ]
check aborted_sequences_in_metrics $? "aborts=$aborts"
free_after=$(curl -s "$URL/metrics" | awk '/^vllm:kv_cache_usage_perc/ {print $2}')
[ "$free_after" = 0 ]
check kv_cache_empty_after_disconnects $? "usage=$free_after"

# --- metrics ---
curl -s "$URL/metrics" >"$TMP/metrics"
missing=""
for m in 'vllm:num_requests_running{model_name="stories",engine="0"}' 'vllm:num_requests_waiting{' 'vllm:kv_cache_usage_perc{' \
         'vllm:prompt_tokens_total{' 'vllm:generation_tokens_total{' 'vllm:request_success_total{model_name="stories",engine="0",finished_reason="length"}' \
         'vllm:time_to_first_token_seconds_bucket{' 'vllm:inter_token_latency_seconds_count{' 'vllm:e2e_request_latency_seconds_sum{' \
         '# TYPE vllm:time_to_first_token_seconds histogram'; do
  grep -qF "$m" "$TMP/metrics" || missing="$missing $m"
done
[ -z "$missing" ]
check metrics_names $? "missing:$missing"
gen=$(awk '/^vllm:generation_tokens_total/ {print $2}' "$TMP/metrics")
[ "${gen:-0}" -gt 500 ]
check metrics_count_tokens $? "generation_tokens_total=$gen"

# --- SIGTERM: graceful exit 0 ---
kill -TERM "$SERVER_PID"
rc=1
for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SERVER_PID"; rc=$?
SERVER_PID=
check sigterm_exits_0 $rc "exit $rc: $(tail -c 300 "$TMP/server.log")"

# --- bounded waiting queue: 429 beyond --max-num-queued-reqs ---
if start_server "$MODEL" --max-num-seqs 1 --max-num-queued-reqs 1; then
  pids=()
  for i in 1 2 3 4 5 6; do
    curl -s -o "$TMP/q$i" -w '%{http_code}\n' --max-time 60 "$URL/v1/completions" \
      -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":400,\"ignore_eos\":true}" >"$TMP/q$i.status" &
    pids+=($!)
  done
  wait "${pids[@]}"
  codes=$(cat "$TMP"/q?.status | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  n429=$(cat "$TMP"/q?.status | grep -c 429); n200=$(cat "$TMP"/q?.status | grep -c 200)
  body429=$(for i in 1 2 3 4 5 6; do grep -q 429 "$TMP/q$i.status" && { cat "$TMP/q$i"; break; }; done)
  [ "$n429" -ge 1 ] && [ "$n200" -ge 2 ] && [ $((n429 + n200)) -eq 6 ] && \
    [ "$(echo "$body429" | json '[r.error.type, r.error.message.includes("--max-num-queued-reqs 1")]')" = '["rate_limit_error",true]' ]
  check queue_full_429 $? "codes $codes body $body429"
  stop_server
else
  notok queue_server_starts "$(tail -c 300 "$TMP/server.log")"
fi

# --- /health is 503 while the model loads (tokenizer.json is a FIFO the test fills later) ---
SLOW=$TMP/slow
mkdir -p "$SLOW" && cp "$MODEL"/* "$SLOW"/ && rm "$SLOW/tokenizer.json" && mkfifo "$SLOW/tokenizer.json"
"$BIN" serve "$SLOW" --host 127.0.0.1 --port 0 --served-model-name stories >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
PORT=
for _ in $(seq 1 100); do
  PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$TMP/server.log" | head -1 | sed 's/.*://')
  [ -n "$PORT" ] && break; sleep 0.1
done
URL="http://127.0.0.1:$PORT"
h1=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health")
c1=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}')
cat "$MODEL/tokenizer.json" >"$SLOW/tokenizer.json"
h2=000
for _ in $(seq 1 100); do
  h2=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/health"); [ "$h2" = 200 ] && break; sleep 0.1
done
[ "$h1 $c1 $h2" = "503 503 200" ]
check health_503_while_loading_then_200 $? "health $h1, completions $c1, then health $h2"
stop_server

# --- API key ---
if start_server "$MODEL" --api-key sekret; then
  a1=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}')
  a1_code=$(json '.error.code' <"$TMP/body")
  a2=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}' -H 'Authorization: Bearer wrong')
  a3=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}' -H 'Authorization: Bearer sekret')
  a4=$(curl -s -o /dev/null -w '%{http_code}' "$URL/health")
  a5=$(curl -s -o /dev/null -w '%{http_code}' "$URL/metrics")
  a6=$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/models")
  [ "$a1 $a2 $a3 $a4 $a5 $a6 $a1_code" = "401 401 200 200 200 401 invalid_api_key" ]
  check api_key_required_on_v1_only $? "$a1 $a2 $a3 $a4 $a5 $a6 $a1_code"
  stop_server
else
  notok api_key_server_starts "$(tail -c 300 "$TMP/server.log")"
fi
QSERVE_API_KEY=envkey start_server "$MODEL" && {
  e1=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}' -H 'Authorization: Bearer envkey')
  e2=$(status_of /v1/completions '{"prompt":"x","max_tokens":2}')
  [ "$e1 $e2" = "200 401" ]
  check api_key_from_environment $? "$e1 $e2"
  stop_server
}
exit 0
