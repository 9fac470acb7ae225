#!/usr/bin/env bash
# test_structured_outputs.sh — structured outputs end to end with stories260K: hundreds of
# constrained generations at temperature 1 over many seeds, every way of asking, streaming, n > 1
# and mixed batches (tests/cli/structured_check.py validates each output with python's json / re
# and a schema check); the `openai` npm client's chat.completions.parse() (tests/node/
# structured_client.mjs); and the 400s that name the field or the unsupported construct.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip structured_outputs "stories260K or the converter is missing"
  exit 0
fi
if ! start_server "$MODEL" --max-num-seqs 16; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi

timeout 300 python3 tests/cli/structured_check.py "$URL" || true

if [ -d tests/node/node_modules/openai ] && command -v node >/dev/null; then
  timeout 120 node tests/node/structured_client.mjs "$URL" stories || true
else
  skip structured_node_client "node or tests/node/node_modules/openai is missing"
fi

# expect_400 NAME PATH BODY PARAM NEEDLE: a 400 whose param is PARAM and whose message holds NEEDLE.
expect_400() {
  local out status param msg
  out=$(post "$2" "$3")
  status=$(tail -n1 <<<"$out")
  param=$(head -n -1 <<<"$out" | json '.error.param')
  msg=$(head -n -1 <<<"$out" | json '.error.message')
  if [ "$status" = 400 ] && [ "$param" = "$4" ] && grep -qF -- "$5" <<<"$msg"; then ok "$1"; else notok "$1" "$status $param $msg"; fi
}
C=/v1/completions
H=/v1/chat/completions
M='"messages":[{"role":"user","content":"hi"}]'
expect_400 rf_bogus_type $H "{$M,\"response_format\":{\"type\":\"bogus\"}}" response_format.type bogus
expect_400 rf_unknown_field $H "{$M,\"response_format\":{\"type\":\"json_object\",\"schema\":{}}}" response_format.schema "not a field"
expect_400 rf_schema_missing $H "{$M,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\"}}}" response_format.json_schema.schema required
expect_400 rf_keyword $H "{$M,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"array\",\"uniqueItems\":true}}}}" response_format.json_schema.schema uniqueItems
expect_400 so_unknown_key $C '{"prompt":"x","structured_outputs":{"regex":"a","structural_tag":"t"}}' structured_outputs.structural_tag "not supported"
expect_400 so_two_kinds $C '{"prompt":"x","structured_outputs":{"regex":"a","choice":["b"]}}' structured_outputs.choice "Only one"
expect_400 so_empty $C '{"prompt":"x","structured_outputs":{}}' structured_outputs "one of"
expect_400 two_ways $C '{"prompt":"x","guided_regex":"a","response_format":{"type":"json_object"}}' guided_regex "Only one"
expect_400 bad_regex $C '{"prompt":"x","guided_regex":"a(?=b)"}' guided_regex lookahead
expect_400 bad_grammar $C '{"prompt":"x","guided_grammar":"root ::= missing"}' guided_grammar missing
expect_400 bad_choice $C '{"prompt":"x","guided_choice":["a",1]}' guided_choice "list of strings"
expect_400 ws_without_json $C '{"prompt":"x","guided_regex":"a","guided_whitespace_pattern":" "}' guided_whitespace_pattern "only applies"
expect_400 number_minimum $C '{"prompt":"x","guided_json":{"type":"number","minimum":0}}' guided_json minimum

# guided_whitespace_pattern is applied: with "" no whitespace may appear between JSON tokens
out=$(post $C '{"prompt":"Once","max_tokens":80,"temperature":1,"seed":7,"n":4,"guided_json":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"}},"required":["a","b"]},"guided_whitespace_pattern":""}')
texts=$(head -n -1 <<<"$out" | json 'r.choices.map(c=>c.text).join("\n")')
if [ "$(tail -n1 <<<"$out")" = 200 ] && ! grep -q ' ' <<<"$texts" && [ "$(grep -c '^{"a":-\?[0-9]*,"b":\(true\|false\)}$' <<<"$texts")" = 4 ]; then
  ok whitespace_pattern
else
  notok whitespace_pattern "$texts"
fi
exit 0
