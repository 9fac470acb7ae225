#!/usr/bin/env bash
# test_server_dos.sh — no lock-out by connections (issue 44 item 1): 5,000 idle connections from
# many loopback addresses, 600 from one address (over the per-client cap) and a slowloris crowd,
# while a normal client's /health and completion requests must each be answered within a second
# (tests/cli/conn_flood.py); the open-file limit raised at start-up and logged. Bounded: about
# 15 s on loopback.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_dos "stories260K or the converter is missing ($STORIES_DATA, $BUILD_DIR/convert-llama2c)"
  exit 0
fi
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt 12000 ]; then
  skip server_dos "the hard open-file limit ($hard) is below the 12,000 this test needs"
  exit 0
fi
# the server starts with a soft limit of 1,024, as on a default system, and must raise it itself
ulimit -Sn 1024
if ! start_server "$MODEL" --max-connections 8000 --max-connections-per-client 64 --client-timeout 2; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
ok server_starts
grep -q "open files: soft limit raised from 1024 to" "$TMP/server.log"
check fd_limit_raised_and_logged $? "$(grep 'open files' "$TMP/server.log")"
grep -q "at most 8000 connections (64 per client address), 2 s to send a request" "$TMP/server.log"
check connection_limits_logged $? "$(grep 'http:' "$TMP/server.log" | head -3)"

timeout 120 python3 tests/cli/conn_flood.py "$PORT" "$SERVER_PID" 2 64 5000 600 200
[ $? -ne 124 ]
check flood_finished_in_time $? "conn_flood.py ran past 120 s"
kill -0 "$SERVER_PID" 2>/dev/null
check server_survived $? "$(tail -c 500 "$TMP/server.log")"
