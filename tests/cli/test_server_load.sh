#!/usr/bin/env bash
# test_server_load.sh — qserve under load on 127.0.0.1 (stories260K, CPU): 64 concurrent clients
# mixing streaming and not, every greedy text identical to the same request run alone, no failed
# request, server RSS flat after the burst; then malformed and hostile requests (invalid UTF-8,
# huge numbers, deeply nested JSON, a 10 MB body, garbage, a client sending a byte at a time)
# interleaved with good ones, which must all succeed. Driven by tests/node/load.mjs.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_load "stories260K or the converter is missing"
  exit 0
fi
if ! command -v node >/dev/null; then
  skip server_load "node is missing (scripts/install-deps.sh installs it)"
  exit 0
fi
if ! start_server "$MODEL" --max-num-seqs 32 --max-num-batched-tokens 256; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
LOAD="timeout 150 node tests/node/load.mjs $URL"
$LOAD reference "$TMP/ref.json" || exit 0
# One warm-up burst so allocator pools and thread stacks exist before RSS is measured.
$LOAD burst "$TMP/ref.json" >/dev/null 2>&1
rss_before=$(server_rss_kb)
$LOAD burst "$TMP/ref.json"
$LOAD burst "$TMP/ref.json" | sed 's/^ok burst_64/ok second_burst_64/; s/^not ok burst_64/not ok second_burst_64/'
rss_after=$(server_rss_kb)
# flat: within 8 MiB or 10% of the warmed-up size (not under ASan, whose quarantine holds freed
# memory on purpose; LeakSanitizer checks that build instead)
limit=$(( rss_before / 10 > 8192 ? rss_before / 10 : 8192 ))
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
  skip rss_flat_after_bursts "ASan build (its quarantine keeps freed memory resident)"
else
  [ -n "$rss_before" ] && [ -n "$rss_after" ] && [ $(( rss_after - rss_before )) -le $limit ]
  check rss_flat_after_bursts $? "RSS ${rss_before} kB -> ${rss_after} kB"
fi
echo "# RSS ${rss_before} kB -> ${rss_after} kB" >&2
$LOAD hostile "$TMP/ref.json"
kill -0 "$SERVER_PID" 2>/dev/null
check server_alive_after_hostile_input $? "the server died: $(tail -c 300 "$TMP/server.log")"
running=$(curl -s "$URL/metrics" | awk '/^vllm:num_requests_running/ {print $2}')
[ "$running" = 0 ]
check nothing_left_running $? "running=$running"
exit 0
