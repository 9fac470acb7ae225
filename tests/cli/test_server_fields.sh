#!/usr/bin/env bash
# test_server_fields.sh — vLLM's request fields and the API bugs of issue 36, with curl against
# stories260K on CPU. The table "Request fields" of docs/api.md is read row by row: every field
# marked supported has a check here proving its effect, every refused one must answer 400 naming
# it, every ignored one 200 — so the table and the server cannot drift apart. Then the bugs:
# incremental detokenisation (leading space), seeded sampling independent of logprobs and
# logit_bias, echo with logprobs / max_tokens 0, stop_reason, min_tokens and stop strings,
# duplicate keys, completions' default of 16 tokens, JSON error wording, /tokenize with messages.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_fields "stories260K or the converter is missing ($SHARED/tinystories, $BUILD_DIR/convert-llama2c)"
  exit 0
fi
# A template that shows tools, a kwarg and add_generation_prompt in the text (for /tokenize).
node -e '
const fs=require("fs");const p=process.argv[1]+"/tokenizer_config.json";const c=JSON.parse(fs.readFileSync(p));
c.chat_template="{% for m in messages %}{{ m.content }}. {% endfor %}{% if tools %}tools. {% endif %}{% if flag %}flag. {% endif %}{% if add_generation_prompt %}Then{% endif %}";
fs.writeFileSync(p,JSON.stringify(c));' "$MODEL"
if ! start_server "$MODEL" --seed 7; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi

C=/v1/completions
H=/v1/chat/completions
comp() { curl -s --max-time 60 "$URL$C" -d "$1"; }
chat() { curl -s --max-time 60 "$URL$H" -d "$1"; }
# expect400 NAME PATH JSON PARAM: a 400 whose error.param is PARAM
expect400() {
  local code param
  code=$(status_of "$2" "$3")
  param=$(json '.error && r.error.param' <"$TMP/body")
  [ "$code" = 400 ] && [ "$param" = "$4" ]
  check "$1" $? "status $code param '$param': $(head -c 300 "$TMP/body")"
}
# expect200 NAME PATH JSON
expect200() {
  local code
  code=$(status_of "$2" "$3")
  [ "$code" = 200 ]
  check "$1" $? "status $code: $(head -c 300 "$TMP/body")"
}
ntokens() { curl -s "$URL/tokenize" -d "$1" | json '.count'; }
MSGS='[{"role":"user","content":"Hi"},{"role":"assistant","content":"Once upon"}]'

# ---- supported fields: one check each, proving the effect ----
f_prompt_logprobs() {
  local r n
  r=$(comp '{"prompt":"Lily went to","max_tokens":1,"temperature":0,"prompt_logprobs":2}')
  n=$(echo "$r" | json '.usage.prompt_tokens')
  [ "$(echo "$r" | json '[r.choices[0].prompt_logprobs.length, r.choices[0].prompt_logprobs[0], Object.keys(r.choices[0].prompt_logprobs[1]).length >= 2, Object.values(r.choices[0].prompt_logprobs[2]).every(v => v.logprob <= 0 && v.rank >= 1 && typeof v.decoded_token === "string")]')" = "[$n,null,true,true]" ] || return 1
  r=$(chat "{\"messages\":$MSGS,\"max_tokens\":1,\"prompt_logprobs\":0}")
  [ "$(echo "$r" | json 'r.prompt_logprobs.length === r.usage.prompt_tokens && r.prompt_logprobs[0] === null')" = true ] || return 1
  expect400 prompt_logprobs_not_streamed $C '{"prompt":"a","stream":true,"prompt_logprobs":1}' prompt_logprobs
}
f_allowed_token_ids() {
  local r
  r=$(comp '{"prompt":"Lily went to","max_tokens":3,"allowed_token_ids":[377],"logprobs":0,"return_tokens_as_token_ids":true}')
  [ "$(echo "$r" | json '.choices[0].logprobs.tokens')" = '["token_id:377","token_id:377","token_id:377"]' ] || return 1
  expect400 allowed_token_ids_outside_vocab $C '{"prompt":"a","allowed_token_ids":[100000]}' allowed_token_ids
}
f_return_tokens_as_token_ids() {
  comp '{"prompt":"Lily went to","max_tokens":2,"temperature":0,"logprobs":1,"return_tokens_as_token_ids":true}' |
    json '.choices[0].logprobs.tokens.every(t => /^token_id:[0-9]+$/.test(t))' | grep -qx true
}
f_bad_words() {
  local plain banned
  plain=$(comp '{"prompt":"Lily went to","max_tokens":6,"temperature":0}' | json '.choices[0].text')
  banned=$(comp '{"prompt":"Lily went to","max_tokens":6,"temperature":0,"bad_words":["park"]}' | json '.choices[0].text')
  [[ "$plain" == *park* ]] && [[ "$banned" != *park* ]] || { echo "plain '$plain' banned '$banned'"; return 1; }
  expect400 bad_words_type $C '{"prompt":"a","bad_words":"park"}' bad_words
}
f_truncate_prompt_tokens() {
  [ "$(comp '{"prompt":"Lily went to the park","max_tokens":1,"truncate_prompt_tokens":2}' | json '.usage.prompt_tokens')" = 2 ] || return 1
  # a prompt far longer than the context still fits once cut to its last tokens
  local long
  long=$(printf 'Lily went to the park. %.0s' $(seq 1 2000))
  [ "$(comp "{\"prompt\":\"$long\",\"max_tokens\":1,\"truncate_prompt_tokens\":10}" | json '.usage.prompt_tokens')" = 10 ] || return 1
  expect400 truncate_prompt_tokens_positive $C '{"prompt":"a","truncate_prompt_tokens":0}' truncate_prompt_tokens
}
f_best_of() {
  # best_of=3, n=1 returns the candidate with the highest cumulative logprob among the three
  # that n=3 with the same seed produces.
  local three best want
  three=$(comp '{"prompt":"Once upon","max_tokens":8,"temperature":1.5,"seed":5,"n":3,"logprobs":0}')
  want=$(echo "$three" | json 'r.choices.map(c => [c.logprobs.token_logprobs.reduce((a, b) => a + b, 0), c.text]).sort((a, b) => b[0] - a[0])[0][1]')
  best=$(comp '{"prompt":"Once upon","max_tokens":8,"temperature":1.5,"seed":5,"n":1,"best_of":3}')
  [ "$(echo "$best" | json '.choices.length')" = 1 ] && [ "$(echo "$best" | json '.choices[0].text')" = "$want" ] ||
    { echo "want '$want' got $best"; return 1; }
  expect400 best_of_below_n $C '{"prompt":"a","n":2,"best_of":1}' best_of &&
    expect400 best_of_type $C '{"prompt":"a","best_of":"a"}' best_of &&
    expect400 best_of_streamed $C '{"prompt":"a","best_of":2,"stream":true}' best_of
}
f_stream_options() {
  local lines
  lines=$(curl -s -N "$URL$C" -d '{"prompt":"Once","max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}' |
    grep '^data: {' | sed 's/^data: //' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const c=s.trim().split("\n").map(JSON.parse).filter(x=>x.choices.length);console.log(c.map(x=>x.usage&&x.usage.completion_tokens).join(","))})')
  [ "$lines" = "1,2,3" ] || { echo "per-chunk completion_tokens: $lines"; return 1; }
}
f_echo() {
  # completions echo: prompt text, and with logprobs the prompt's tokens first (null logprob)
  local r
  r=$(comp '{"prompt":"Lily went to","max_tokens":4,"temperature":0,"echo":true,"logprobs":0}')
  [ "$(echo "$r" | json '.choices[0].text')" = "Lily went to the park" ] || { echo "bug 2: $r"; return 1; }
  [ "$(echo "$r" | json '[r.choices[0].logprobs.tokens.length, r.choices[0].logprobs.token_logprobs[0], r.choices[0].logprobs.top_logprobs[0]]')" = "[$(( $(echo "$r" | json '.usage.prompt_tokens') + 4 )),null,null]" ] || { echo "$r"; return 1; }
  # text_offset runs on across prompt and output: each offset is the previous plus its token
  echo "$r" | json 'r.choices[0].logprobs.text_offset.every((o, i, a) => i === 0 ? o === 0 : o === a[i - 1] + r.choices[0].logprobs.tokens[i - 1].length)' | grep -qx true || { echo "offsets: $r"; return 1; }
  r=$(comp '{"prompt":"Lily went to","max_tokens":0,"echo":true,"logprobs":1}')
  [ "$(echo "$r" | json '[r.choices[0].text, r.usage.completion_tokens, r.choices[0].logprobs.token_logprobs.length === r.usage.prompt_tokens]')" = '["Lily went to",0,true]' ] || { echo "max_tokens 0: $r"; return 1; }
  expect400 max_tokens_0_needs_echo $C '{"prompt":"a","max_tokens":0}' max_tokens || return 1
  # chat echo: the last assistant message opens the reply
  r=$(chat "{\"messages\":$MSGS,\"max_tokens\":3,\"temperature\":0,\"echo\":true}")
  [[ "$(echo "$r" | json '.choices[0].message.content')" == "Once upon"* ]] || { echo "chat echo: $r"; return 1; }
  [ "$(echo "$r" | json 'r.prompt_logprobs.length === r.usage.prompt_tokens')" = true ] || { echo "chat echo prompt_logprobs: $r"; return 1; }
}
f_continue_final_message() {
  local r want
  expect400 continue_final_message_with_generation_prompt $H "{\"messages\":$MSGS,\"continue_final_message\":true}" continue_final_message || return 1
  r=$(chat "{\"messages\":$MSGS,\"max_tokens\":1,\"continue_final_message\":true,\"add_generation_prompt\":false}")
  want=$(ntokens '{"prompt":"Hi. Once upon","add_special_tokens":false}')
  [ "$(echo "$r" | json '.usage.prompt_tokens')" = "$want" ] || { echo "want $want: $r"; return 1; }
}
f_chat_template() {
  local r want
  r=$(chat "{\"messages\":$MSGS,\"max_tokens\":1,\"chat_template\":\"{% for m in messages %}[{{ m.role }}] {{ m.content }}\\n{% endfor %}\"}")
  want=$(ntokens '{"prompt":"[user] Hi\n[assistant] Once upon\n","add_special_tokens":false}')
  [ "$(echo "$r" | json '.usage.prompt_tokens')" = "$want" ] || { echo "want $want: $r"; return 1; }
  expect400 chat_template_bad $H "{\"messages\":$MSGS,\"chat_template\":\"{% if %}\"}" chat_template
}
f_add_special_tokens() {
  local with without
  with=$(comp '{"prompt":"Lily went","max_tokens":1}' | json '.usage.prompt_tokens')
  without=$(comp '{"prompt":"Lily went","max_tokens":1,"add_special_tokens":false}' | json '.usage.prompt_tokens')
  [ "$without" = $(( with - 1 )) ] || { echo "with $with without $without"; return 1; }
}
f_request_id() {
  [ "$(comp '{"prompt":"a","max_tokens":1,"request_id":"my-req.1"}' | json '.id')" = cmpl-my-req.1 ] &&
    [ "$(chat "{\"messages\":$MSGS,\"max_tokens\":1,\"request_id\":\"r2\"}" | json '.id')" = chatcmpl-r2 ]
}
f_min_tokens() {
  # min_tokens holds back stop strings too (bug 5): "park" appears within the first 5 tokens
  local r
  r=$(comp '{"prompt":"Lily went to","max_tokens":8,"temperature":0,"stop":["park"],"min_tokens":5}')
  [[ "$(echo "$r" | json '.choices[0].text')" == *park* ]] || { echo "$r"; return 1; }
}
f_stop() {
  local r
  r=$(comp '{"prompt":"Lily went to","max_tokens":8,"temperature":0,"stop":["park"]}')
  [ "$(echo "$r" | json '[r.choices[0].finish_reason, r.choices[0].stop_reason]')" = '["stop","park"]' ] || { echo "$r"; return 1; }
}
f_stop_token_ids() {
  local id r
  id=$(comp '{"prompt":"Lily went to","max_tokens":2,"temperature":0,"logprobs":0,"return_tokens_as_token_ids":true}' | json '.choices[0].logprobs.tokens[1].split(":")[1]')
  r=$(comp "{\"prompt\":\"Lily went to\",\"max_tokens\":8,\"temperature\":0,\"stop_token_ids\":[$id]}")
  [ "$(echo "$r" | json '[r.choices[0].finish_reason, r.choices[0].stop_reason]')" = "[\"stop\",$id]" ] || { echo "$r"; return 1; }
  r=$(chat "{\"messages\":$MSGS,\"max_tokens\":8,\"temperature\":0,\"stop_token_ids\":[$id]}")
  [ "$(echo "$r" | json '.choices[0].stop_reason')" = "$id" ] || [ "$(echo "$r" | json '.choices[0].finish_reason')" = length ] || { echo "$r"; return 1; }
}
f_max_tokens() {
  [ "$(comp '{"prompt":"Once","ignore_eos":true}' | json '.usage.completion_tokens')" = 16 ]
}
f_logprobs() {
  [ "$(comp '{"prompt":"Once","max_tokens":2,"logprobs":1}' | json '.choices[0].logprobs.tokens.length')" = 2 ]
}

# ---- the docs table drives the field checks ----
# payloads that refused fields carry (their no-op defaults are accepted)
declare -A REFUSE=(
  [suffix]='"x"' [prompt_embeds]='"AAAA"' [use_beam_search]=true [priority]=1 [logits_processors]='["m.P"]'
  [kv_transfer_params]='{"a":1}' [vllm_xargs]='{"a":1}' [spaces_between_special_tokens]=false
  [mm_processor_kwargs]='{"a":1}' [documents]='[{"title":"t","text":"x"}]'
  [reasoning_effort]='"low"' [include_reasoning]=false [structural_tag]='{"type":"structural_tag"}'
)
declare -A IGNORED=([length_penalty]=2 [user]='"u"')
rows=$(sed -n '/^## Request fields/,/^## /p' docs/api.md | grep -E '^\| `[a-z_]+` \|')
[ "$(echo "$rows" | grep -c .)" -ge 40 ]
check fields_table_present $? "$(echo "$rows" | grep -c .) rows in docs/api.md"
while IFS='|' read -r _ field where how _; do
  field=$(echo "$field" | tr -d ' `'); where=$(echo "$where" | tr -d ' '); how=$(echo "$how" | sed 's/^ *//')
  case "$how" in
    supported*)
      fn="f_$field"
      if declare -F "$fn" >/dev/null; then out=$("$fn" 2>&1); check "field_$field" $? "$out"
      else notok "field_$field" "docs/api.md says supported but the test has no check for it"; fi;;
    refused*)
      val=${REFUSE[$field]:-}
      if [ -z "$val" ]; then notok "field_$field" "no refusal probe"; continue; fi
      if [[ "$where" != chat ]]; then expect400 "field_${field}_refused" $C "{\"prompt\":\"a\",\"max_tokens\":1,\"$field\":$val}" "$field"; fi
      if [[ "$where" != completions ]]; then expect400 "field_${field}_refused_chat" $H "{\"messages\":$MSGS,\"max_tokens\":1,\"$field\":$val}" "$field"; fi;;
    ignored*)
      val=${IGNORED[$field]:-}
      if [ -z "$val" ]; then notok "field_$field" "no probe value"; continue; fi
      if [[ "$where" != chat ]]; then expect200 "field_${field}_accepted" $C "{\"prompt\":\"a\",\"max_tokens\":1,\"$field\":$val}"; fi
      if [[ "$where" != completions ]]; then expect200 "field_${field}_accepted_chat" $H "{\"messages\":$MSGS,\"max_tokens\":1,\"$field\":$val}"; fi;;
    *) ;; # covered by other suites (core OpenAI fields, structured outputs, tools)
  esac
done <<<"$rows"
expect400 priority_non_integer $C '{"prompt":"a","priority":"high"}' priority
expect200 spaces_between_special_tokens_true_accepted $C '{"prompt":"a","max_tokens":1,"spaces_between_special_tokens":true}'
expect200 priority_zero_accepted $C '{"prompt":"a","max_tokens":1,"priority":0,"use_beam_search":false,"suffix":null}'
[ "$(status_of $C '{"prompt":"a","max_tokens":1,"some_unknown_field":1}')" = 200 ]
check unknown_field_ignored_as_vllm $? "$(head -c 200 "$TMP/body")"

# ---- bugs ----
# 3: a seeded request's text does not change when logprobs or a zero logit_bias is added
base=$(comp '{"prompt":"Once upon","temperature":1,"seed":11,"max_tokens":12}' | json '.choices[0].text')
with_lp=$(comp '{"prompt":"Once upon","temperature":1,"seed":11,"max_tokens":12,"logprobs":2}' | json '.choices[0].text')
with_lb=$(comp '{"prompt":"Once upon","temperature":1,"seed":11,"max_tokens":12,"logit_bias":{"5":0}}' | json '.choices[0].text')
[ -n "$base" ] && [ "$base" = "$with_lp" ] && [ "$base" = "$with_lb" ]
check seeded_text_independent_of_logprobs_and_bias $? "'$base' / '$with_lp' / '$with_lb'"
# 2: the first generated token keeps its leading space (incremental decode of prompt + output)
[ "$(comp '{"prompt":"Lily went to","temperature":0,"max_tokens":4}' | json '.choices[0].text')" = " the park" ]
check first_token_keeps_leading_space $? ""
# duplicate keys: the last wins
[ "$(comp '{"prompt":"Once","max_tokens":1,"ignore_eos":true,"max_tokens":3}' | json '.usage.completion_tokens')" = 3 ]
check duplicate_keys_last_wins $? ""
# JSON errors mention nesting only when nesting is the problem
status_of $C '{"prompt": [1, 2' >/dev/null
msg=$(json '.error.message' <"$TMP/body")
[[ "$msg" == *"not valid JSON"* ]] && [[ "$msg" != *nest* ]]
check json_error_without_nesting $? "$msg"
deep=$(printf '[%.0s' $(seq 1 1200))
status_of $C "{\"prompt\":$deep" >/dev/null
[[ "$(json '.error.message' <"$TMP/body")" == *nest* ]]
check json_error_names_nesting $? "$(head -c 200 "$TMP/body")"
# a request that can never fit is a 400 saying why, not a 429
prompts=$(node -e 'console.log(JSON.stringify(Array(20).fill("Once")))')
expect400 never_fitting_request_400 $C "{\"prompt\":$prompts,\"n\":64,\"max_tokens\":1}" n

# ---- /tokenize with messages: tools, chat_template_kwargs, add_generation_prompt ----
one='[{"role":"user","content":"Hi"}]'
a=$(ntokens "{\"messages\":$one}")
b=$(ntokens "{\"messages\":$one,\"add_generation_prompt\":false}")
c=$(ntokens "{\"messages\":$one,\"add_generation_prompt\":false,\"chat_template_kwargs\":{\"flag\":true},\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}")
[ "$a" = "$(ntokens '{"prompt":"Hi. Then","add_special_tokens":false}')" ] &&
  [ "$b" = "$(ntokens '{"prompt":"Hi. ","add_special_tokens":false}')" ] &&
  [ "$c" = "$(ntokens '{"prompt":"Hi. tools. flag. ","add_special_tokens":false}')" ]
check tokenize_messages_honours_template_inputs $? "counts $a $b $c"
expect400 tokenize_kwargs_type /tokenize "{\"messages\":$one,\"chat_template_kwargs\":[]}" chat_template_kwargs
