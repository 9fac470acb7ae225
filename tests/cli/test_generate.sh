#!/usr/bin/env bash
# test_generate.sh — `qserve generate` end to end on stories260K converted by build/convert-llama2c:
# the greedy 200 tokens and their text equal llama2.c's goldens; a BF16 copy, FP8 copies made by
# `qserve quantize`, online --quantization fp8 and bf16 / FP8 KV caches keep the first sentence;
# sampling is reproducible per seed; stop strings, logprobs, --chat and bad arguments behave. Prints ok / not ok / skip.
set -u
BIN=${QSERVE_BIN:-build/qserve}
BUILD=${QSERVE_BUILD:-build}
DATA=${QSERVE_STORIES_DIR:-data/stories260K} # vendored
names="greedy_ids greedy_text streamed_text bf16_first_sentence fp8_dynamic_first_sentence fp8_block_first_sentence online_fp8_first_sentence kv_bf16_first_sentence kv_fp8_first_sentence kv_dtype_bad seed_reproducible stop_string logprobs chat moe_backend_without_tokenizer bad_args"
. "$(dirname "$0")/check_lib.sh"
[ -f "$DATA/stories260K.bin" ] || skip_all "stories260K not found under $DATA" $names
M=$TMP/stories260K
"$BUILD/convert-llama2c" "$DATA/stories260K.bin" "$DATA/tok512.bin" "$M" || { echo "not ok convert: convert-llama2c failed"; exit 1; }

py_json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }

"$BIN" generate "$M" --prompt-ids 1 --max-tokens 200 --temperature 0 --ignore-eos --json >"$TMP/g.json" 2>"$TMP/g.err"
py_json "$TMP/g.json" "sys.exit(0 if d['token_ids'] == [int(x) for x in open('$DATA/golden_greedy_200_ids.txt').read().split()] else 1)"
check greedy_ids $? "$(head -c 300 "$TMP/g.err")"
py_json "$TMP/g.json" "sys.exit(0 if d['text'] == open('$DATA/golden_greedy_200.txt').read() and d['prompt_ids'] == [1] else 1)"
check greedy_text $?

# streaming mode prints the same text (plus a final newline) and a tokens/s line on stderr
"$BIN" generate "$M" --prompt-ids 1 --max-tokens 200 --temperature 0 --ignore-eos >"$TMP/s.txt" 2>"$TMP/s.err"
python3 -c "import sys; sys.exit(0 if open('$TMP/s.txt').read() == open('$DATA/golden_greedy_200.txt').read() + '\n' else 1)" \
  && grep -q 'tokens/s' "$TMP/s.err"
check streamed_text $?

first_sentence() { # model dir [flags] -> ok if its greedy text starts with the golden's first sentence
  "$BIN" generate "$@" --prompt-ids 1 --max-tokens 40 --temperature 0 --ignore-eos --json >"$TMP/q.json" 2>"$TMP/q.err" &&
    python3 -c "import json,sys; t=open('$DATA/golden_greedy_200.txt').read(); s=t[:t.index('.')+1]; sys.exit(0 if json.load(open('$TMP/q.json'))['text'].startswith(s) else 1)"
}
# BF16 weights (the converter's --dtype bf16), and copies made by `qserve quantize`
"$BUILD/convert-llama2c" "$DATA/stories260K.bin" "$DATA/tok512.bin" "$TMP/bf16" --dtype bf16 >/dev/null 2>&1 &&
  first_sentence "$TMP/bf16"
check bf16_first_sentence $? "$(tail -c 300 "$TMP/q.err")"
for q in fp8-dynamic fp8-block; do  # NVFP4: test_hf_goldens (llama/mixtral-nvfp4a16)
  n=$(echo "$q" | tr - _)_first_sentence
  if "$BIN" quantize --help >/dev/null 2>&1; then
    if "$BIN" quantize "$M" "$TMP/$q" --scheme "$q" >"$TMP/quant-$q.log" 2>&1; then
      first_sentence "$TMP/$q"; check "$n" $? "$(tail -c 300 "$TMP/q.err")"
    else
      echo "not ok $n: qserve quantize --scheme $q failed: $(tail -c 200 "$TMP/quant-$q.log")"
    fi
  else
    echo "skip $n: qserve quantize is not built"
  fi
done

first_sentence "$M" --quantization fp8 && grep -q "fp8_w8a8" "$TMP/q.err"
check online_fp8_first_sentence $? "$(tail -c 300 "$TMP/q.err")"
# the KV cache in bf16 and in FP8 E4M3 (scales 1.0: stories260K has none, and the log says so)
first_sentence "$M" --kv-cache-dtype bf16
check kv_bf16_first_sentence $? "$(tail -c 300 "$TMP/q.err")"
first_sentence "$M" --kv-cache-dtype fp8 && grep -q "KV cache dtype fp8_e4m3 (--kv-cache-dtype fp8): per-layer K/V scales from 1.0" "$TMP/q.err"
check kv_fp8_first_sentence $? "$(tail -c 300 "$TMP/q.err")"
"$BIN" generate "$M" --prompt-ids 1 --max-tokens 4 --kv-cache-dtype fp4 >/dev/null 2>"$TMP/kvbad.err"
rc=$?; [ $rc -ne 0 ] && grep -q "unknown KV cache dtype 'fp4'" "$TMP/kvbad.err"
check kv_dtype_bad $? "rc $rc: $(head -c 300 "$TMP/kvbad.err")"

a=$("$BIN" generate "$M" --prompt "Once upon a time" --max-tokens 30 --temperature 1 --top-p 0.9 --seed 11 --json 2>/dev/null)
b=$("$BIN" generate "$M" --prompt "Once upon a time" --max-tokens 30 --temperature 1 --top-p 0.9 --seed 11 --json 2>/dev/null)
c=$("$BIN" generate "$M" --prompt "Once upon a time" --max-tokens 30 --temperature 1 --top-p 0.9 --seed 12 --json 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && [ "$a" != "$c" ]
check seed_reproducible $?

# the golden text's first sentence ends at "Lily." : stopping on "Lily" cuts it before the name;
# the same run reports logprobs (top 3, sorted, the greedy choice first)
"$BIN" generate "$M" --prompt-ids 1 --max-tokens 200 --temperature 0 --stop "Lily" --stop "zebra" --logprobs 3 \
  --json >"$TMP/st.json" 2>/dev/null
py_json "$TMP/st.json" "sys.exit(0 if d['text'] == 'Once upon a time, there was a little girl named ' and len(d['token_ids']) < 20 else 1)"
check stop_string $?
py_json "$TMP/st.json" "
lp = d['logprobs']; ok = len(lp) == len(d['token_ids']) > 5
for e, t in zip(lp, d['token_ids']):
    tops = [x['logprob'] for x in e['top']]
    ok &= e['token_id'] == t and len(tops) == 3 and tops == sorted(tops, reverse=True)
    ok &= e['top'][0]['token_id'] == t and abs(e['logprob'] - tops[0]) < 1e-6 and e['logprob'] <= 0
sys.exit(0 if ok else 1)"
check logprobs $?

"$BIN" generate "$M" --prompt "Lily and Tim" --chat --max-tokens 10 --temperature 0 --json >"$TMP/chat.json" 2>"$TMP/chat.err"
py_json "$TMP/chat.json" "sys.exit(0 if d['prompt_ids'][0] == 1 and d['prompt_ids'].count(1) == 1 and len(d['token_ids']) == 10 else 1)"
check chat $? "$(tail -c 300 "$TMP/chat.err")"

# a MoE model without tokenizer: --prompt-ids alone, ids out; --moe-backend picks the MoE kernel
"$BIN" generate tests/data/hf-goldens/mixtral --prompt-ids 1,17,42 --max-tokens 4 --temperature 0 \
  --moe-backend reference --json >"$TMP/moe.json" 2>"$TMP/moe.err" &&
  grep -q "kernel moe bf16 (2 layers): reference \[--moe-backend=reference\]" "$TMP/moe.err" &&
  py_json "$TMP/moe.json" "sys.exit(0 if len(d['token_ids']) == 4 and d['text'] == '' else 1)"
check moe_backend_without_tokenizer $? "$(tail -c 300 "$TMP/moe.err")"

rc=0
"$BIN" generate "$M" --max-tokens 3 >/dev/null 2>&1; [ $? -eq 2 ] || rc=1
"$BIN" generate "$M" --prompt x --prompt-ids 1 --top-p 0 >/dev/null 2>&1; [ $? -eq 2 ] || rc=1
"$BIN" generate "$M" --prompt-ids 1,9999 >/dev/null 2>"$TMP/bad.err"; [ $? -eq 1 ] && grep -q 9999 "$TMP/bad.err" || rc=1
"$BIN" generate "$TMP/nonexistent" --prompt-ids 1 >/dev/null 2>"$TMP/nx.err"; [ $? -eq 1 ] && grep -q nonexistent "$TMP/nx.err" || rc=1
check bad_args $rc
