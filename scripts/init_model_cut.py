#!/usr/bin/env python3
"""A random-init checkpoint of a `qserve init-model` shape cut to fewer decoder layers (e.g. the
Qwen3-30B-A3B shape cut to 8 of its 48 layers: 11 GB of BF16 instead of 61, so it and its FP8 and
NVFP4 copies fit the GPU machine's tmpfs and quantize in seconds). init-model has no layer option
and the C sources stay untouched, so: `QSERVE init-model OUT --shape S --config-only` writes
config.json and the tokenizer, num_hidden_layers is set to --layers, and this script writes the
weights init-model would write for that config (the same names, shapes, order and kinds as
src/cli/init_model_weights.c: normal std 0.02, norms 1, biases 0; BF16; shards of at most
--shard-gb with model.safetensors.index.json, or one model.safetensors). The values come from
torch's generator (on the GPU when there is one), not init-model's counter-based one: same
distribution, other numbers. Without torch (this development machine) a pure-Python generator
serves tiny shapes only.
Usage: init_model_cut.py QSERVE_BIN OUT_DIR --shape qwen3-30b-a3b --layers 8 [--seed 1]
       [--shard-gb 2] [--list]   (--list: print the tensor list and total bytes, write nothing)"""
import argparse
import ctypes
import json
import os
import random
import struct
import subprocess
import sys
import tempfile


def tensor_list(c):
    """(name, shape, kind) of every tensor, as qs_init_tensor_list makes them from the shape."""
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = c.get("head_dim") or H // c["num_attention_heads"]
    qd, kvd = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    mt = c["model_type"]
    qkv_bias = mt == "qwen2"
    qk_norm = mt in ("qwen3", "qwen3_moe")
    experts = c.get("num_experts") or c.get("num_local_experts") or 0
    out = [("model.embed_tokens.weight", (V, H), "normal")]
    for i in range(L):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (H,), "ones"),
                (p + "self_attn.q_proj.weight", (qd, H), "normal"),
                (p + "self_attn.k_proj.weight", (kvd, H), "normal"),
                (p + "self_attn.v_proj.weight", (kvd, H), "normal")]
        if qkv_bias:
            out += [(p + f"self_attn.{x}_proj.bias", (d,), "zeros") for x, d in (("q", qd), ("k", kvd), ("v", kvd))]
        if qk_norm:
            out += [(p + "self_attn.q_norm.weight", (hd,), "ones"), (p + "self_attn.k_norm.weight", (hd,), "ones")]
        out += [(p + "self_attn.o_proj.weight", (H, qd), "normal"),
                (p + "post_attention_layernorm.weight", (H,), "ones")]
        if not experts:
            I = c["intermediate_size"]
            out += [(p + "mlp.gate_proj.weight", (I, H), "normal"), (p + "mlp.up_proj.weight", (I, H), "normal"),
                    (p + "mlp.down_proj.weight", (H, I), "normal")]
        elif mt == "mixtral":
            I = c["intermediate_size"]
            out.append((p + "block_sparse_moe.gate.weight", (experts, H), "normal"))
            for e in range(experts):
                q = p + f"block_sparse_moe.experts.{e}."
                out += [(q + "w1.weight", (I, H), "normal"), (q + "w2.weight", (H, I), "normal"),
                        (q + "w3.weight", (I, H), "normal")]
        else:
            I = c["moe_intermediate_size"]
            out.append((p + "mlp.gate.weight", (experts, H), "normal"))
            for e in range(experts):
                q = p + f"mlp.experts.{e}."
                out += [(q + "gate_proj.weight", (I, H), "normal"), (q + "up_proj.weight", (I, H), "normal"),
                        (q + "down_proj.weight", (H, I), "normal")]
    out.append(("model.norm.weight", (H,), "ones"))
    if not c.get("tie_word_embeddings"):
        out.append(("lm_head.weight", (V, H), "normal"))
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class TorchFill:
    """BF16 bytes of each tensor from torch (GPU if present), handed out as a memoryview."""

    def __init__(self, seed):
        import torch
        self.torch = torch
        self.dev = "cuda" if torch.cuda.is_available() else "cpu"
        self.gen = torch.Generator(device=self.dev)
        self.gen.manual_seed(seed)

    def __call__(self, shape, kind):
        t = self.torch
        if kind == "normal":
            x = t.randn(shape, generator=self.gen, device=self.dev, dtype=t.float32).mul_(0.02).to(t.bfloat16)
        else:
            x = (t.ones if kind == "ones" else t.zeros)(shape, device=self.dev, dtype=t.bfloat16)
        x = x.cpu().contiguous()
        self.keep = x  # the memory the view below points into, alive until the next call
        return memoryview((ctypes.c_char * (x.numel() * 2)).from_address(x.data_ptr())).cast("B")


class PyFill:
    """Pure-Python fallback (no torch): fine for tiny shapes, far too slow for real ones."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)

    def __call__(self, shape, kind):
        n = numel(shape)
        if kind != "normal":
            v = 1.0 if kind == "ones" else 0.0
            vals = [v] * n
        else:
            vals = [self.rnd.gauss(0.0, 0.02) for _ in range(n)]
        out = bytearray(2 * n)
        for i, v in enumerate(vals):  # float32 -> BF16, round to nearest even
            u = struct.unpack("<I", struct.pack("<f", v))[0]
            u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
            out[2 * i:2 * i + 2] = struct.pack("<H", u & 0xFFFF)
        return memoryview(out)


def write_shards(out_dir, tensors, fill, shard_bytes):
    shards, cur, size = [], [], 0
    for t in tensors:
        b = numel(t[1]) * 2
        if cur and shard_bytes and size + b > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(t)
        size += b
    shards.append(cur)
    for stale in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.exists(os.path.join(out_dir, stale)):
            os.unlink(os.path.join(out_dir, stale))
    weight_map = {}
    for si, shard in enumerate(shards):
        fname = "model.safetensors" if len(shards) == 1 else f"model-{si + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for name, shape, _ in shard:
            b = numel(shape) * 2
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + b]}
            off += b
            weight_map[name] = fname
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(out_dir, fname), "wb") as f:
            f.write(struct.pack("<Q", len(h)))
            f.write(h)
            for name, shape, kind in shard:
                f.write(fill(shape, kind))
    if len(shards) > 1:
        total = sum(numel(s) * 2 for _, s, _ in tensors)
        with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    return len(shards)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("qserve", help="the qserve binary (for init-model --config-only)")
    ap.add_argument("out_dir")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--layers", type=int, required=True, help="decoder layers to keep (from the first)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shard-gb", type=float, default=2.0)
    ap.add_argument("--list", action="store_true", help="print the tensor list and total bytes only")
    a = ap.parse_args()
    target = tempfile.mkdtemp() if a.list else a.out_dir
    r = subprocess.run([a.qserve, "init-model", target, "--shape", a.shape, "--config-only"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"init-model --config-only failed: {r.stdout}{r.stderr}")
    cfg_path = os.path.join(target, "config.json")
    c = json.load(open(cfg_path))
    if not 1 <= a.layers <= c["num_hidden_layers"]:
        sys.exit(f"--layers {a.layers}: the shape has {c['num_hidden_layers']} layers")
    c["num_hidden_layers"] = a.layers
    if "max_window_layers" in c:
        c["max_window_layers"] = a.layers
    tensors = tensor_list(c)
    total = sum(numel(s) * 2 for _, s, _ in tensors)
    if a.list:
        for name, shape, kind in tensors:
            print(name, list(shape), kind)
        print(f"total {total} bytes ({total / 1e9:.3f} GB), {len(tensors)} tensors")
        return
    with open(cfg_path, "w") as f:
        json.dump(c, f, indent=1)
    try:
        fill = TorchFill(a.seed)
    except ImportError:
        if total > 1 << 26:
            sys.exit(f"no torch: the pure-Python generator is too slow for {total / 1e9:.1f} GB")
        fill = PyFill(a.seed)
    n = write_shards(a.out_dir, tensors, fill, int(a.shard_gb * 1e9))
    print(f"wrote {a.shape} cut to {a.layers} layers ({total / 1e9:.3f} GB of bf16 weights, {n} shard(s), "
          f"{type(fill).__name__}) to {a.out_dir}")


if __name__ == "__main__":
    main()
