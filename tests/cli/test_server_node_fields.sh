#!/usr/bin/env bash
# test_server_node_fields.sh — vLLM's extra request fields through the official `openai` npm
# client (tests/node/vllm_fields.mjs) against qserve serving stories260K on 127.0.0.1.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip openai_node_fields "stories260K or the converter is missing"
  exit 0
fi
if [ ! -d tests/node/node_modules/openai ] || ! command -v node >/dev/null; then
  skip openai_node_fields "node or tests/node/node_modules/openai is missing (scripts/install-deps.sh installs them)"
  exit 0
fi
if ! start_server "$MODEL"; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
timeout 120 node tests/node/vllm_fields.mjs "$URL" stories
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || notok openai_node_fields "node exited $rc"
exit 0
