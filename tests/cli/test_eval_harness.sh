#!/usr/bin/env bash
# test_eval_harness.sh — qserve-eval end to end against tests/cli/fake_openai_server.py (a stand-in
# server that records what it receives): the server command line, every prompt byte for byte
# against vLLM's format rebuilt here in Python, accuracy against vLLM's get_answer_value applied
# here to the recorded replies, exit codes by threshold, --save-results, chat mode, --host/--port,
# config lists, and the failure paths (missing binary, early exit, startup timeout, Ctrl-C).
set -u
EVAL="${QSERVE_BUILD:-build}/qserve-eval"
FAKE="$PWD/tests/cli/fake_openai_server.py"
DATA="${QSERVE_SHARED_DATA:-../shared/data}/gsm8k"
ALL="prompt_bytes argv server_stopped accuracy exit_pass exit_fail save_results chat_mode standalone \
missing_binary early_exit startup_timeout interrupt died_during_run sigkill_after_grace config_list bad_config"
if [ ! -x "$EVAL" ]; then for t in $ALL; do echo "skip $t: $EVAL is not built"; done; exit 0; fi
if [ ! -f "$DATA/test.jsonl" ] || [ ! -f "$DATA/train.jsonl" ]; then
    for t in $ALL; do echo "skip $t: GSM8K data absent at $DATA"; done; exit 0
fi
if ! command -v python3 >/dev/null; then for t in $ALL; do echo "skip $t: python3 not found"; done; exit 0; fi
# Resolve python3 once: version-manager shims can take seconds per start on a loaded machine; the
# fake server's `#!/usr/bin/env python3` then finds the real interpreter first too.
PY=$(python3 -c 'import sys; print(sys.executable)')
export PATH="$(dirname "$PY"):$PATH"
DATA=$(cd "$DATA" && pwd)

TMP=$(mktemp -d /tmp/qs_eval_cli.XXXXXX)
BG_PIDS=()
cleanup() {
    for p in "${BG_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

ok() { echo "ok $1"; }
not_ok() { echo "not ok $1: $2"; }
check() { # name, command...: ok when the command succeeds
    local name=$1; shift
    if "$@" >"$TMP/check.out" 2>&1; then ok "$name"; else not_ok "$name" "$(head -c 600 "$TMP/check.out")"; fi
}
port_closed() { # true when nothing accepts connections on 127.0.0.1:$1
    ! python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=1)" "$1" 2>/dev/null
}

mkdir -p "$TMP/model" "$TMP/rec"
# $1 = file, $2 = threshold, $3 = extra YAML lines
write_config() {
    cat >"$1" <<YAML
model_name: "$TMP/model"
accuracy_threshold: $2
num_questions: 10
num_fewshot: 3
startup_max_wait_seconds: 20
server_args: >-
  --max-model-len 4096
  --kernel-config '{"linear_backend": "marlin", "moe_backend": "marlin"}'
  --served-model-name "tiny model"
env:
  FAKE_RECORD_DIR: "$TMP/rec"
  FAKE_GSM8K_TEST: "$DATA/test.jsonl"
$3
YAML
}

# --- one completions run, checked several ways ---
write_config "$TMP/c.yaml" 0.0 ""
"$EVAL" "$TMP/c.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" --save-results "$TMP/r.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
cat > "$TMP/check_prompts.py" <<'PY'
import json, sys
data, rec, shots, n, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
train = [json.loads(l) for l in open(f"{data}/train.jsonl", encoding="utf-8")]
test = [json.loads(l) for l in open(f"{data}/test.jsonl", encoding="utf-8")]
block = "".join(f"Question: {train[i]['question']}\nAnswer: {train[i]['answer']}\n\n" for i in range(shots))
expected = {block + f"Question: {test[i]['question']}\nAnswer:" for i in range(n)}
reqs = [json.loads(l) for l in open(f"{rec}/requests.jsonl", encoding="utf-8")]
assert len(reqs) == n, f"{len(reqs)} requests, want {n}"
seen = set()
for r in reqs:
    assert r["path"] == path, r["path"]
    body = json.loads(r["body"])
    if path == "/v1/completions":
        assert list(body) == ["prompt", "max_tokens", "stop", "temperature", "seed"], list(body)
        prompt = body["prompt"]
    else:
        assert list(body) == ["messages", "max_tokens", "stop", "model", "temperature", "seed"], list(body)
        assert body["model"] == "tiny model", body["model"]
        assert body["messages"][0]["role"] == "user"
        prompt = body["messages"][0]["content"]
    assert prompt in expected, "a prompt differs from vLLM's format:\n" + prompt[-300:]
    assert body["stop"] == ["Question", "Assistant:", "<|separator|>"]
    assert body["max_tokens"] == 256 and body["temperature"] == 0 and body["seed"] == 42, body
    seen.add(prompt)
assert seen == expected, "not every question was asked exactly once"
PY
cat > "$TMP/score.py" <<'PY'
import json, re, ast, sys
def get_answer_value(s):  # vLLM tests/evals/gsm8k/gsm8k_eval.py semantics
    nums = re.findall(r"\d+", s.replace(",", ""))
    if not nums:
        return -9999999
    try:
        return ast.literal_eval(nums[-1])
    except SyntaxError:
        return -9999999
data, rec = sys.argv[1], sys.argv[2]
test = [json.loads(l) for l in open(f"{data}/test.jsonl", encoding="utf-8")]
by_q = {t["question"]: get_answer_value(t["answer"]) for t in test}
reqs = [json.loads(l) for l in open(f"{rec}/requests.jsonl", encoding="utf-8")]
correct = 0
for r in reqs:
    body = json.loads(r["body"])
    prompt = body.get("prompt") or body["messages"][0]["content"]
    q = prompt.rsplit("Question: ", 1)[1][: -len("\nAnswer:")]
    correct += get_answer_value(r["reply"]) == by_q[q]
print(f"{correct / len(reqs):.3f}")
PY

if [ $rc -eq 0 ]; then ok exit_pass; else not_ok exit_pass "threshold 0 gave exit $rc: $(tail -5 "$TMP/err")"; fi
check prompt_bytes python3 "$TMP/check_prompts.py" "$DATA" "$TMP/rec" 3 10 /v1/completions
check argv python3 -c '
import json, sys
argv = json.load(open(sys.argv[1]))
want = [sys.argv[2], "--max-model-len", "4096", "--kernel-config",
        "{\"linear_backend\": \"marlin\", \"moe_backend\": \"marlin\"}", "--served-model-name", "tiny model",
        "--host", "127.0.0.1", "--port"]
assert argv[:len(want)] == want, argv
assert argv[len(want)].isdigit() and argv[len(want) + 1:] == ["--seed", "0"], argv
' "$TMP/rec/argv.json" "$TMP/model"
port=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(a[a.index("--port")+1])' "$TMP/rec/argv.json")
check server_stopped port_closed "$port"
want=$(python3 "$TMP/score.py" "$DATA" "$TMP/rec")
got=$(sed -n 's/^Accuracy: \([0-9.]*\).*/\1/p' "$TMP/out")
if [ -n "$want" ] && [ "$want" = "$got" ]; then ok accuracy; else not_ok accuracy "printed '$got', vLLM scoring gives '$want'"; fi
check save_results python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert abs(r["accuracy"] - float(sys.argv[2])) < 1e-9, r["accuracy"]
for k in ["invalid_rate", "latency", "questions_per_second", "total_output_tokens", "tokens_per_second",
          "num_questions", "request_latency_p50", "request_latency_p99", "request_params", "config"]:
    assert k in r, k
assert r["num_questions"] == 10 and r["num_shots"] == 3 and r["passed"] is True
assert r["request_params"]["stop"] == ["Question", "Assistant:", "<|separator|>"]
assert r["config"]["server_args"].startswith("--max-model-len 4096")
assert r["config"]["env"]["FAKE_GSM8K_TEST"].endswith("test.jsonl")
' "$TMP/r.json" "$want"

# --- threshold above the reachable accuracy: exit 1 ---
rm -f "$TMP/rec/"*
write_config "$TMP/high.yaml" 0.99 ""
"$EVAL" "$TMP/high.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "^FAIL: accuracy" "$TMP/out"; then ok exit_fail; else not_ok exit_fail "exit $rc"; fi

# --- chat completions ---
rm -f "$TMP/rec/"*
write_config "$TMP/chat.yaml" 0.0 "use_chat_completions: true"
"$EVAL" "$TMP/chat.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && python3 "$TMP/check_prompts.py" "$DATA" "$TMP/rec" 3 10 /v1/chat/completions >"$TMP/check.out" 2>&1
then ok chat_mode; else not_ok chat_mode "exit $rc: $(head -c 400 "$TMP/check.out")"; fi

# --- a server already running: --host/--port, nothing started or stopped ---
rm -f "$TMP/rec/"*
FAKE_RECORD_DIR="$TMP/rec" FAKE_GSM8K_TEST="$DATA/test.jsonl" "$FAKE" "$TMP/model" --port 0 >"$TMP/standalone.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/rec/port" ] && break; sleep 0.1; done
sport=$(cat "$TMP/rec/port" 2>/dev/null)
"$EVAL" --host 127.0.0.1 --port "${sport:-1}" --num-questions 4 --num-shots 2 --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 0 ] && python3 "$TMP/check_prompts.py" "$DATA" "$TMP/rec" 2 4 /v1/completions >"$TMP/check.out" 2>&1 &&
   ! port_closed "$sport"; then ok standalone; else not_ok standalone "exit $rc: $(head -c 300 "$TMP/check.out") $(tail -3 "$TMP/err")"; fi

# --- failure paths ---
"$EVAL" "$TMP/c.yaml" --server /nonexistent/qserve --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "/nonexistent/qserve" "$TMP/err"; then ok missing_binary; else not_ok missing_binary "exit $rc"; fi

write_config "$TMP/exit.yaml" 0.0 "  FAKE_EXIT_CODE: \"1\""
"$EVAL" "$TMP/exit.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "exited unexpectedly.*exit status 1" "$TMP/err" && grep -q "weights file is corrupt" "$TMP/err"
then ok early_exit; else not_ok early_exit "exit $rc: $(tail -5 "$TMP/err")"; fi

rm -f "$TMP/rec/"*
write_config "$TMP/slow.yaml" 0.0 "  FAKE_NEVER_READY: \"1\""
sed -i 's/^startup_max_wait_seconds: .*/startup_max_wait_seconds: 3/' "$TMP/slow.yaml"
start=$(date +%s)
"$EVAL" "$TMP/slow.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
took=$(( $(date +%s) - start ))
sport=$(cat "$TMP/rec/port" 2>/dev/null)
if [ $rc -eq 2 ] && grep -q "failed to start in time" "$TMP/err" && grep -q "listening on" "$TMP/err" &&
   [ $took -lt 15 ] && [ -n "$sport" ] && port_closed "$sport"; then ok startup_timeout
else not_ok startup_timeout "exit $rc after ${took}s: $(tail -5 "$TMP/err")"; fi

rm -f "$TMP/rec/"*
sed 's/^startup_max_wait_seconds: .*/startup_max_wait_seconds: 60/' "$TMP/slow.yaml" >"$TMP/int.yaml"
"$EVAL" "$TMP/int.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err" &
epid=$!
BG_PIDS+=($epid)
for _ in $(seq 100); do [ -s "$TMP/rec/port" ] && break; sleep 0.1; done
sport=$(cat "$TMP/rec/port" 2>/dev/null)
kill -INT $epid
for _ in $(seq 100); do kill -0 $epid 2>/dev/null || break; sleep 0.1; done
wait $epid; rc=$?
if [ $rc -eq 2 ] && grep -q "interrupted" "$TMP/err" && [ -n "$sport" ] && port_closed "$sport"; then ok interrupt
else not_ok interrupt "exit $rc: $(tail -3 "$TMP/err")"; fi

rm -f "$TMP/rec/"*
write_config "$TMP/die.yaml" 0.0 "  FAKE_DIE_AFTER: \"3\""
sed -i 's/^num_questions: .*/num_questions: 40/' "$TMP/die.yaml"
echo "max_concurrency: 2" >>"$TMP/die.yaml"
"$EVAL" "$TMP/die.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "the server exited during the run (exit status 1)" "$TMP/err" &&
   grep -q "dying after 3 requests" "$TMP/err"; then ok died_during_run
else not_ok died_during_run "exit $rc: $(tail -4 "$TMP/err")"; fi

rm -f "$TMP/rec/"*
write_config "$TMP/term.yaml" 0.0 "  FAKE_IGNORE_TERM: \"1\""
start=$(date +%s)
"$EVAL" "$TMP/term.yaml" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" --stop-grace-seconds 1 >"$TMP/out" 2>"$TMP/err"
rc=$?
took=$(( $(date +%s) - start ))
sport=$(cat "$TMP/rec/port" 2>/dev/null)
if [ $rc -eq 0 ] && [ $took -lt 15 ] && [ -n "$sport" ] && port_closed "$sport"; then ok sigkill_after_grace
else not_ok sigkill_after_grace "exit $rc after ${took}s: $(tail -3 "$TMP/err")"; fi

# --- a config list: pass, skipped (an architecture qserve lacks), missing file ---
mkdir -p "$TMP/list/sub"
write_config "$TMP/list/sub/fake.yaml" 0.0 ""
mkdir -p "$TMP/gpt2"
echo '{"architectures": ["GPT2LMHeadModel"]}' >"$TMP/gpt2/config.json"
sed "s|^model_name: .*|model_name: \"$TMP/gpt2\"|" "$TMP/list/sub/fake.yaml" >"$TMP/list/sub/gpt2.yaml"
printf '# test list\nsub/fake.yaml\n\nsub/gpt2.yaml\nsub/missing.yaml\n' >"$TMP/list/models.txt"
"$EVAL" --config-list "$TMP/list/models.txt" --server "$FAKE" --server-log "$TMP/server.log" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -Eq '^fake.yaml +pass ' "$TMP/out" &&
   grep -Eq '^gpt2.yaml +skipped .*architecture GPT2LMHeadModel is not supported' "$TMP/out" &&
   grep -Eq '^missing.yaml +ERROR .*missing config file' "$TMP/out" && grep -q "1 passed, 0 failed, 1 skipped, 1 errors" "$TMP/out"
then ok config_list; else not_ok config_list "exit $rc: $(cat "$TMP/out")"; fi

printf 'model_name: m\naccuracy_threshold: 0.5\nnum_questions: ten\nnum_fewshot: 5\n' >"$TMP/bad.yaml"
"$EVAL" "$TMP/bad.yaml" --data-dir "$DATA" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "bad.yaml:3: key 'num_questions' must be an integer" "$TMP/err"; then ok bad_config
else not_ok bad_config "exit $rc: $(cat "$TMP/err")"; fi
