#!/usr/bin/env bash
# test_server_flags.sh — vLLM's server flags on stories260K (CPU): sampling defaults from
# generation_config.json (auto, a FOLDER, vllm, --override-generation-config; the log names them;
# a malformed file stops serve and generate naming it), --max-logprobs, --response-role, CORS
# (preflight and simple requests), --root-path, --enable-log-requests (bounded), several
# --served-model-name, -tp, --chat-template (file and inline), vLLM flags refused by value, and
# convert-llama2c's generation_config.json ending stories on <s> (id 1) as llama2.c does.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_flags "stories260K or the converter is missing ($SHARED/tinystories, $BUILD_DIR/convert-llama2c)"
  exit 0
fi
stop_with() { stop_server; cp "$TMP/server.log" "$TMP/$1.log"; }

# --- convert-llama2c: the model ends on <s> -------------------------------------------------------
[ "$(json '.eos_token_id' <"$MODEL/generation_config.json")" = "[1,2]" ]
check converter_generation_config_ends_on_bos $? "$(cat "$MODEL/generation_config.json")"

# --- sampling defaults: auto reads the model folder's generation_config.json ------------------------
AUTO=$TMP/auto
cp -r "$MODEL" "$AUTO"
echo '{"bos_token_id": 1, "eos_token_id": [1, 2], "temperature": 0.0, "max_new_tokens": 6}' >"$AUTO/generation_config.json"
start_server "$AUTO" || { notok server_starts "$(tail -c 400 "$TMP/server.log")"; exit 0; }
grep -q "default sampling parameters for requests that do not set them: temperature=0, max_tokens=6 (from $AUTO/generation_config.json" "$TMP/server.log"
check startup_log_names_generation_defaults $? "$(grep -i 'sampling' "$TMP/server.log")"
greedy=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":6,"temperature":0}' | head -1 | json '.choices[0].text')
a=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":50}' | head -1)
b=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":50}' | head -1)
[ "$(echo "$a" | json '.choices[0].text')" = "$greedy" ] && [ "$(echo "$b" | json '.choices[0].text')" = "$greedy" ] && \
  [ "$(echo "$a" | json '.usage.completion_tokens')" = 6 ]
check generation_config_temperature_and_max_new_tokens_apply $? "greedy '$greedy'; got $a"
# a request that sets temperature keeps it: two seeds give two texts at temperature 1
s1=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":4,"temperature":1,"seed":1}' | head -1 | json '.choices[0].text')
s2=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":4,"temperature":1,"seed":2}' | head -1 | json '.choices[0].text')
s3=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":4,"temperature":1,"seed":3}' | head -1 | json '.choices[0].text')
[ "$s1" != "$greedy" ] || [ "$s2" != "$greedy" ] || [ "$s3" != "$greedy" ]
check request_temperature_beats_default $? "'$s1' '$s2' '$s3' vs '$greedy'"
stop_with auto

# --- --generation-config vllm ignores the file; FOLDER reads another; override on top ------------------
start_server "$AUTO" --generation-config vllm || { notok server_starts_vllm "$(tail -c 400 "$TMP/server.log")"; exit 0; }
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":20,"ignore_eos":true}' | head -1)
[ "$(echo "$r" | json '.usage.completion_tokens')" = 20 ] && grep -q "default sampling parameters: vLLM's (vLLM's defaults (--generation-config vllm))" "$TMP/server.log"
check generation_config_vllm_takes_no_defaults $? "$r; $(grep -i sampling "$TMP/server.log")"
stop_with vllm
mkdir -p "$TMP/gc"
echo '{"top_k": 1, "max_new_tokens": 9}' >"$TMP/gc/generation_config.json"
start_server "$MODEL" --generation-config "$TMP/gc" --override-generation-config '{"max_new_tokens": 3}' || {
  notok server_starts_folder "$(tail -c 400 "$TMP/server.log")"; exit 0; }
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":20}' | head -1)
t=$(echo "$r" | json '.choices[0].text')
[ "$(echo "$r" | json '.usage.completion_tokens')" = 3 ] && [ -n "$t" ] && [ "${greedy#"$t"}" != "$greedy" ] && \
  grep -q "top_k=1, max_tokens=3 (from $TMP/gc/generation_config.json with --override-generation-config" "$TMP/server.log"
check generation_config_folder_and_override $? "$r; $(grep -i sampling "$TMP/server.log")"
stop_with folder

echo '{"temperature": "hot"}' >"$TMP/gc/generation_config.json"
"$BIN" serve "$MODEL" --port 0 --generation-config "$TMP/gc" >"$TMP/bad.out" 2>&1
rc=$?
"$BIN" generate "$MODEL" --prompt hi --generation-config "$TMP/gc" >"$TMP/badgen.out" 2>&1
rcg=$?
cp -r "$MODEL" "$TMP/badmodel" && cp "$TMP/gc/generation_config.json" "$TMP/badmodel/"
"$BIN" generate "$TMP/badmodel" --prompt hi >"$TMP/badgen2.out" 2>&1
rcg2=$?
[ $rc -ne 0 ] && [ $rcg -ne 0 ] && [ $rcg2 -ne 0 ] && grep -q "$TMP/gc/generation_config.json: field 'temperature' must be a number" "$TMP/bad.out" && \
  grep -q "$TMP/gc/generation_config.json: field 'temperature' must be a number" "$TMP/badgen.out" && \
  grep -q "$TMP/badmodel/generation_config.json: field 'temperature' must be a number" "$TMP/badgen2.out"
check malformed_generation_config_stops_serve_and_generate $? "serve $rc: $(tail -1 "$TMP/bad.out"); generate $rcg: $(tail -1 "$TMP/badgen.out")"
"$BIN" serve "$MODEL" --port 0 --override-generation-config '{"temprature": 1}' >"$TMP/badov.out" 2>&1
[ $? -ne 0 ] && grep -q "unknown key 'temprature'" "$TMP/badov.out"
check override_unknown_key_refused $? "$(tail -1 "$TMP/badov.out")"

# --- one server with many flags; first: the model ends its story on <s> (finish_reason stop) ---------
start_server "$MODEL" --served-model-name stories other -tp 1 --max-logprobs 3 --response-role bot \
  --root-path /api --enable-log-requests --allowed-origins '["https://ok.example"]' --allow-credentials || {
  notok server_starts_flags "$(tail -c 400 "$TMP/server.log")"; exit 0; }
r=$(post /v1/completions '{"prompt":"Once upon a time","max_tokens":500,"temperature":0}' | head -1)
[ "$(echo "$r" | json '.choices[0].finish_reason')" = stop ] && [ "$(echo "$r" | json '.usage.completion_tokens')" -lt 500 ]
check story_ends_on_bos $? "$(echo "$r" | tail -c 300)"

# --- several served names, the first reported ------------------------------------------------------------
models=$(curl -s "$URL/v1/models" | json 'r.data.map(m => m.id).join(",")')
r=$(post /v1/completions '{"model":"other","prompt":"Once","max_tokens":2}')
[ "$models" = "stories,other" ] && [ "$(echo "$r" | tail -1)" = 200 ] && [ "$(echo "$r" | head -1 | json '.model')" = stories ] && \
  [ "$(status_of /v1/completions '{"model":"third","prompt":"Once","max_tokens":2}')" = 404 ] && \
  [ "$(status_of /tokenize '{"model":"other","prompt":"Once"}')" = 200 ]
check several_served_model_names $? "models '$models'; $r"

# --- --max-logprobs ---------------------------------------------------------------------------------------
[ "$(status_of /v1/completions '{"prompt":"Once","max_tokens":2,"logprobs":4}')" = 400 ] && \
  [ "$(json '.error.param' <"$TMP/body")" = logprobs ] && grep -q "greater than max allowed: 3" "$TMP/body" && \
  [ "$(status_of /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"logprobs":true,"top_logprobs":5}')" = 400 ] && \
  [ "$(json '.error.param' <"$TMP/body")" = top_logprobs ] && \
  [ "$(status_of /v1/completions '{"prompt":"Once","max_tokens":2,"logprobs":3}')" = 200 ]
check max_logprobs_limits_requests $? "$(cat "$TMP/body")"

# --- --response-role --------------------------------------------------------------------------------------
r1=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"Lily"}],"max_tokens":2}' | head -1 | json '.choices[0].message.role')
r2=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"Lily"}],"max_tokens":2,"add_generation_prompt":false}' | head -1 | json '.choices[0].message.role')
r3=$(curl -sN "$URL/v1/chat/completions" -d '{"messages":[{"role":"user","content":"Lily"}],"max_tokens":2,"stream":true}' | grep -m1 '^data: {' | sed 's/^data: //' | json '.choices[0].delta.role')
[ "$r1" = bot ] && [ "$r2" = user ] && [ "$r3" = bot ]
check response_role $? "'$r1' '$r2' '$r3'"

# --- --root-path ------------------------------------------------------------------------------------------
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/models")" = 200 ] && \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/v1/models")" = 200 ] && \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/health")" = 200 ] && \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/apix/v1/models")" = 404 ] && \
  [ "$(curl -s "$URL/api/v1/completions" -d '{"prompt":"Once","max_tokens":2}' | json '.object')" = text_completion ]
check root_path_prefix_served $? ""

# --- CORS -------------------------------------------------------------------------------------------------
pre=$(command curl -si -X OPTIONS "$URL/v1/chat/completions" -H 'Origin: https://ok.example' \
  -H 'Access-Control-Request-Method: POST' -H 'Access-Control-Request-Headers: content-type, authorization' | tr -d '\r')
echo "$pre" | grep -q '^HTTP/1.1 200' && echo "$pre" | grep -qi '^access-control-allow-origin: https://ok.example$' && \
  echo "$pre" | grep -qi '^access-control-allow-credentials: true$' && echo "$pre" | grep -qi '^access-control-allow-methods: .*POST' && \
  echo "$pre" | grep -qi '^access-control-allow-headers: content-type, authorization$' && echo "$pre" | grep -qi '^access-control-max-age: 600$'
check cors_preflight_allowed $? "$pre"
bad=$(command curl -si -X OPTIONS "$URL/v1/completions" -H 'Origin: https://evil.example' -H 'Access-Control-Request-Method: POST' | tr -d '\r')
echo "$bad" | grep -q '^HTTP/1.1 400' && echo "$bad" | grep -q '^Disallowed CORS origin$' && ! echo "$bad" | grep -qi '^access-control-allow-origin'
check cors_preflight_refuses_other_origin $? "$bad"
simple=$(command curl -si "$URL/v1/models" -H 'Origin: https://ok.example' | tr -d '\r')
other=$(command curl -si "$URL/v1/models" -H 'Origin: https://evil.example' | tr -d '\r')
stream=$(command curl -si "$URL/v1/completions" -H 'Content-Type: application/json' -H 'Origin: https://ok.example' \
  -d '{"prompt":"Once","max_tokens":2,"stream":true}' | tr -d '\r')
echo "$simple" | grep -qi '^access-control-allow-origin: https://ok.example$' && echo "$simple" | grep -qi '^vary: origin$' && \
  ! echo "$other" | grep -qi '^access-control-allow-origin' && echo "$stream" | grep -qi '^access-control-allow-origin: https://ok.example$'
check cors_simple_requests $? "$simple"

# --- --enable-log-requests: one bounded line a request ----------------------------------------------------
long=$(printf 'Once upon a time there was a dog. %.0s' $(seq 1 20))
post /v1/completions "{\"prompt\":\"$long\",\"max_tokens\":2,\"seed\":7}" >/dev/null
line=$(grep 'request cmpl-.*seed=7' "$TMP/server.log" | tail -1)
[ -n "$line" ] && [ ${#line} -lt 1000 ] && echo "$line" | grep -q 'prompt: "<s> Once upon a time there was a dog.' && \
  echo "$line" | grep -q '\.\.\. (' && echo "$line" | grep -q 'max_tokens=2' && echo "$line" | grep -q 'temperature=1'
check enable_log_requests_bounded_line $? "$line"
stop_with flags
grep -q 'request cmpl-' "$TMP/auto.log"
[ $? -ne 0 ]
check requests_not_logged_by_default $? "$(grep 'request cmpl-' "$TMP/auto.log" | head -1)"

# --- --chat-template: a file, or the template inline --------------------------------------------------------
printf '{%% for m in messages %%}[{{ m.role }}] {{ m.content }}\\n{%% endfor %%}' >"$TMP/tmpl.jinja"
start_server "$MODEL" --chat-template "$TMP/tmpl.jinja" || { notok server_starts_template "$(tail -c 400 "$TMP/server.log")"; exit 0; }
want=$(post /tokenize '{"prompt":"[user] Hello\\n","add_special_tokens":false}' | head -1 | json '.tokens')
got=$(post /tokenize '{"messages":[{"role":"user","content":"Hello"}]}' | head -1 | json '.tokens')
[ -n "$want" ] && [ "$want" = "$got" ] && grep -q "chat template: $TMP/tmpl.jinja (--chat-template)" "$TMP/server.log"
check chat_template_file $? "want $want got $got"
stop_with tmpl_file
start_server "$MODEL" --chat-template '{% for m in messages %}<<{{ m.content }}>>\n{% endfor %}' || {
  notok server_starts_inline "$(tail -c 400 "$TMP/server.log")"; exit 0; }
want=$(post /tokenize '{"prompt":"<<Hello>>\n","add_special_tokens":false}' | head -1 | json '.tokens')
got=$(post /tokenize '{"messages":[{"role":"user","content":"Hello"}]}' | head -1 | json '.tokens')
[ -n "$want" ] && [ "$want" = "$got" ]
check chat_template_inline_with_escapes $? "want $want got $got"
stop_with tmpl_inline
"$BIN" serve "$MODEL" --port 0 --chat-template "$TMP/no/such.jinja" >"$TMP/nt.out" 2>&1
rc=$?
"$BIN" serve "$MODEL" --port 0 --chat-template '{% for %}' >"$TMP/bt.out" 2>&1
rc2=$?
[ $rc -eq 2 ] && grep -q "looks like a file path, but it cannot be opened" "$TMP/nt.out" && [ $rc2 -ne 0 ] && \
  grep -q "the inline --chat-template" "$TMP/bt.out"
check chat_template_errors_stop_startup $? "$rc $(tail -1 "$TMP/nt.out"); $rc2 $(tail -1 "$TMP/bt.out")"

# --- vLLM flags qserve has one way of doing: other values stop start-up ----------------------------------
"$BIN" serve "$MODEL" --port 0 --dtype float16 >"$TMP/dt.out" 2>&1
rc=$?
"$BIN" serve "$MODEL" --port 0 --pipeline-parallel-size 2 >"$TMP/tp.out" 2>&1
rc2=$?
[ $rc -eq 2 ] && grep -q "qserve does not implement this value" "$TMP/dt.out" && [ $rc2 -eq 2 ] && \
  grep -q "pipeline parallelism is not implemented" "$TMP/tp.out"
check refused_vllm_values_exit_2 $? "$(tail -1 "$TMP/dt.out"); $(tail -1 "$TMP/tp.out")"

# --- --uvicorn-log-level sets qserve's level (as QSERVE_LOG_LEVEL) --------------------------------------
"$BIN" generate "$MODEL" --prompt Once --max-tokens 2 --kv-cache-dtype fp8 >"$TMP/lv1.out" 2>&1
"$BIN" generate "$MODEL" --prompt Once --max-tokens 2 --kv-cache-dtype fp8 --uvicorn-log-level warning >"$TMP/lv2.out" 2>&1
grep -q '^INFO .*KV cache dtype fp8_e4m3' "$TMP/lv1.out" && ! grep -q '^INFO ' "$TMP/lv2.out"
check uvicorn_log_level_sets_level $? "$(head -3 "$TMP/lv2.out")"

# --- generate takes --chat-template and --max-logprobs too ---------------------------------------------
c=$("$BIN" generate "$MODEL" --prompt Lily --chat --max-tokens 1 --json \
  --chat-template '{% for m in messages %}Once upon a time, {{ m.content }}{% endfor %}' 2>/dev/null | json '.prompt_ids')
p=$("$BIN" generate "$MODEL" --prompt 'Once upon a time, Lily' --max-tokens 1 --json 2>/dev/null | json 'r.prompt_ids.slice(1)')
"$BIN" generate "$MODEL" --prompt Once --logprobs 5 --max-logprobs 2 >"$TMP/ml.out" 2>&1
rc=$?
[ -n "$c" ] && [ "$c" = "$p" ] && [ $rc -ne 0 ] && grep -q "greater than --max-logprobs 2" "$TMP/ml.out"
check generate_chat_template_and_max_logprobs $? "chat ids $c, plain ids $p; $(tail -1 "$TMP/ml.out")"
"$BIN" generate "$MODEL" --prompt Once --allowed-origins '["*"]' >"$TMP/so.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "error: --allowed-origins is a serve option; generate runs no server" "$TMP/so.out"
check generate_refuses_serve_options $? "$rc $(tail -1 "$TMP/so.out")"
