#!/usr/bin/env bash
# test_chat_template.sh — `qserve chat-template`: renders real checkpoints' templates byte for byte
# (fixtures in tests/data/chat/cli, written by scripts/goldens/gen-chat-goldens.mjs from Python
# jinja2's output), reads messages as an array, as {"messages", "tools"}, or from stdin, and fails
# clearly on bad input.
set -u
BIN=${QSERVE_BIN:-build/qserve}
FIX=tests/data/chat/cli
SHARED=${QSERVE_SHARED_DATA:-../shared/data}
QWEN3=$SHARED/tokenizers/qwen3
LLAMA=$SHARED/tokenizers/llama3_1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok $1"; }
notok() { echo "not ok $1${2:+: $2}"; }
skip() { echo "skip $1: $2"; }

# same NAME EXPECTED_FILE CMD... : the command succeeds and prints exactly the file's bytes
same() {
  local name=$1 want=$2; shift 2
  if "$@" >"$TMP/out" 2>"$TMP/err" && cmp -s "$TMP/out" "$want"; then ok "$name"
  else notok "$name" "$(head -c 300 "$TMP/err")$(cmp "$TMP/out" "$want" 2>&1 | head -1)"; fi
}
# fails NAME STATUS NEEDLE CMD... : the command exits with STATUS and stderr contains NEEDLE
fails() {
  local name=$1 status=$2 needle=$3; shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -eq "$status" ] && grep -qF -- "$needle" "$TMP/err" && [ ! -s "$TMP/out" ]; then ok "$name"
  else notok "$name" "exit $rc, stderr: $(head -c 300 "$TMP/err")"; fi
}

if [ -f "$QWEN3/tokenizer_config.json" ]; then
  same qwen3_object_form_with_tools_and_kwargs "$FIX/qwen3_tools.expected" \
    "$BIN" chat-template "$QWEN3" --messages "$FIX/qwen3_tools.messages.json" --add-generation-prompt \
    --kwargs '{"enable_thinking": false}'
  same qwen3_tools_flag "$FIX/qwen3_tools_flag.expected" \
    "$BIN" chat-template "$QWEN3" --messages "$FIX/qwen3_tools_flag.messages.json" \
    --tools "$FIX/qwen3_tools_flag.tools.json" --add-generation-prompt
  same qwen3_messages_from_stdin "$FIX/qwen3_tools.expected" \
    "$BIN" chat-template "$QWEN3" --messages - --add-generation-prompt --kwargs='{"enable_thinking": false}' \
    <"$FIX/qwen3_tools.messages.json"
  fails qwen3_tools_must_be_an_array 1 "expected a JSON array of tools" \
    "$BIN" chat-template "$QWEN3" --messages "$FIX/qwen3_tools_flag.messages.json" --tools "$FIX/qwen3_tools.messages.json"
  fails kwargs_must_be_an_object 1 "--kwargs: expected a JSON object" \
    "$BIN" chat-template "$QWEN3" --messages "$FIX/qwen3_tools_flag.messages.json" --kwargs '[1]'
  printf '[{"role": "user", "content": "hi"},' >"$TMP/broken.json"
  fails broken_messages_json 1 "not valid JSON" "$BIN" chat-template "$QWEN3" --messages "$TMP/broken.json"
  printf '{"role": "user", "content": "hi"}' >"$TMP/object.json"
  fails messages_object_without_messages 1 "\"messages\"" "$BIN" chat-template "$QWEN3" --messages "$TMP/object.json"
  printf '"hello"' >"$TMP/string.json"
  fails messages_not_an_array 1 "expected a JSON array" "$BIN" chat-template "$QWEN3" --messages "$TMP/string.json"
  fails missing_messages_file 1 "$TMP/none.json" "$BIN" chat-template "$QWEN3" --messages "$TMP/none.json"
else
  for t in qwen3_object_form_with_tools_and_kwargs qwen3_tools_flag qwen3_messages_from_stdin \
           qwen3_tools_must_be_an_array kwargs_must_be_an_object broken_messages_json \
           messages_object_without_messages messages_not_an_array missing_messages_file; do
    skip "$t" "$QWEN3/tokenizer_config.json is absent (shared data not installed)"
  done
fi

if [ -f "$LLAMA/tokenizer_config.json" ]; then
  same llama3_1_array_form "$FIX/llama3_1_multi_turn.expected" \
    "$BIN" chat-template "$LLAMA" --messages "$FIX/llama3_1_multi_turn.messages.json" --add-generation-prompt
else
  skip llama3_1_array_form "$LLAMA/tokenizer_config.json is absent (shared data not installed)"
fi

same template_file_without_model_dir "$FIX/chatml_unicode.expected" \
  "$BIN" chat-template --template tests/data/chat/templates/chatml.jinja --messages "$FIX/chatml_unicode.messages.json"
fails template_raise_exception 1 "$(cat "$FIX/mistral_bad_roles.expected_error")" \
  "$BIN" chat-template --template tests/data/chat/templates/mistral.jinja --bos-token '<s>' --eos-token '</s>' \
  --messages "$FIX/mistral_bad_roles.messages.json"
printf 'hello {{ messages | nosuchfilter }}\n' >"$TMP/bad.jinja"
fails unknown_filter_names_file_and_line 1 "bad.jinja: line 1: unknown filter 'nosuchfilter'" \
  "$BIN" chat-template --template "$TMP/bad.jinja" --messages "$FIX/chatml_unicode.messages.json"

mkdir -p "$TMP/model"
fails model_dir_without_config 1 "$TMP/model/tokenizer_config.json" \
  "$BIN" chat-template "$TMP/model" --messages "$FIX/chatml_unicode.messages.json"
printf '{"eos_token": "</s>"}' >"$TMP/model/tokenizer_config.json"
fails model_dir_without_template 1 "no chat template" \
  "$BIN" chat-template "$TMP/model" --messages "$FIX/chatml_unicode.messages.json"
printf '{"chat_template": "{%% for m in messages %%}{{ m.content }}", "eos_token": "</s>"}' >"$TMP/model/tokenizer_config.json"
fails unclosed_tag_in_config 1 "unclosed 'for'" \
  "$BIN" chat-template "$TMP/model" --messages "$FIX/chatml_unicode.messages.json"
cp tests/data/chat/templates/chatml.jinja "$TMP/model/chat_template.jinja"
printf '{"eos_token": "</s>"}' >"$TMP/model/tokenizer_config.json"
same chat_template_jinja_file "$FIX/chatml_unicode.expected" \
  "$BIN" chat-template "$TMP/model" --messages "$FIX/chatml_unicode.messages.json"

fails missing_messages_flag 2 "--messages FILE.json is required" "$BIN" chat-template "$TMP/model"
fails missing_model_dir 2 "MODEL is required" "$BIN" chat-template --messages "$FIX/chatml_unicode.messages.json"
fails unknown_option 2 "unknown option '--frobnicate'" "$BIN" chat-template "$TMP/model" --frobnicate
if "$BIN" chat-template --help | grep -q -- "--add-generation-prompt"; then ok help; else notok help; fi
