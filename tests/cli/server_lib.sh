# server_lib.sh — sourced by the server suites (test_server*.sh): builds the stories260K
# checkpoint with the converter, starts `qserve` on 127.0.0.1 with a free port (--port 0, read
# back from the log), waits for /health, and always stops it on exit. Helpers print TAP-ish
# `ok NAME` / `not ok NAME: why` / `skip NAME: why` lines.
BIN=${QSERVE_BIN:-build/qserve}
BUILD_DIR=${QSERVE_BUILD:-build}
SHARED=${QSERVE_SHARED_DATA:-../shared/data}
STORIES_DATA=${QSERVE_STORIES_DIR:-data/stories260K} # vendored: the repository's own copy
TMP=$(mktemp -d)
SERVER_PID=
PORT=
URL=

ok() { echo "ok $1"; }
notok() { echo "not ok $1${2:+: $2}"; }
skip() { echo "skip $1: $2"; }
check() { # check NAME CONDITION_STATUS DETAIL
  if [ "$2" -eq 0 ]; then ok "$1"; else notok "$1" "$3"; fi
}

stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null
  fi
  SERVER_PID=
}
# Keeps the last server log beside the suite's log, for failures.
cleanup() {
  stop_server
  mkdir -p "$BUILD_DIR/test-logs" 2>/dev/null && cp "$TMP/server.log" "$BUILD_DIR/test-logs/$(basename "$0" .sh).server.log" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# make_stories DIR: converts stories260K into a checkpoint directory; 1 when the data is absent.
make_stories() {
  local src=$STORIES_DATA
  [ -f "$src/stories260K.bin" ] && [ -f "$src/tok512.bin" ] && [ -x "$BUILD_DIR/convert-llama2c" ] || return 1
  "$BUILD_DIR/convert-llama2c" "$src/stories260K.bin" "$src/tok512.bin" "$1" >"$TMP/convert.log" 2>&1
}

# start_server MODEL_DIR [flags...]: starts qserve, sets SERVER_PID PORT URL, waits for /health 200.
start_server() {
  local model=$1; shift
  "$BIN" serve "$model" --host 127.0.0.1 --port 0 --served-model-name stories "$@" >"$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 300); do
    PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$TMP/server.log" 2>/dev/null | head -1 | sed 's/.*://')
    if [ -n "$PORT" ]; then
      URL="http://127.0.0.1:$PORT"
      [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$URL/health")" = 200 ] && return 0
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# The server answers 415 to a body that is not declared JSON, and curl's -d declares
# application/x-www-form-urlencoded: every curl here that sends data says JSON unless it names a
# Content-Type itself (the 415 tests call `command curl`).
curl() {
  local a
  for a in "$@"; do
    case "$a" in -d|--data|--data-binary|--data-raw) command curl -H 'Content-Type: application/json' "$@"; return;; esac
  done
  command curl "$@"
}

# post PATH JSON: prints the body, then the status on the last line.
post() { curl -s --max-time 60 -w '\n%{http_code}' -H 'Content-Type: application/json' "${@:3}" -d "$2" "$URL$1"; }
# status_of PATH JSON [curl args]: the HTTP status only.
status_of() { curl -s --max-time 60 -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' "${@:3}" -d "$2" "$URL$1"; }
# jq-free JSON field reads through node (installed for the openai client tests).
# json EXPR: evaluates a JavaScript expression over the JSON on stdin, bound to r; a leading '.'
# means r itself (json '.choices[0].text'). Strings print raw, everything else as JSON.
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const a=process.argv[1];const v=(new Function("r","return "+(a.startsWith(".")?"r"+a:a)))(JSON.parse(s));console.log(typeof v==="string"?v:JSON.stringify(v));})' "$1"; }
server_rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null; }
