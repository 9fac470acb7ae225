#!/usr/bin/env bash
# test_eval_qserve.sh — qserve-eval against the real qserve: stories260K (converted into a
# temporary HF folder by build/convert-llama2c) served on CPU through evals/configs/stories260K.yaml
# (threshold 0: the model cannot do arithmetic; this checks the whole path), then
# evals/configs/models-small.txt with it and its FP8 / NVFP4 quantizations made by `qserve quantize`,
# and the Marlin list's up-front skip of Llama 4.
set -u
BUILD_DIR="${QSERVE_BUILD:-build}"
EVAL="$BUILD_DIR/qserve-eval"
QSERVE="${QSERVE_BIN:-$BUILD_DIR/qserve}"
CONVERT="$BUILD_DIR/convert-llama2c"
SHARED="${QSERVE_SHARED_DATA:-../shared/data}"
ALL="stories260K_config stories260K_results server_stopped small_list marlin_list_skips_missing_models"
skip_all() { for t in $ALL; do echo "skip $t: $1"; done; exit 0; }
[ -x "$EVAL" ] || skip_all "$EVAL is not built"
[ -x "$QSERVE" ] || skip_all "$QSERVE is not built"
[ -x "$CONVERT" ] || skip_all "$CONVERT is not built"
STORIES=${QSERVE_STORIES_DIR:-data/stories260K}
[ -f "$STORIES/stories260K.bin" ] || skip_all "stories260K absent at $STORIES"
[ -f "$SHARED/gsm8k/test.jsonl" ] || skip_all "GSM8K data absent at $SHARED/gsm8k"
command -v python3 >/dev/null || skip_all "python3 not found"
PY=$(python3 -c 'import sys; print(sys.executable)')

TMP=$(mktemp -d /tmp/qs_eval_qserve.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
if ! "$CONVERT" "$STORIES/stories260K.bin" "$STORIES/tok512.bin" "$TMP/model" >"$TMP/convert.log" 2>&1; then
    skip_all "convert-llama2c failed: $(tail -2 "$TMP/convert.log")"
fi
export QSERVE_STORIES260K_DIR="$TMP/model"
export QSERVE_GSM8K_DIR="$SHARED/gsm8k"

"$EVAL" evals/configs/stories260K.yaml --server "$QSERVE" --save-results "$TMP/r.json" --server-log "$TMP/server.log" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -q "^PASS: accuracy" "$TMP/out"; then echo "ok stories260K_config"
else echo "not ok stories260K_config: exit $rc: $(tail -5 "$TMP/err") $(tail -5 "$TMP/server.log" 2>/dev/null)"; fi
if "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["num_questions"] == 20 and r["num_shots"] == 0, r
assert r["failed_requests"] == 0, "some requests failed"
assert 0 < r["total_output_tokens"] <= 20 * 32, r["total_output_tokens"]
assert 0 <= r["accuracy"] <= 1 and r["passed"] is True
assert r["request_params"]["endpoint"] == "/v1/completions"
' "$TMP/r.json" >"$TMP/check.out" 2>&1; then echo "ok stories260K_results"
else echo "not ok stories260K_results: $(tail -3 "$TMP/check.out")"; fi
port=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["request_params"]["url"].rsplit(":",1)[1])' "$TMP/r.json" 2>/dev/null)
if [ -n "$port" ] && grep -q "shutdown complete\|shutting down" "$TMP/server.log" &&
   ! "$PY" -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=1)" "$port" 2>/dev/null
then echo "ok server_stopped"; else echo "not ok server_stopped: port ${port:-?} still open or no shutdown in the log"; fi

export QSERVE_STORIES260K_FP8_DIR="$TMP/model-fp8" QSERVE_STORIES260K_NVFP4_DIR="$TMP/model-nvfp4"
if "$QSERVE" quantize "$TMP/model" "$QSERVE_STORIES260K_FP8_DIR" --scheme fp8-dynamic >"$TMP/q.log" 2>&1 &&
   "$QSERVE" quantize "$TMP/model" "$QSERVE_STORIES260K_NVFP4_DIR" --scheme nvfp4-w4a16 >>"$TMP/q.log" 2>&1; then
    "$EVAL" --config-list evals/configs/models-small.txt --server "$QSERVE" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -eq 0 ] && grep -Eq '^stories260K.yaml +pass ' "$TMP/out" &&
       grep -Eq '^stories260K-fp8-dynamic.yaml +pass ' "$TMP/out" && grep -Eq '^stories260K-nvfp4-w4a16.yaml +pass ' "$TMP/out" &&
       grep -q "3 passed, 0 failed, 0 skipped, 0 errors" "$TMP/out"
    then echo "ok small_list"; else echo "not ok small_list: exit $rc: $(cat "$TMP/out") $(tail -3 "$TMP/err")"; fi
else
    echo "skip small_list: qserve quantize failed: $(tail -2 "$TMP/q.log")"
fi

# No Marlin model is on this machine: with --skip-missing-models everything is skipped without
# starting a server, Llama 4 as the others (its architecture is one qserve runs).
HF_HUB_CACHE="$TMP/empty-hub" HF_HOME="$TMP/empty-home" HOME="$TMP" \
    "$EVAL" --config-list evals/configs/models-marlin.txt --skip-missing-models --server "$QSERVE" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && grep -Eq '^Llama-4-Scout-Fp8-ModelOpt-marlin.yaml +skipped' "$TMP/out" &&
   ! grep -q 'Llama4ForConditionalGeneration' "$TMP/out" &&
   grep -q "0 passed, 0 failed, 6 skipped, 0 errors" "$TMP/out"
then echo "ok marlin_list_skips_missing_models"; else echo "not ok marlin_list_skips_missing_models: exit $rc: $(cat "$TMP/out")"; fi
