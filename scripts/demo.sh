#!/usr/bin/env bash
# The README's first command ends here: serve a tiny model on the CPU and show a real request.
# The model is stories260K (a real trained tiny Llama vendored in data/stories260K, converted to HF
# format by build/convert-llama2c); where that folder is absent, a random tiny Llama from
# `qserve init-model`. The server stays in the foreground until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/qserve
PORT=${PORT:-8000}
DATA=${QSERVE_STORIES_DIR:-data/stories260K}
MODEL_DIR=${QSERVE_DEMO_DIR:-${TMPDIR:-/tmp}/qserve-demo}
NAME=stories260K
mkdir -p "$MODEL_DIR"

if [ -f "$DATA/stories260K.bin" ]; then
  [ -f "$MODEL_DIR/$NAME/config.json" ] || "$BUILD/convert-llama2c" "$DATA/stories260K.bin" "$DATA/tok512.bin" "$MODEL_DIR/$NAME"
  PROMPT="Once upon a time"
else
  NAME=tiny-llama
  echo "demo: $DATA not found; serving a random-init tiny Llama instead (its text is noise)"
  [ -f "$MODEL_DIR/$NAME/config.json" ] || "$BIN" init-model "$MODEL_DIR/$NAME" --shape tiny-llama --seed 1
  PROMPT="Hello"
fi

"$BIN" "$MODEL_DIR/$NAME" --served-model-name "$NAME" --host 127.0.0.1 --port "$PORT" --device cpu &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null' EXIT INT TERM
for _ in $(seq 1 120); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  kill -0 $SERVER 2>/dev/null || { echo "demo: the server exited" >&2; exit 1; }
  sleep 0.5
done
REQ="{\"model\": \"$NAME\", \"prompt\": \"$PROMPT\", \"max_tokens\": 48, \"temperature\": 0}"
echo
echo "qserve is serving $NAME on http://127.0.0.1:$PORT (CPU). Try:"
echo "  curl http://127.0.0.1:$PORT/v1/completions -H 'Content-Type: application/json' -d '$REQ'"
echo
curl -s "http://127.0.0.1:$PORT/v1/completions" -H 'Content-Type: application/json' -d "$REQ"
echo
echo
if [ "${QSERVE_DEMO_ONCE:-0}" = 1 ]; then exit 0; fi
echo "Ctrl-C stops the server."
wait $SERVER
