#!/usr/bin/env bash
# test_quantize.sh — `qserve init-model` and `qserve quantize` from the command line: tiny random
# checkpoints of each architecture are written, quantized into every scheme and format, and
# generated from (greedy, 4 tokens) with the reference kernels; the written configs say what the
# producers write; bad invocations fail with messages naming the culprit.
BIN=${QSERVE_BIN:-build/qserve}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok $1"; }
notok() { echo "not ok $1${2:+: $2}"; }
check() { if [ "$2" -eq 0 ]; then ok "$1"; else notok "$1" "$3"; fi; }

gen() { # gen DIR -> exit status of a short greedy generation
  "$BIN" generate "$1" --prompt "Hello world" --max-tokens 4 --temperature 0 >"$TMP/gen.log" 2>&1
}

for shape in tiny-llama tiny-mistral tiny-qwen2 tiny-qwen3 tiny-qwen3-moe tiny-mixtral; do
  "$BIN" init-model "$TMP/$shape" --shape "$shape" --seed 3 >"$TMP/init.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] && [ -f "$TMP/$shape/model.safetensors" ] && [ -f "$TMP/$shape/tokenizer.json" ] \
    && [ -f "$TMP/$shape/generation_config.json" ]
  check "init_model_$shape" $? "$(tail -2 "$TMP/init.log")"
  gen "$TMP/$shape"
  check "generate_$shape" $? "$(tail -3 "$TMP/gen.log")"
done

for pair in fp8-dynamic:compressed-tensors fp8-static:compressed-tensors fp8-block:compressed-tensors \
            nvfp4:compressed-tensors nvfp4-w4a16:compressed-tensors fp8-dynamic:modelopt fp8-static:modelopt \
            nvfp4:modelopt nvfp4-w4a16:modelopt fp8-block:fp8 fp8-dynamic:fp8 fp8-static:fp8; do
  scheme=${pair%%:*}; format=${pair##*:}
  for shape in tiny-llama tiny-mixtral; do
    out="$TMP/$shape-$scheme-$format"
    "$BIN" quantize "$TMP/$shape" "$out" --scheme "$scheme" --format "$format" >"$TMP/q.log" 2>&1
    check "quantize_${shape}_${scheme}_${format}" $? "$(tail -2 "$TMP/q.log")"
    gen "$out"
    check "generate_${shape}_${scheme}_${format}" $? "$(tail -3 "$TMP/gen.log")"
  done
done

# what the configs say
grep -q '"quant_method":[[:space:]]*"compressed-tensors"' "$TMP/tiny-llama-fp8-block-compressed-tensors/config.json" \
  && grep -q '"block_structure"' "$TMP/tiny-llama-fp8-block-compressed-tensors/config.json"
check config_ct_fp8_block $? "no block_structure in config.json"
grep -q '"weight_block_size"' "$TMP/tiny-llama-fp8-block-fp8/config.json"
check config_fp8_weight_block_size $? "no weight_block_size"
grep -q '"quant_algo":[[:space:]]*"NVFP4"' "$TMP/tiny-llama-nvfp4-modelopt/hf_quant_config.json" \
  && grep -q '"group_size":[[:space:]]*16' "$TMP/tiny-llama-nvfp4-modelopt/hf_quant_config.json"
check config_modelopt_hf_quant_config $? "hf_quant_config.json lacks quant_algo NVFP4 / group_size 16"
grep -q 're:.\*block_sparse_moe.gate\$' "$TMP/tiny-mixtral-nvfp4-compressed-tensors/config.json"
check config_ct_ignores_mixtral_router $? "router not in ignore list"
grep -q '"nvfp4-pack-quantized"' "$TMP/tiny-llama-nvfp4-w4a16-compressed-tensors/config.json"
check config_ct_nvfp4_format $? "format is not nvfp4-pack-quantized"

# errors
"$BIN" quantize "$TMP/tiny-llama" "$TMP/bad" --scheme int4 >"$TMP/e.log" 2>&1
[ $? -eq 2 ] && grep -q "int4" "$TMP/e.log" && grep -q "fp8-dynamic" "$TMP/e.log"
check error_unknown_scheme $? "$(cat "$TMP/e.log")"
"$BIN" quantize "$TMP/tiny-llama" "$TMP/bad" --scheme nvfp4 --format fp8 >"$TMP/e.log" 2>&1
[ $? -eq 1 ] && grep -q "fp8 holds FP8 only" "$TMP/e.log"
check error_nvfp4_in_fp8_format $? "$(cat "$TMP/e.log")"
"$BIN" quantize "$TMP/tiny-llama-fp8-dynamic-modelopt" "$TMP/bad" --scheme fp8-dynamic >"$TMP/e.log" 2>&1
[ $? -eq 1 ] && grep -q "already quantized" "$TMP/e.log"
check error_already_quantized $? "$(cat "$TMP/e.log")"
"$BIN" quantize "$TMP/missing" "$TMP/bad" --scheme fp8-dynamic >"$TMP/e.log" 2>&1
[ $? -eq 1 ] && grep -q "model folder .$TMP/missing. does not exist" "$TMP/e.log"
check error_missing_input $? "$(cat "$TMP/e.log")"
"$BIN" init-model "$TMP/x" --shape llama-9000 >"$TMP/e.log" 2>&1
[ $? -eq 2 ] && grep -q "llama-9000" "$TMP/e.log" && grep -q "tiny-qwen3-moe" "$TMP/e.log"
check error_unknown_shape $? "$(cat "$TMP/e.log")"
"$BIN" init-model "$TMP/mixtral" --shape mixtral-8x7b --config-only >"$TMP/e.log" 2>&1
[ $? -eq 0 ] && [ -f "$TMP/mixtral/config.json" ] && [ ! -f "$TMP/mixtral/model.safetensors" ] \
  && grep -q '"num_local_experts":[[:space:]]*8' "$TMP/mixtral/config.json"
check init_model_config_only $? "$(cat "$TMP/e.log")"
"$BIN" quantize "$TMP/tiny-qwen3-moe" "$TMP/sharded" --scheme fp8-block --shard-size 0.0002 >"$TMP/e.log" 2>&1 \
  && [ -f "$TMP/sharded/model.safetensors.index.json" ] && [ ! -f "$TMP/sharded/model.safetensors" ] && gen "$TMP/sharded"
check quantize_sharded_output $? "$(tail -2 "$TMP/e.log") $(tail -2 "$TMP/gen.log")"
