#!/usr/bin/env python3
"""make-hf-goldens.py — reference outputs from Hugging Face transformers for tiny random models of
the six architectures qserve runs (Llama, Mistral, Qwen2, Qwen3, Qwen3-MoE, Mixtral).

For each architecture it builds a random model (vocab 512, hidden 64, 2 layers, GQA; norms, biases
and routers randomised too so every path matters), saves it as F32 and as BF16 (config.json,
model.safetensors with per-expert 2-D tensors), reloads each from disk and records, for several
prompts given as token ids:
  - the last position's logits (float32 compute; for BF16 also bfloat16 compute),
  - 24 greedy tokens with the top-1 and top-2 logits of every step (the margin).
BF16 models' greedy references run in float32 on the BF16 weights, as qserve's CPU engine does.

Quantized checkpoints (made here with `qserve quantize`, compressed-tensors format) get their
reference from transformers on the dequantized weights:
    python3 scripts/make-hf-goldens.py --dequantized OUT_DIR QUANT_DIR...
writes OUT_DIR/<basename of QUANT_DIR>/golden.json, computed on an F32 copy whose FP8 weights are
code x per-channel scale and whose NVFP4 weights are E2M1 code x E4M3 block scale / global scale
(compressed-tensors stores the reciprocal global scale).

Run where torch + transformers are installed (the GPU machine; CPU torch is enough):
    python3 scripts/make-hf-goldens.py OUT_DIR
OUT_DIR/ARCH/ and OUT_DIR/ARCH-bf16/ then hold config.json, model.safetensors, golden.json;
tests/data/hf-goldens/ is where the repository keeps them (tests/unit/test_hf_goldens.c reads it).
"""
import json
import os
import sys
import traceback

import torch
import transformers
from safetensors.torch import load_file, save_file

PROMPTS = [
    [1, 17, 42, 99, 300, 5, 77, 250],
    [3],
    [(i * 37 + 11) % 509 + 1 for i in range(40)],
]
N_GREEDY = 24


def base(**kw):
    d = dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
             rms_norm_eps=1e-5, initializer_range=0.1, bos_token_id=1, eos_token_id=2)
    d.update(kw)
    return d


def rope(theta, scaling=None):
    """rope_parameters for transformers v5 (rope_theta plus any scaling in one dict)."""
    p = {"rope_type": "default", "rope_theta": theta}
    if scaling:
        p.update(scaling)
    return p


ARCHS = {
    "llama": (transformers.LlamaConfig, base(
        tie_word_embeddings=False,
        rope_parameters=rope(500000.0, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 64}))),
    "mistral": (transformers.MistralConfig, base(tie_word_embeddings=False, sliding_window=None,
                                                 head_dim=16, rope_parameters=rope(10000.0))),
    # a sliding window shorter than the long prompt, so the window matters
    "mistral_sw": (transformers.MistralConfig, base(tie_word_embeddings=False, sliding_window=12,
                                                    head_dim=16, rope_parameters=rope(10000.0))),
    "qwen2": (transformers.Qwen2Config, base(tie_word_embeddings=True, rope_parameters=rope(1000000.0),
                                             use_sliding_window=False)),
    "qwen3": (transformers.Qwen3Config, base(tie_word_embeddings=True, head_dim=32,
                                             rope_parameters=rope(1000000.0), use_sliding_window=False)),
    "qwen3_moe": (transformers.Qwen3MoeConfig, base(tie_word_embeddings=False, head_dim=16,
                                                    num_experts=4, num_experts_per_tok=2,
                                                    moe_intermediate_size=64, norm_topk_prob=False,
                                                    decoder_sparse_step=1, mlp_only_layers=[0],
                                                    rope_parameters=rope(1000000.0),
                                                    use_sliding_window=False)),
    "mixtral": (transformers.MixtralConfig, base(tie_word_embeddings=False, num_local_experts=4,
                                                 num_experts_per_tok=2, sliding_window=None,
                                                 rope_parameters=rope(1000000.0))),
}


def randomise(model, gen):
    """Norm weights around 1, biases and routers non-zero: every parameter must matter."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("mlp.gate.weight") or "block_sparse_moe.gate" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=gen))


def per_expert_state(model, cfg):
    """The state dict with fused in-memory expert tensors split back into the per-expert 2-D
    tensors checkpoints hold (gate rows first in gate_up_proj, as transformers' experts read it)."""
    out = {}
    mixtral = cfg.model_type == "mixtral"
    for k, v in model.state_dict().items():
        v = v.detach().contiguous()
        if ".experts.gate_up_proj" in k and v.dim() == 3:
            prefix = k[: k.index(".gate_up_proj")]
            inter = v.shape[1] // 2
            for e in range(v.shape[0]):
                g, u = v[e, :inter].contiguous(), v[e, inter:].contiguous()
                out[f"{prefix}.{e}.{'w1' if mixtral else 'gate_proj'}.weight"] = g
                out[f"{prefix}.{e}.{'w3' if mixtral else 'up_proj'}.weight"] = u
        elif ".experts.down_proj" in k and v.dim() == 3:
            prefix = k[: k.index(".down_proj")]
            for e in range(v.shape[0]):
                out[f"{prefix}.{e}.{'w2' if mixtral else 'down_proj'}.weight"] = v[e].contiguous()
        else:
            out[k] = v
    if mixtral:
        out = {k.replace(".mlp.", ".block_sparse_moe."): v for k, v in out.items()}
    if getattr(cfg, "tie_word_embeddings", False):
        out.pop("lm_head.weight", None)
    return out


@torch.no_grad()
def reference(model, prompt):
    ids = torch.tensor([prompt])
    last = model(ids).logits[0, -1].float()
    seq = list(prompt)
    greedy, top1, top2 = [], [], []
    for _ in range(N_GREEDY):
        logits = model(torch.tensor([seq])).logits[0, -1].float()
        v, i = torch.topk(logits, 2)
        greedy.append(int(i[0]))
        top1.append(float(v[0]))
        top2.append(float(v[1]))
        seq.append(int(i[0]))
    return [float(x) for x in last], greedy, top1, top2


def build(arch, out_root):
    cls, kw = ARCHS[arch]
    cfg = cls(**kw)
    torch.manual_seed(1234)
    gen = torch.Generator().manual_seed(sum(arch.encode()) * 7919)
    model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    randomise(model, gen)
    for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        d = os.path.join(out_root, arch if dtype == torch.float32 else arch + "-bf16")
        os.makedirs(d, exist_ok=True)
        m = model.to(dtype)
        m.config.dtype = dtype_name
        m.config.architectures = [type(model).__name__]
        m.config.save_pretrained(d)
        save_file(per_expert_state(m, m.config), os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        # reload from disk: the goldens are of exactly what the file holds
        ref = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
        keys = sorted(load_file(os.path.join(d, "model.safetensors")).keys())
        with torch.no_grad():
            a = m.float()(torch.tensor([PROMPTS[0]])).logits
            b = ref(torch.tensor([PROMPTS[0]])).logits
        # (BF16: m's rotary inv_freq buffer was rounded to bf16 by .to(); the reloaded one is not)
        reload_err = float((a - b).abs().max() / a.abs().max())
        model = model.float()
        g = {"arch": arch, "architectures": cfg.architectures, "dtype": dtype_name,
             "transformers": transformers.__version__, "torch": torch.__version__,
             "reload_rel_err": reload_err, "n_tensors": len(keys), "prompts": []}
        bf = None
        if dtype == torch.bfloat16:
            bf = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16).eval()
        for p in PROMPTS:
            last, greedy, t1, t2 = reference(ref, p)
            entry = {"ids": p, "last_logits": last, "greedy": greedy, "top1": t1, "top2": t2}
            if bf is not None:
                entry["last_logits_bf16_compute"] = reference(bf, p)[0]
            g["prompts"].append(entry)
        with open(os.path.join(d, "golden.json"), "w") as f:
            json.dump(g, f)
        size = os.path.getsize(os.path.join(d, "model.safetensors"))
        print(f"{arch} {dtype_name}: {len(keys)} tensors, {size} bytes, reload rel err {reload_err:.2e}, "
              f"greedy {g['prompts'][0]['greedy'][:8]}", flush=True)
        if reload_err > (1e-5 if dtype == torch.float32 else 1e-3):
            print(f"WARNING {arch} {dtype_name}: reloaded model differs ({reload_err:.2e}); keys {keys[:12]}",
                  flush=True)


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def dequantize_state(st):
    """compressed-tensors FP8 (weight + weight_scale) and NVFP4 (weight_packed + weight_scale +
    weight_global_scale) tensors back to float32 weights; everything else to float32 as is."""
    out = {}
    for k, v in st.items():
        if k.endswith((".weight_scale", ".weight_global_scale", ".input_scale", ".input_global_scale")):
            continue
        if k.endswith(".weight_packed"):
            base = k[: -len(".weight_packed")]
            packed = v.to(torch.int64)
            lo, hi = packed & 0xF, packed >> 4
            codes = torch.stack([lo, hi], dim=-1).reshape(v.shape[0], v.shape[1] * 2)
            table = torch.tensor(E2M1 + [-x for x in E2M1])
            w = table[codes]
            scale = st[base + ".weight_scale"].float().repeat_interleave(16, dim=1)
            gscale = st[base + ".weight_global_scale"].float().reshape(())
            out[base + ".weight"] = (w * scale / gscale).contiguous()
        elif k.endswith(".weight") and k[: -len(".weight")] + ".weight_scale" in st:
            scale = st[k[: -len(".weight")] + ".weight_scale"].float()
            w = v.float()
            out[k] = (w * (scale if scale.dim() == 2 else scale.reshape(-1, 1))).contiguous()
        else:
            out[k] = v.float().contiguous()
    return out


def dequantized_reference(out_root, qdir, tmp_root="/tmp/hfg-dequant"):
    name = os.path.basename(os.path.normpath(qdir))
    d = os.path.join(tmp_root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(qdir, "config.json")) as f:
        cfg = json.load(f)
    qc = cfg.pop("quantization_config", None)
    cfg["dtype"] = "float32"
    # JSON writers that print 0.0 as 0 trip transformers' strict config types: floats stay floats
    defaults = transformers.AutoConfig.for_model(cfg["model_type"])
    for k, v in list(cfg.items()):
        if isinstance(v, int) and not isinstance(v, bool) and isinstance(getattr(defaults, k, None), float):
            cfg[k] = float(v)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    save_file(dequantize_state(load_file(os.path.join(qdir, "model.safetensors"))),
              os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    ref = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    g = {"arch": cfg.get("model_type"), "architectures": cfg.get("architectures"), "dtype": "dequantized",
         "quantization": (qc or {}).get("format") or (qc or {}).get("quant_method"),
         "transformers": transformers.__version__, "torch": torch.__version__, "prompts": []}
    for p in PROMPTS:
        last, greedy, t1, t2 = reference(ref, p)
        g["prompts"].append({"ids": p, "last_logits": last, "greedy": greedy, "top1": t1, "top2": t2})
    os.makedirs(os.path.join(out_root, name), exist_ok=True)
    with open(os.path.join(out_root, name, "golden.json"), "w") as f:
        json.dump(g, f)
    print(f"{name} (dequantized {g['quantization']}): greedy {g['prompts'][0]['greedy'][:8]}", flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--dequantized":
        failed = 0
        for qdir in sys.argv[3:]:
            try:
                dequantized_reference(sys.argv[2], qdir)
            except Exception:
                failed += 1
                print(f"FAILED {qdir}", flush=True)
                traceback.print_exc()
        sys.exit(1 if failed else 0)
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/data/hf-goldens"
    archs = sys.argv[2:] or list(ARCHS)
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    print(f"torch {torch.__version__}, transformers {transformers.__version__}", flush=True)
    failed = 0
    for arch in archs:
        try:
            build(arch, out_root)
        except Exception:
            failed += 1
            print(f"FAILED {arch}", flush=True)
            traceback.print_exc()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
