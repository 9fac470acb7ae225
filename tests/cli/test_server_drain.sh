#!/usr/bin/env bash
# test_server_drain.sh — SIGTERM/SIGINT drain (issue 44 item 4): with 32 streams and 8
# non-streaming requests in flight, repeated signal runs must leave 0 truncated responses: every
# stream ends with `data: [DONE]` and a proper chunked terminator (curl exits 0), after an error
# event when it was cut short; every non-streaming request gets 200 or a 503 error body; requests
# sent during the drain get 503 with Retry-After; the server exits 0.
#  run 1: --shutdown-timeout 0 (abort at once), SIGTERM
#  run 2: --shutdown-timeout 2 with long requests, SIGINT; a new request during the drain gets 503
#  run 3: --shutdown-timeout 60 with all 40 requests accepted before the signal: everything
#         finishes normally, no error event
# (a request sent after the signal gets a whole 503 body, streaming or not: refused, not truncated)
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_drain "stories260K or the converter is missing ($STORIES_DATA, $BUILD_DIR/convert-llama2c)"
  exit 0
fi

# launch N_STREAM N_WHOLE MAX_TOKENS: starts the clients in the background (pids in CLIENTS).
launch() {
  CLIENTS=()
  rm -rf "$TMP/out"; mkdir -p "$TMP/out"
  local body="{\"prompt\":\"Once upon a time\",\"max_tokens\":$3,\"ignore_eos\":true,\"temperature\":0"
  for i in $(seq 1 "$1"); do
    ( command curl -sN --max-time 60 -H 'Content-Type: application/json' -o "$TMP/out/s$i" -w '%{http_code}' \
        -d "$body,\"stream\":true}" "$URL/v1/completions" >"$TMP/out/s$i.code"; echo $? >"$TMP/out/s$i.rc" ) &
    CLIENTS+=($!)
  done
  for i in $(seq 1 "$2"); do
    ( command curl -s --max-time 60 -H 'Content-Type: application/json' -o "$TMP/out/w$i" -w '%{http_code}' \
        -d "$body}" "$URL/v1/completions" >"$TMP/out/w$i.code"; echo $? >"$TMP/out/w$i.rc" ) &
    CLIENTS+=($!)
  done
}

# wait_running N [finished]: until the server reports N running or waiting sequences, counting
# finished ones too when a second argument is given (or 10 s pass).
wait_running() {
  for _ in $(seq 1 100); do
    local n
    n=$(command curl -s "$URL/metrics" | awk -v fin="${2:-}" '/^vllm:num_requests_(running|waiting)\{/ {s+=$2}
      fin && /^vllm:request_success_total\{/ {s+=$2} END {print s+0}')
    [ "${n:-0}" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# verify RUN EXPECT_ERRORS(yes|no|any): checks every client's output.
verify() {
  local run=$1 bad=0 errs=0 why=""
  for f in "$TMP"/out/s*.rc; do
    local b=${f%.rc}
    local rc code last
    rc=$(cat "$f"); code=$(cat "$b.code")
    last=$(grep '^data: ' "$b" | tail -1)
    if [ "$code" = 503 ] && [ "$rc" = 0 ] && grep -q 'shutting down' "$b"; then
      errs=$((errs + 1)); continue # sent after the signal: refused whole, not truncated
    fi
    if [ "$rc" != 0 ] || [ "$code" != 200 ] || [ "$last" != "data: [DONE]" ]; then
      bad=$((bad + 1)); why="$(basename "$b"): curl rc $rc, status $code, last line '$last'"
    fi
    grep -q '^data: {"error"' "$b" && errs=$((errs + 1))
  done
  for f in "$TMP"/out/w*.rc; do
    local b=${f%.rc}
    local rc code
    rc=$(cat "$f"); code=$(cat "$b.code")
    if [ "$rc" != 0 ] || { [ "$code" != 200 ] && [ "$code" != 503 ]; } || ! grep -q '^{' "$b"; then
      bad=$((bad + 1)); why="$(basename "$b"): curl rc $rc, status $code, body '$(head -c 100 "$b")'"
    fi
    if [ "$code" = 503 ]; then
      grep -q 'shutting down' "$b" || { bad=$((bad + 1)); why="503 without the shutdown message: $(head -c 200 "$b")"; }
      errs=$((errs + 1))
    fi
  done
  check "${run}_no_truncated_response" $(( bad == 0 ? 0 : 1 )) "$bad bad, e.g. $why"
  case $2 in
    yes) check "${run}_cut_requests_end_with_error" $(( errs > 0 ? 0 : 1 )) "no error event or 503 although the drain cut requests short";;
    no) check "${run}_all_finished_normally" $(( errs == 0 ? 0 : 1 )) "$errs requests ended with an error";;
  esac
}

# wait_exit NAME: the server exits 0 within 20 s.
wait_exit() {
  local rc=124
  for _ in $(seq 1 200); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then wait "$SERVER_PID"; rc=$?; break; fi
    sleep 0.1
  done
  check "$1_server_exits_0" $(( rc == 0 ? 0 : 1 )) "exit status $rc: $(tail -c 300 "$TMP/server.log")"
  SERVER_PID=
}

# --- run 1: abort at once ---
start_server "$MODEL" --max-num-seqs 4 --threads 1 --shutdown-timeout 0 || { notok run1_server_starts "$(tail -c 300 "$TMP/server.log")"; exit 0; }
launch 32 8 480
wait_running 30
check run1_requests_in_flight $? "the requests never showed up in /metrics"
kill -TERM "$SERVER_PID"
wait "${CLIENTS[@]}" 2>/dev/null
wait_exit run1
verify run1 yes

# --- run 2: a short grace period; new requests are refused meanwhile ---
start_server "$MODEL" --max-num-seqs 4 --threads 1 --shutdown-timeout 2 || { notok run2_server_starts "$(tail -c 300 "$TMP/server.log")"; exit 0; }
launch 32 8 480
wait_running 30
kill -INT "$SERVER_PID"
sleep 0.5
command curl -s -D "$TMP/late.h" -o "$TMP/late" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"prompt":"Hi","max_tokens":2}' "$URL/v1/completions" >"$TMP/late.code"
[ "$(cat "$TMP/late.code")" = 503 ] && grep -qi '^Retry-After:' "$TMP/late.h" && grep -q 'shutting down' "$TMP/late"
check run2_new_request_during_drain_503 $? "status $(cat "$TMP/late.code"): $(head -c 200 "$TMP/late")"
[ "$(command curl -s -o /dev/null -w '%{http_code}' "$URL/health")" = 503 ]
check run2_health_503_while_draining $? ""
wait "${CLIENTS[@]}" 2>/dev/null
wait_exit run2
verify run2 yes
grep -q "still running after 2 s: ending them with an error" "$TMP/server.log"
check run2_drain_logged $? "$(grep draining "$TMP/server.log")"

# --- run 3: everything finishes inside the grace period ---
start_server "$MODEL" --max-num-seqs 4 --threads 1 --shutdown-timeout 60 || { notok run3_server_starts "$(tail -c 300 "$TMP/server.log")"; exit 0; }
launch 32 8 400
wait_running 40 finished # all of them in before the signal: none may be refused
check run3_requests_in_flight $? "the 40 requests never showed up in /metrics"
kill -TERM "$SERVER_PID"
wait "${CLIENTS[@]}" 2>/dev/null
wait_exit run3
verify run3 no
