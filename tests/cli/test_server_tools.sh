#!/usr/bin/env bash
# test_server_tools.sh — tool calling, chat messages as agents send them, and reasoning parsers,
# end to end through the official `openai` npm client (tests/node/tools_client.mjs). The model is
# a tiny random Qwen3 (`qserve init-model --shape tiny-qwen3`) given the real Qwen3 chat template
# (tools, <tool_call>, <tool_response>, enable_thinking) from ../shared/data/tokenizers/qwen3, and
# <think> / </think> tokens (a grammar waits for </think> before it constrains the answer).
# Two servers: one with --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser
# qwen3, one with no tool flags and --reasoning-parser deepseek_r1. The parsers' handling of real
# model-style outputs is tests/unit/test_tool_parsers.c (a random model writes no tool calls).
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

REAL=$SHARED/tokenizers/qwen3/tokenizer_config.json
if [ ! -f "$REAL" ]; then
  skip server_tools "$REAL is absent (the real Qwen3 chat template)"
  exit 0
fi
if [ ! -d tests/node/node_modules/openai ] || ! command -v node >/dev/null; then
  skip server_tools "node or tests/node/node_modules/openai is missing (scripts/install-deps.sh installs them)"
  exit 0
fi
MODEL=$TMP/qwen3
if ! "$BIN" init-model "$MODEL" --shape tiny-qwen3 --seed 1 >"$TMP/init.log" 2>&1; then
  notok init_model "$(tail -c 300 "$TMP/init.log")"
  exit 0
fi
# The real template, and Qwen3's <think> / </think> as the real tokenizer has them: added tokens
# that are not special (they stay in the decoded text), here in place of the last two merges.
node -e '
const fs = require("fs");
const [dir, real] = process.argv.slice(1);
const cfg = JSON.parse(fs.readFileSync(dir + "/tokenizer_config.json", "utf8"));
cfg.chat_template = JSON.parse(fs.readFileSync(real, "utf8")).chat_template;
const tok = JSON.parse(fs.readFileSync(dir + "/tokenizer.json", "utf8"));
for (const content of ["</think>", "<think>"]) {
  const merged = tok.model.merges.pop().replace(" ", "");
  const id = tok.model.vocab[merged];
  delete tok.model.vocab[merged];
  const t = { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false };
  tok.added_tokens.push(t);
  cfg.added_tokens_decoder[String(id)] = { ...t, id: undefined };
}
fs.writeFileSync(dir + "/tokenizer.json", JSON.stringify(tok));
fs.writeFileSync(dir + "/tokenizer_config.json", JSON.stringify(cfg));' "$MODEL" "$REAL"

# flags checked at start-up, as vLLM does
"$BIN" serve "$MODEL" --enable-auto-tool-choice >"$TMP/flag.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q -- "--tool-call-parser" "$TMP/flag.log"
check auto_tool_choice_needs_parser $? "exit $rc: $(tail -c 200 "$TMP/flag.log")"
"$BIN" serve "$MODEL" --tool-call-parser xlam >"$TMP/flag.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "hermes, llama3_json, mistral, pythonic" "$TMP/flag.log"
check unknown_tool_parser_refused $? "exit $rc: $(tail -c 200 "$TMP/flag.log")"
"$BIN" serve "$MODEL" --reasoning-parser granite >"$TMP/flag.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "qwen3, deepseek_r1" "$TMP/flag.log"
check unknown_reasoning_parser_refused $? "exit $rc: $(tail -c 200 "$TMP/flag.log")"

if ! start_server "$MODEL" --served-model-name q --enable-auto-tool-choice --tool-call-parser hermes \
     --reasoning-parser qwen3 --max-model-len 1024; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
timeout 120 node tests/node/tools_client.mjs "$URL" auto "$TMP/answer.json"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || notok tools_client_auto "node exited $rc"
stop_server

if ! start_server "$MODEL" --served-model-name q --reasoning-parser deepseek_r1 --max-model-len 1024; then
  notok server_starts_plain "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
if [ -s "$TMP/answer.json" ]; then
  timeout 120 node tests/node/tools_client.mjs "$URL" plain "$TMP/answer.json"
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 1 ] || notok tools_client_plain "node exited $rc"
else
  notok tools_client_plain "the auto run wrote no answer to compare with"
fi
exit 0
