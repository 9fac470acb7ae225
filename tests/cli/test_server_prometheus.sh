#!/usr/bin/env bash
# test_server_prometheus.sh — /metrics as Prometheus reads it (stories260K on CPU): promtool (from
# Debian's prometheus package) lints the exposition and finds nothing but what vLLM's own names
# draw (the ':' in every vllm:/qserve: name, and the "_total" suffix vLLM gives its
# vllm:iteration_tokens_total histogram); then a real Prometheus server scrapes the running
# qserve every second while requests run, and a PromQL query through its HTTP API returns a
# generation-token rate above 0. Bounded: the Prometheus part gives up after 30 s.
set -u
cd "$(dirname "$0")/../.."
. tests/cli/server_lib.sh

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  skip server_prometheus "promtool / prometheus are not installed (scripts/install-deps.sh installs Debian's prometheus)"
  exit 0
fi
MODEL=$TMP/stories
if ! make_stories "$MODEL"; then
  skip server_prometheus "stories260K or the converter is missing ($SHARED/tinystories, $BUILD_DIR/convert-llama2c)"
  exit 0
fi
if ! start_server "$MODEL" --max-num-seqs 4; then
  notok server_starts "$(tail -c 500 "$TMP/server.log")"
  exit 0
fi
curl -s --max-time 60 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":8,"n":2}' >/dev/null
curl -s "$URL/metrics" >"$TMP/metrics"

promtool check metrics <"$TMP/metrics" >"$TMP/lint" 2>&1
grep -v -e "metric names should not contain ':'" \
  -e '^vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix$' "$TMP/lint" >"$TMP/lint.other"
[ -s "$TMP/lint" ] && [ ! -s "$TMP/lint.other" ] && ! grep -q kv_cache_blocks_total "$TMP/metrics"
check promtool_check_metrics_clean_but_colons $? "$(head -c 600 "$TMP/lint.other")"

for m in vllm:num_requests_running vllm:num_requests_waiting vllm:kv_cache_usage_perc vllm:prompt_tokens_total \
         vllm:generation_tokens_total vllm:request_success_total vllm:time_to_first_token_seconds \
         vllm:inter_token_latency_seconds vllm:time_per_output_token_seconds vllm:e2e_request_latency_seconds \
         vllm:request_queue_time_seconds vllm:request_prompt_tokens vllm:request_generation_tokens \
         vllm:request_prefill_time_seconds vllm:request_decode_time_seconds vllm:request_inference_time_seconds \
         vllm:request_time_per_output_token_seconds \
         vllm:iteration_tokens_total vllm:num_preemptions_total vllm:cache_config_info \
         vllm:prefix_cache_queries_total vllm:prefix_cache_hits_total qserve:kv_cache_blocks; do
  grep -q "^$m[_a-z]*{model_name=\"stories\"" "$TMP/metrics" || { echo "missing $m"; break; }
done >"$TMP/missing"
[ ! -s "$TMP/missing" ] && grep -q '^# TYPE vllm:request_prompt_tokens histogram' "$TMP/metrics" && \
  grep -q '^vllm:request_success_total{model_name="stories",engine="0",finished_reason="length"} 2$' "$TMP/metrics"
check vllm_metric_names_with_model_name $? "$(cat "$TMP/missing")"

PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: qserve
    static_configs:
      - targets: ['127.0.0.1:$PORT']
YAML
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
trap 'kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; cleanup' EXIT
QUERY='sum(rate(vllm:generation_tokens_total{model_name="stories"}[10s]))'
rate=0
deadline=$(( $(date +%s) + 30 ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  curl -s --max-time 10 "$URL/v1/completions" -d '{"prompt":"Once upon a time","max_tokens":16}' >/dev/null
  rate=$(command curl -s --max-time 2 "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$QUERY" |
    json 'r.data && r.data.result.length ? r.data.result[0].value[1] : "0"' 2>/dev/null)
  awk -v r="${rate:-0}" 'BEGIN { exit !(r + 0 > 0) }' && break
  sleep 0.5
done
awk -v r="${rate:-0}" 'BEGIN { exit !(r + 0 > 0) }'
check prometheus_scrapes_generation_token_rate $? "rate '$rate' after 30 s; $(tail -c 400 "$TMP/prometheus.log")"
