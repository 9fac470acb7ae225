#!/usr/bin/env bash
# test_backends.sh — `qserve backends`: the registry listing, the per-model resolution read from
# config.json and safetensors headers (tiny checkpoints written here: BF16 Llama, FP8 per-channel
# and FP8-block Llama, NVFP4 W4A16 Llama, BF16 and FP8 Qwen3-MoE), --assume-compute-capability,
# the backend flags and their errors, --json, and the q/k/v and gate/up fusion the loader would
# make (QSERVE_NO_FUSE=1 turns it off).
set -u
BIN=${QSERVE_BIN:-build/qserve}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok $1"; }
notok() { echo "not ok $1${2:+: $2}"; }
skip() { echo "skip $1: $2"; }

# run NAME STATUS CMD... : runs the command, stdout in $TMP/out, stderr in $TMP/err; checks status
run() {
  local name=$1 status=$2; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
  if [ "$rc" -ne "$status" ]; then notok "$name" "exit $rc (want $status): $(head -c 400 "$TMP/err")"; return 1; fi
  return 0
}
# has FILE NEEDLE... : every needle is in the file (fixed strings)
has() {
  local f=$1; shift
  for n in "$@"; do grep -qF -- "$n" "$f" || { echo "missing: $n" >&2; return 1; }; done
}
check() { # check NAME FILE NEEDLE...
  local name=$1; shift
  if has "$@" 2>"$TMP/why"; then ok "$name"; else notok "$name" "$(cat "$TMP/why"); got: $(head -c 600 "$1")"; fi
}
# block FILE HEADER : prints the block of `qserve backends` text output that starts with HEADER
block() { awk -v h="$2" 'index($0, h) == 1 {p = 1} p && /^$/ {exit} p {print}' "$1"; }

if ! command -v python3 >/dev/null; then
  for t in registry model_bf16 model_fp8; do skip "$t" "python3 is needed to write the tiny checkpoints"; done
  exit 0
fi

# mkckpt DIR ARCH SCHEME [DIR ARCH SCHEME...]: tiny checkpoints with zero weights (headers are all `backends` reads).
mkckpt() {
  python3 - "$@" <<'PY'
import json, os, struct, sys
def make(out, arch, scheme):
    os.makedirs(out, exist_ok=True)
    H, I, L, NH, KV, HD, V = 128, 256, 2, 4, 2, 32, 256
    E, TOPK, MI = 4, 2, 128
    moe = arch == "qwen3_moe"
    cfg = {"architectures": ["Qwen3MoeForCausalLM" if moe else "LlamaForCausalLM"],
           "model_type": "qwen3_moe" if moe else "llama", "hidden_size": H, "intermediate_size": I,
           "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": KV, "head_dim": HD,
           "vocab_size": V, "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
    if moe:
        cfg.update({"num_experts": E, "num_experts_per_tok": TOPK, "moe_intermediate_size": MI,
                    "decoder_sparse_step": 1, "mlp_only_layers": [], "norm_topk_prob": True})
    ct_w = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel", "dynamic": False}
    ct_a = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "token", "dynamic": True}
    ct_wt = dict(ct_w, strategy="tensor")  # fp8_tensor: one weight scale, one static input scale
    ct_at = dict(ct_a, strategy="tensor", dynamic=False)
    fp4_w = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group", "group_size": 16,
             "dynamic": False}
    def ct(group):
        return {"quant_method": "compressed-tensors", "format": "float-quantized" if scheme.startswith("fp8") else
                "nvfp4-pack-quantized", "config_groups": {"group_0": dict(targets=["Linear"], **group)},
                "ignore": ["lm_head", "re:.*mlp.gate$"]}
    if scheme == "fp8":
        cfg["quantization_config"] = ct({"weights": ct_w, "input_activations": ct_a})
    elif scheme == "fp8_tensor":
        cfg["quantization_config"] = ct({"weights": ct_wt, "input_activations": ct_at})
    elif scheme == "fp8_block":
        cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                      "weight_block_size": [128, 128], "ignored_layers": ["lm_head"]}
    elif scheme == "nvfp4_w4a16":
        cfg["quantization_config"] = ct({"weights": fp4_w})
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)

    tensors = []  # (name, dtype, shape)
    def linear(prefix, n, k, quantized=True):
        if not quantized or scheme == "bf16":
            tensors.append((prefix + ".weight", "BF16", [n, k]))
        elif scheme == "fp8":
            tensors.append((prefix + ".weight", "F8_E4M3", [n, k]))
            tensors.append((prefix + ".weight_scale", "F32", [n, 1]))
        elif scheme == "fp8_tensor":
            tensors.append((prefix + ".weight", "F8_E4M3", [n, k]))
            tensors.append((prefix + ".weight_scale", "F32", [1]))
            tensors.append((prefix + ".input_scale", "F32", [1]))
        elif scheme == "fp8_block":
            tensors.append((prefix + ".weight", "F8_E4M3", [n, k]))
            tensors.append((prefix + ".weight_scale_inv", "F32", [(n + 127) // 128, (k + 127) // 128]))
        else:
            tensors.append((prefix + ".weight_packed", "U8", [n, k // 2]))
            tensors.append((prefix + ".weight_scale", "F8_E4M3", [n, k // 16]))
            tensors.append((prefix + ".weight_global_scale", "F32", [1]))
    tensors.append(("model.embed_tokens.weight", "BF16", [V, H]))
    tensors.append(("model.norm.weight", "BF16", [H]))
    for i in range(L):
        p = "model.layers.%d" % i
        tensors.append((p + ".input_layernorm.weight", "BF16", [H]))
        tensors.append((p + ".post_attention_layernorm.weight", "BF16", [H]))
        for n, name in ((NH * HD, "q_proj"), (KV * HD, "k_proj"), (KV * HD, "v_proj")):
            linear(p + ".self_attn." + name, n, H)
        linear(p + ".self_attn.o_proj", H, NH * HD)
        if moe:
            tensors.append((p + ".self_attn.q_norm.weight", "BF16", [HD]))
            tensors.append((p + ".self_attn.k_norm.weight", "BF16", [HD]))
            linear(p + ".mlp.gate", E, H, quantized=False)
            for e in range(E):
                linear(p + ".mlp.experts.%d.gate_proj" % e, MI, H)
                linear(p + ".mlp.experts.%d.up_proj" % e, MI, H)
                linear(p + ".mlp.experts.%d.down_proj" % e, H, MI)
        else:
            linear(p + ".mlp.gate_proj", I, H)
            linear(p + ".mlp.up_proj", I, H)
            linear(p + ".mlp.down_proj", H, I)
    linear("lm_head", V, H, quantized=False)
    size = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1}
    header, off = {}, 0
    for name, dt, shape in tensors:
        nbytes = size[dt]
        for d in shape:
            nbytes *= d
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + nbytes]}
        off += nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(off))


args = sys.argv[1:]
for i in range(0, len(args), 3):
    make(*args[i:i + 3])
PY
}

mkckpt "$TMP/llama-bf16" llama bf16 "$TMP/llama-fp8" llama fp8 "$TMP/llama-fp8b" llama fp8_block "$TMP/llama-fp8t" llama fp8_tensor \
  "$TMP/llama-w4a16" llama nvfp4_w4a16 "$TMP/moe-bf16" qwen3_moe bf16 "$TMP/moe-fp8" qwen3_moe fp8

# --- the registry without a model ---
if run registry 0 "$BIN" backends --device cpu; then
  check registry "$TMP/out" "kernels built into this binary:" "reference  cpu      linear  yes" \
    "reference  cpu      moe     yes" "priority lists" "cpu  linear fp8_w8a8        reference" \
    "device: CPU" "linear nvfp4_w4a16, backend auto" "-> reference"
  if grep -E '^  cuda linear fp8_w8a8 +cublaslt\*? -> marlin\*? -> emulation\*?$' "$TMP/out" >/dev/null &&
     grep -E '^  cuda linear nvfp4_w4a16 +marlin\*? -> emulation\*?$' "$TMP/out" >/dev/null &&
     grep -E '^  cuda linear bf16 +cublaslt\*?$' "$TMP/out" >/dev/null; then ok registry_cuda_lists
  else notok registry_cuda_lists "$(grep '^  cuda linear' "$TMP/out")"; fi
fi

if run registry_json 0 "$BIN" backends --json --device cpu; then
  if python3 - "$TMP/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
names = {(k["name"], k["platform"], k["kind"]) for k in r["registry"]["kernels"]}
assert ("reference", "cpu", "linear") in names and ("reference", "cpu", "moe") in names, names
lst = [c["name"] for c in r["registry"]["priority_lists"]["cuda"]["linear"]["fp8_w8a8"]]
assert lst == ["cublaslt", "marlin", "emulation"], lst
assert r["device"]["platform"] == "cpu"
assert len(r["layer_types"]) == 12 and all(t["chosen"] == "reference" for t in r["layer_types"])
PY
  then ok registry_json; else notok registry_json "$(head -c 300 "$TMP/out")"; fi
fi

# --- BF16 Llama on CPU and on an assumed H200 ---
if run model_bf16_cpu 0 "$BIN" backends "$TMP/llama-bf16" --device cpu; then
  block "$TMP/out" "linear bf16" >"$TMP/blk"
  check model_bf16_cpu "$TMP/blk" \
    "linear bf16: 9 layers, 4 of them fused (e.g. model.layers.0.self_attn.qkv_proj), backend auto" \
    "1. reference  chosen" "-> reference"
  check model_bf16_fusion_line "$TMP/out" \
    "fused projections: q/k/v -> qkv_proj in 2 of 2 layers, gate/up -> gate_up_proj in 2 of 2 dense layers"
fi
if QSERVE_NO_FUSE=1 "$BIN" backends "$TMP/llama-bf16" --device cpu >"$TMP/out" 2>"$TMP/err"; then
  block "$TMP/out" "linear bf16" >"$TMP/blk"
  check model_bf16_no_fuse "$TMP/blk" "linear bf16: 15 layers (e.g. model.layers.0.self_attn.q_proj), backend auto"
  check model_bf16_no_fuse_line "$TMP/out" "fused projections: off (QSERVE_NO_FUSE=1)"
else
  notok model_bf16_no_fuse "exit status $?"
fi
if "$BIN" backends "$TMP/llama-bf16" --assume-compute-capability 9.0 >"$TMP/out" 2>"$TMP/err"; then
  block "$TMP/out" "linear bf16" >"$TMP/blk"
  check model_bf16_h200 "$TMP/blk" "1. cublaslt   chosen" "-> cublaslt"
else
  # a binary without CUDA kernels: cublaslt is listed but not built, and the command says so
  check model_bf16_h200 "$TMP/out" "1. cublaslt   refused   not built into this binary." "-> no kernel"
fi

# --- FP8 per-channel (compressed-tensors): cublaslt on L40S/H200, the Marlin fallback on A100 ---
"$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 8.0 >"$TMP/out" 2>"$TMP/err"
block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
check model_fp8_a100_candidates "$TMP/blk" \
  "linear fp8_w8a8: 8 layers, 4 of them fused (e.g. model.layers.0.self_attn.qkv_proj), backend auto" \
  "1. cublaslt" "2. marlin" "3. emulation"
if "$BIN" backends --device cpu | grep -q "^  marlin     cuda     linear"; then
  # Marlin is linked in: it is the natural FP8 fallback on an A100 (cuBLASLt FP8 needs sm_89)
  check model_fp8_a100_marlin_fallback "$TMP/blk" "1. cublaslt   refused" "2. marlin     chosen" "-> marlin"
else
  check model_fp8_a100_marlin_fallback "$TMP/blk" "2. marlin     refused   not built into this binary."
fi
if grep -q "compressed-tensors" "$TMP/out"; then ok model_fp8_quant_description
else notok model_fp8_quant_description "$(head -1 "$TMP/out")"; fi
block "$TMP/out" "linear bf16" >"$TMP/blk"
check model_fp8_lm_head_bf16 "$TMP/blk" "linear bf16: 1 layer (e.g. lm_head)"

if run model_fp8_cpu_marlin 0 "$BIN" backends "$TMP/llama-fp8" --device cpu --linear-backend Marlin; then
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_cpu_marlin "$TMP/blk" "backend marlin from --linear-backend" \
    "warning: --linear-backend=marlin has no kernel for fp8_w8a8 linear layers on cpu; using automatic selection" \
    "-> reference" "plan (tokens per step): 1+ reference"
fi

# H200, auto: cublaslt, plus marlin for steps of <= 64 tokens (the per-step table, src/registry/step_plan.c);
# an explicit backend or QSERVE_SMALL_STEP_TOKENS=0 keeps one kernel, a bad value fails like serve
if "$BIN" backends --device cpu | grep -q "^  marlin     cuda     linear"; then
  "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 9.0 >"$TMP/out" 2>"$TMP/err"
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_h200_step_dispatch "$TMP/blk" "1. cublaslt   chosen" \
    "-> cublaslt; steps of at most 64 tokens on marlin (per-step dispatch, a second weight copy)" \
    "plan (tokens per step): 1-64 marlin, 65+ cublaslt"
  block "$TMP/out" "linear bf16" >"$TMP/blk"
  check model_fp8_h200_bf16_one_row "$TMP/blk" "plan (tokens per step): 1+ cublaslt"
  QSERVE_SMALL_STEP_TOKENS=8 "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 9.0 --json >"$TMP/out" 2>"$TMP/err"
  check model_fp8_h200_step_dispatch_json "$TMP/out" '"marlin_up_to_tokens":	8' \
    '"max_tokens":	8,' '"kernel":	"marlin"' '"max_tokens":	null,' '"kernel":	"cublaslt"'
  for v in "QSERVE_SMALL_STEP_TOKENS=0" "--linear-backend cublaslt"; do
    if [ "${v#--}" != "$v" ]; then "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 9.0 $v >"$TMP/out" 2>&1
    else env "$v" "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 9.0 >"$TMP/out" 2>&1; fi
    if grep -q "per-step dispatch" "$TMP/out"; then notok "model_fp8_h200_one_kernel ($v)" "dispatch reported"
    else ok "model_fp8_h200_one_kernel ($v)"; fi
  done
  # one weight scale and one static input scale: cublaslt's scalar-scale GEMM loses to marlin up to
  # 64 tokens per step on a Hopper with activation orders (32 with QSERVE_ACT_ORDER=0), 8 elsewhere
  # (docs/marlin.md), so those layers dispatch up to there; off Hopper the scheme's own limit is 32
  "$BIN" backends "$TMP/llama-fp8t" --assume-compute-capability 9.0 >"$TMP/out" 2>&1
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_tensor_h200_dispatch_64 "$TMP/blk" "1. cublaslt   chosen" \
    "-> cublaslt; steps of at most 64 tokens on marlin (per-step dispatch, a second weight copy)"
  QSERVE_ACT_ORDER=0 "$BIN" backends "$TMP/llama-fp8t" --assume-compute-capability 9.0 >"$TMP/out" 2>&1
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_tensor_h200_natural_dispatch_32 "$TMP/blk" "1. cublaslt   chosen" \
    "-> cublaslt; steps of at most 32 tokens on marlin (per-step dispatch, a second weight copy)"
  QSERVE_ACT_ORDER=maybe run model_fp8_act_order_bad 1 "$BIN" backends "$TMP/llama-fp8t" --assume-compute-capability 9.0 &&
    check model_fp8_act_order_bad "$TMP/out" "QSERVE_ACT_ORDER: expected 1 or 0 (or true/false), got 'maybe'"
  "$BIN" backends "$TMP/llama-fp8t" --assume-compute-capability 8.9 >"$TMP/out" 2>&1
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_tensor_sm89_dispatch_8 "$TMP/blk" "1. cublaslt   chosen" \
    "-> cublaslt; steps of at most 8 tokens on marlin (per-step dispatch, a second weight copy)" \
    "plan (tokens per step): 1-8 marlin, 9+ cublaslt"
  "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 8.9 >"$TMP/out" 2>&1
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_sm89_dispatch_32 "$TMP/blk" "1. cublaslt   chosen" \
    "-> cublaslt; steps of at most 32 tokens on marlin (per-step dispatch, a second weight copy)"
  QSERVE_SMALL_STEP_TOKENS=lots run model_fp8_step_tokens_bad 1 "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 9.0 &&
    check model_fp8_step_tokens_bad "$TMP/out" 'QSERVE_SMALL_STEP_TOKENS: expected a whole number of tokens in 0..4096, got "lots"'
else
  skip model_fp8_h200_step_dispatch "this binary has no CUDA kernels"
fi

# explicit backend that cannot run on the device: startup-style error, exit 1, every reason shown
run model_fp8_marlin_sm75 1 "$BIN" backends "$TMP/llama-fp8" --assume-compute-capability 7.5 --linear-backend marlin &&
  check model_fp8_marlin_sm75 "$TMP/out" "-> no kernel: no linear kernel can run fp8_w8a8 layers" \
    "with --linear-backend=marlin" "1. cublaslt   filtered  not the requested backend (--linear-backend=marlin)."

# per-scheme override beats --linear-backend
if run model_fp8_per_quant 0 "$BIN" backends "$TMP/llama-fp8" --device cpu --linear-backend cublaslt \
    --kernel-config '{"linear_backend_per_quant": {"fp8_w8a8": "reference"}}'; then
  block "$TMP/out" "linear fp8_w8a8" >"$TMP/blk"
  check model_fp8_per_quant "$TMP/blk" "backend reference from linear_backend_per_quant[fp8_w8a8]" "-> reference"
fi

# --- FP8 block (quant_method fp8) ---
if run model_fp8_block 0 "$BIN" backends "$TMP/llama-fp8b" --device cpu --json; then
  if python3 - "$TMP/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(t["kind"], t["scheme"]): t for t in r["layer_types"]}
# k_proj/v_proj have 64 rows, half a 128-row scale block: q/k/v stay separate; gate/up (256) fuse
b = rows[("linear", "fp8_block_w8a8")]
assert b["layers"] == 12 and b["fused_layers"] == 2, b
assert b["chosen"] == "reference"
f = r["fusion"]
assert f["qkv_fused"] == 0 and f["gate_up_fused"] == 2 and "not a multiple of the 128-row scale block" in f["kept_separate"], f
assert rows[("linear", "bf16")]["layers"] == 1
assert r["model"]["architecture"] == "LlamaForCausalLM"
PY
  then ok model_fp8_block; else notok model_fp8_block "$(head -c 400 "$TMP/out")"; fi
fi

# --- NVFP4 W4A16: the weight-only whitelist ---
run model_w4a16_cublaslt 1 "$BIN" backends "$TMP/llama-w4a16" --assume-compute-capability 10.0 --linear-backend cublaslt &&
  check model_w4a16_cublaslt "$TMP/out" "cublaslt does not support W4A16"
"$BIN" backends "$TMP/llama-w4a16" --assume-compute-capability 9.0 >"$TMP/out" 2>"$TMP/err"
block "$TMP/out" "linear nvfp4_w4a16" >"$TMP/blk"
check model_w4a16_candidates "$TMP/blk" "linear nvfp4_w4a16: 8 layers, 4 of them fused" "1. marlin" "2. emulation"
# the global scales are not read from headers: the report says the fusion rests on them
check model_w4a16_fusion_pending "$TMP/out" "4 of these only if their scalar scales agree"
if grep -q "cublaslt" "$TMP/blk"; then notok model_w4a16_no_cublaslt "$(cat "$TMP/blk")"; else ok model_w4a16_no_cublaslt; fi

# --- Qwen3-MoE: experts are a layer kind of their own ---
if run model_moe_cpu 0 "$BIN" backends "$TMP/moe-bf16" --device cpu; then
  block "$TMP/out" "moe bf16" >"$TMP/blk"
  check model_moe_cpu "$TMP/blk" "moe bf16: 2 layers (e.g. model.layers.0.mlp.experts), backend auto" "-> reference"
  block "$TMP/out" "linear bf16" >"$TMP/blk"
  check model_moe_router_linear "$TMP/blk" "linear bf16: 7 layers, 2 of them fused"
fi
if run model_moe_fp8_batch_invariant 0 "$BIN" backends "$TMP/moe-fp8" --device cpu --batch-invariant \
    --moe-backend marlin --json; then
  if python3 - "$TMP/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(t["kind"], t["scheme"]): t for t in r["layer_types"]}
m = rows[("moe", "fp8_w8a8")]
assert m["layers"] == 2 and m["chosen"] == "reference", m
assert m["requested"] == "marlin" and m["applied"] == "auto", m
assert any("--moe-backend=marlin has no kernel" in w for w in m["warnings"]), m
assert r["kernel_config"]["batch_invariant"] is True
PY
  then ok model_moe_fp8_batch_invariant; else notok model_moe_fp8_batch_invariant "$(head -c 400 "$TMP/out")"; fi
fi

# --- disabled kernels come from the environment too ---
if QSERVE_DISABLED_KERNELS=reference "$BIN" backends "$TMP/llama-bf16" --device cpu >"$TMP/out" 2>"$TMP/err"; then
  notok disabled_kernels "exit 0 although the only CPU kernel is disabled"
else
  check disabled_kernels "$TMP/out" "1. reference  refused   disabled by QSERVE_DISABLED_KERNELS." "disabled=reference"
fi

# --- usage errors ---
run unknown_vllm_backend 2 "$BIN" backends --linear-backend flashinfer_cutlass &&
  check unknown_vllm_backend "$TMP/err" "'flashinfer_cutlass' is a vLLM linear backend that qserve does not have" \
    "auto, cublaslt, marlin, emulation, reference"
run typo_backend 2 "$BIN" backends --moe-backend marln && check typo_backend "$TMP/err" "did you mean marlin?"
run bad_capability 2 "$BIN" backends --assume-compute-capability nine && check bad_capability "$TMP/err" "8.0, 8.9, 9.0"
run unknown_flag 2 "$BIN" backends --frobnicate && check unknown_flag "$TMP/err" "unknown option '--frobnicate'"
run assume_with_cpu 2 "$BIN" backends --assume-compute-capability 9.0 --device cpu &&
  check assume_with_cpu "$TMP/err" "cannot be combined with --device cpu"
run missing_model 1 "$BIN" backends "$TMP/nonexistent" && check missing_model "$TMP/err" "$TMP/nonexistent"
run help 0 "$BIN" backends --help && check help "$TMP/out" "--assume-compute-capability X.Y" "--json"
exit 0
