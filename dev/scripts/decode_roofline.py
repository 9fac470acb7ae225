#!/usr/bin/env python3
"""Bytes one decode step reads and the tok/s they allow at a given bandwidth (the roofline),
beside measured tok/s: for dense (Llama, Qwen3) and MoE (Qwen3-MoE, Mixtral) checkpoints, from
config.json and the quantize scheme. Per step: every quantized linear weight once (q/k/v/o, and
for MoE layers only the experts the batch's tokens are routed to) with its scales, the BF16 router,
norms, the BF16 lm_head, one embedding row per token and each sequence's KV cache (BF16) at the
given context. The experts a batch of B tokens touches are taken as their expectation under
uniform independent routing, E * (1 - (1 - k/E)^B) (a random-init router spreads tokens about
evenly; a trained one need not). The bandwidth is the same run's device-to-device copy figure
(read + write bytes over time, as TARGETS.md's rooflines use).
Usage: decode_roofline.py MODEL_DIR --scheme fp8-block --bw-gbps 4150 [--context 67]
       [--batches 1,16,64,256] [--measured LABEL=BENCH_DECODE_OUTPUT ...]
Measured files: bench_decode's lines `batch N: X ms/step  Y tok/s ...` (others ignored)."""
import argparse
import json
import os
import re

# bytes per weight of each scheme's quantized linears (scales included)
SCHEME_BYTES = {
    "bf16": lambda k: 2.0,
    "fp8-dynamic": lambda k: 1.0 + 2.0 / k,      # per-channel scale (model dtype) per row of k
    "fp8-static": lambda k: 1.0,                 # per-tensor scale
    "fp8-block": lambda k: 1.0 + 4.0 / (128 * 128),
    "nvfp4": lambda k: 0.5 + 1.0 / 16,           # E2M1 + one E4M3 scale per 16
    "nvfp4-w4a16": lambda k: 0.5 + 1.0 / 16,
}


def step_bytes(c, scheme, batch, context):
    """{part: bytes} one decode step of `batch` sequences at `context` tokens each reads."""
    wb = SCHEME_BYTES[scheme]
    H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = c.get("head_dim") or H // c["num_attention_heads"]
    qd, kvd = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    E = c.get("num_experts") or c.get("num_local_experts") or 0
    k = c.get("num_experts_per_tok") or 0
    parts = {}
    parts["attention q/k/v/o"] = L * ((qd + 2 * kvd) * H * wb(H) + H * qd * wb(qd))
    if E:
        inter = c.get("moe_intermediate_size") or c["intermediate_size"]
        touched = E * (1 - (1 - k / E) ** batch)
        per_expert = 2 * inter * H * wb(H) + H * inter * wb(inter)
        parts[f"experts ({touched:.1f} of {E} a layer)"] = L * touched * per_expert
        parts["router (BF16)"] = L * E * H * 2
    else:
        inter = c["intermediate_size"]
        parts["mlp gate/up/down"] = L * (2 * inter * H * wb(H) + H * inter * wb(inter))
    parts["norms"] = (L * (2 * H + 2 * hd) + H) * 2
    parts["lm_head (BF16)"] = V * H * 2  # (tied: the embedding table, read as the head)
    parts["embedding rows"] = batch * H * 2
    parts["KV cache (BF16)"] = batch * L * 2 * kvd * 2 * context
    return parts


def measured(path):
    """{batch: tok/s} from bench_decode's output."""
    out = {}
    for line in open(path, errors="replace"):
        m = re.match(r"batch\s+(\d+):\s+([0-9.]+) ms/step\s+([0-9.]+) tok/s", line)
        if m:
            out[int(m.group(1))] = float(m.group(3))
    return out


def main():
    ap = argparse.ArgumentParser(description="decode bytes per step, roofline tok/s, measured tok/s")
    ap.add_argument("model_dir")
    ap.add_argument("--scheme", required=True, choices=sorted(SCHEME_BYTES))
    ap.add_argument("--bw-gbps", type=float, required=True, help="copy bandwidth of the same run, GB/s")
    ap.add_argument("--context", type=int, default=67, help="mean context of the timed steps "
                    "(bench_decode: prompt + 3 warm-up + steps/2; default 32 + 3 + 32)")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--measured", action="append", default=[], metavar="LABEL=FILE")
    a = ap.parse_args()
    c = json.load(open(os.path.join(a.model_dir, "config.json")))
    batches = [int(b) for b in a.batches.split(",")]
    runs = []
    for m in a.measured:
        label, _, path = m.partition("=")
        runs.append((label, measured(path) if os.path.exists(path) else {}))
    bw = a.bw_gbps * 1e9
    b1 = step_bytes(c, a.scheme, 1, a.context)
    print(f"{os.path.basename(a.model_dir.rstrip('/'))} ({a.scheme}, {c['num_hidden_layers']} layers), "
          f"copy {a.bw_gbps:.0f} GB/s, context {a.context}: batch 1 reads {sum(b1.values()) / 1e9:.3f} GB a step:")
    print("  " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in b1.items() if v >= 1e5))
    head = f"{'batch':>5} {'GB/step':>8} {'roofline tok/s':>14}" + "".join(f" {lab + ' tok/s (% roof)':>28}" for lab, _ in runs)
    print(head)
    for b in batches:
        total = sum(step_bytes(c, a.scheme, b, a.context).values())
        roof = b * bw / total
        cells = ""
        for _, r in runs:
            v = r.get(b)
            cells += f" {f'{v:.1f} ({v / roof * 100:.1f}%)' if v else '—':>28}"
        print(f"{b:5d} {total / 1e9:8.3f} {roof:14.1f}{cells}")


if __name__ == "__main__":
    main()
