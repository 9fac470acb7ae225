#!/usr/bin/env bash
# test_server_prefix_cache.sh — automatic prefix caching through the HTTP API (stories260K on
# CPU): a repeated prompt reports usage.prompt_tokens_details.cached_tokens (every full block
# but the one holding the last token) and gives the same greedy text; cache_salt isolates and is
# validated; n > 1 choices share; the vllm:prefix_cache_* counters add up; streaming usage carries
# the field; --no-enable-prefix-caching serves the same text with nothing cached; a bad
# --kv-cache-dtype stops start-up with a clear error.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_prefix_cache "stories260K or the converter is missing ($STORIES_DATA, $BUILD_DIR/convert-llama2c)"
  exit 0
fi

"$BIN" serve "$MODEL" --kv-cache-dtype fp16 >"$TMP/dtype.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "unknown KV cache dtype 'fp16'; expected auto, bf16, fp8 or fp8_e4m3" "$TMP/dtype.out"
check bad_kv_cache_dtype_is_a_clear_error $? "exit $rc: $(head -c 300 "$TMP/dtype.out")"

# 200 token ids: 12 full blocks of 16 can be reused (192 tokens), the 13th holds the last token
IDS=$(seq 1 200 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), 10 + ($1 * 37) % 400 }')
complete() { curl -s --max-time 120 "$URL/v1/completions" -d "{\"prompt\":[$IDS],\"max_tokens\":12,\"temperature\":0$1}"; }

if ! start_server "$MODEL" --max-num-seqs 4; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
grep -q "prefix caching on" "$TMP/server.log"
check startup_logs_prefix_caching_on $? "$(grep 'engine:' "$TMP/server.log" | head -2)"

first=$(complete "")
second=$(complete "")
t1=$(echo "$first" | json '.choices[0].text'); t2=$(echo "$second" | json '.choices[0].text')
c1=$(echo "$first" | json '.usage.prompt_tokens_details.cached_tokens'); c2=$(echo "$second" | json '.usage.prompt_tokens_details.cached_tokens')
[ "$c1" = 0 ] && [ "$c2" = 192 ] && [ -n "$t1" ] && [ "$t1" = "$t2" ]
check repeat_prompt_reports_cached_tokens $? "cached $c1 then $c2; texts '$t1' / '$t2'"

s1=$(complete ',"cache_salt":"tenant-a-secret"' | json '.usage.prompt_tokens_details.cached_tokens')
s2=$(complete ',"cache_salt":"tenant-a-secret"')
[ "$s1" = 0 ] && [ "$(echo "$s2" | json '.usage.prompt_tokens_details.cached_tokens')" = 192 ] && \
  [ "$(echo "$s2" | json '.choices[0].text')" = "$t1" ]
check cache_salt_isolates $? "salted first $s1, salted again $(echo "$s2" | head -c 300)"

[ "$(status_of /v1/completions '{"prompt":"hi","max_tokens":2,"cache_salt":""}')" = 400 ] && \
  [ "$(json '.error.param' <"$TMP/body")" = cache_salt ] && \
  [ "$(status_of /v1/completions '{"prompt":"hi","max_tokens":2,"cache_salt":5}')" = 400 ]
check cache_salt_validated $? "$(cat "$TMP/body")"

nresp=$(complete ',"n":3,"cache_salt":"fresh"')
[ "$(echo "$nresp" | json '.usage.prompt_tokens_details.cached_tokens')" = 0 ] && \
  [ "$(echo "$nresp" | json 'r.choices.every(c => c.text === r.choices[0].text)')" = true ]
check n_choices_equal_greedy $? "$(echo "$nresp" | head -c 400)"

curl -sN "$URL/v1/completions" -d "{\"prompt\":[$IDS],\"max_tokens\":4,\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}" >"$TMP/stream"
su=$(grep '^data: {' "$TMP/stream" | tail -1 | sed 's/^data: //' | json '.usage.prompt_tokens_details.cached_tokens')
[ "$su" = 192 ]
check stream_usage_cached_tokens $? "$su"

curl -s "$URL/metrics" >"$TMP/metrics"
q=$(awk '/^vllm:prefix_cache_queries_total/ {print $2}' "$TMP/metrics")
h=$(awk '/^vllm:prefix_cache_hits_total/ {print $2}' "$TMP/metrics")
# queries: 5 single requests x 200 prompt tokens + 3 choices x 200; hits: 192 each for the 2nd, 4th and
# streamed request, and 2 x 192 for the two choices of the n=3 request that shared the first's
[ "$q" = $((8 * 200)) ] && [ "$h" = $((5 * 192)) ]
check prefix_cache_counters $? "queries=$q hits=$h"
stop_server

if start_server "$MODEL" --max-num-seqs 4 --no-enable-prefix-caching; then
  a=$(complete ""); b=$(complete "")
  [ "$(echo "$b" | json '.usage.prompt_tokens_details.cached_tokens')" = 0 ] && \
    [ "$(echo "$b" | json '.choices[0].text')" = "$t1" ] && [ "$(echo "$a" | json '.choices[0].text')" = "$t1" ]
  check no_enable_prefix_caching_same_text_nothing_cached $? "$(echo "$b" | head -c 300)"
  grep -q "prefix caching off" "$TMP/server.log"
  check startup_logs_prefix_caching_off $? "$(grep 'engine:' "$TMP/server.log" | head -2)"
  ! grep -q "ignoring vLLM option --no-enable-prefix-caching" "$TMP/server.log"
  check flag_not_ignored $? ""
  stop_server
else
  notok server_without_cache_starts "$(tail -c 500 "$TMP/server.log")"
fi

# --- FP8 KV cache: twice the blocks of bf16 in the same memory, named in the log and the metrics ---
blocks_of() { awk -F'num_gpu_blocks="' '/^vllm:cache_config_info/ {split($2, a, "\""); print a[1]}' "$TMP/metrics"; }
if start_server "$MODEL" --max-num-seqs 4 --kv-cache-memory 4MiB --kv-cache-dtype bf16; then
  curl -s "$URL/metrics" >"$TMP/metrics"; bf16_blocks=$(blocks_of)
  grep -q 'cache_dtype="bf16"' "$TMP/metrics"
  check cache_config_info_bf16 $? "$(grep cache_config_info "$TMP/metrics")"
  stop_server
fi
if start_server "$MODEL" --max-num-seqs 4 --kv-cache-memory 4MiB --kv-cache-dtype fp8; then
  curl -s "$URL/metrics" >"$TMP/metrics"; fp8_blocks=$(blocks_of)
  # (each count is the memory divided by a block's bytes, rounded down)
  [ -n "${bf16_blocks:-}" ] && [ "$fp8_blocks" -ge $((2 * bf16_blocks)) ] && [ "$fp8_blocks" -le $((2 * bf16_blocks + 1)) ] && \
    grep -q 'cache_dtype="fp8_e4m3"' "$TMP/metrics"
  check fp8_kv_doubles_blocks $? "bf16 ${bf16_blocks:-?} fp8 $fp8_blocks"
  grep -q "KV cache dtype fp8_e4m3 (--kv-cache-dtype fp8): per-layer K/V scales from 1.0 for every layer" "$TMP/server.log" && \
    grep -q "blocks of 16 tokens.*fp8_e4m3" "$TMP/server.log"
  check fp8_kv_logs_scales_source $? "$(grep 'KV cache' "$TMP/server.log")"
  r=$(complete ""); r2=$(complete "")
  [ -n "$(echo "$r" | json '.choices[0].text')" ] && [ "$(echo "$r2" | json '.usage.prompt_tokens_details.cached_tokens')" = 192 ] && \
    [ "$(echo "$r2" | json '.choices[0].text')" = "$(echo "$r" | json '.choices[0].text')" ]
  check fp8_kv_serves_with_prefix_cache $? "$(echo "$r2" | head -c 300)"
  ! grep -q "ignoring vLLM option --kv-cache-dtype" "$TMP/server.log"
  check kv_cache_dtype_not_ignored $? ""
  stop_server
else
  notok fp8_server_starts "$(tail -c 500 "$TMP/server.log")"
fi
