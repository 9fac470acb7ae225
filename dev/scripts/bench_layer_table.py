#!/usr/bin/env python3
"""Markdown tables from the kernel benchmark output (bench_kernels and bench_torch_kernels.py,
docs/bench/*.txt): per decoder layer (the four Llama-3.1-8B linear shapes summed, µs) for every
kernel and M, and per shape at one M (µs and % of the copy bandwidth of the same run); with
--targets, issue #8's three targets checked on the same run instead: each marlin row per decoder
layer against torch's `_scaled_mm` and against the faster BF16 GEMM (torch or cuBLASLt) at every
M up to 64, and the shapes where it reads at 85% of the copy bandwidth or more at M up to 16.
Usage: bench_layer_table.py TABLE.txt [TABLE.txt ...] [--m 1] [--targets]"""
import argparse
import os
from collections import defaultdict

SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]


def read(paths):
    rows = {}  # (kernel, n, k, m) -> (us, pct)
    for path in paths:
        for line in open(path):
            f = line.split()
            if len(f) >= 8 and f[1].isdigit() and f[2].isdigit() and f[3].isdigit():
                rows[(f[0], int(f[1]), int(f[2]), int(f[3]))] = (float(f[4]), f[7])
    return rows


def per_layer(rows):
    """{kernel: {M: µs}}: the four shapes summed, where the run has all four."""
    layer = defaultdict(dict)
    for kern in sorted({k for k, *_ in rows}):
        for m in sorted({m for *_, m in rows}):
            t = [rows.get((kern, n, k, m)) for n, k in SHAPES]
            if all(t):
                layer[kern][m] = sum(x[0] for x in t)
    return layer


def targets(rows):
    """Issue #8's targets on one run (markdown): yes / no per marlin row and M, with the figures."""
    layer = per_layer(rows)
    marlin = [k for k in sorted(layer) if k.startswith("marlin-")]
    ms = sorted(m for m in {m for v in layer.values() for m in v} if m <= 64)
    scaled = layer.get("torch-scaled_mm-fp8", {})
    bf16 = {m: min(layer[k][m] for k in ("torch-bf16", "cublaslt-bf16") if m in layer.get(k, {}))
            for m in ms if any(m in layer.get(k, {}) for k in ("torch-bf16", "cublaslt-bf16"))}

    def verdicts(title, base):
        print(f"{title} (per decoder layer, µs: marlin / baseline):\n")
        print("| kernel | " + " | ".join(f"M = {m}" for m in ms) + " |")
        print("|---|" + "---|" * len(ms))
        for kern in marlin:
            cells = [f"{'yes' if layer[kern][m] < base[m] else 'no'} {layer[kern][m]:.1f} / {base[m]:.1f}"
                     if m in layer[kern] and m in base else "—" for m in ms]
            print(f"| {kern} | " + " | ".join(cells) + " |")
        print()

    verdicts("Faster than torch `_scaled_mm` FP8", scaled)
    verdicts("Ahead of BF16, the faster of torch and cuBLASLt", bf16)
    print("At least 85% of the copy bandwidth at M ≤ 16 (the M where it holds, per shape):\n")
    print("| kernel | " + " | ".join(f"{n}×{k}" for n, k in SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    small = [m for m in ms if m <= 16]
    for kern in marlin:
        cells = []
        for n, k in SHAPES:
            held = [m for m in small if (kern, n, k, m) in rows and float(rows[(kern, n, k, m)][1].rstrip("%")) >= 85]
            cells.append(", ".join(str(m) for m in held) if held else "none")
        print(f"| {kern} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nUsage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tables", nargs="+", metavar="TABLE.txt", help="bench_kernels / bench_torch_kernels.py output")
    ap.add_argument("--m", type=int, default=1, help="the M of the per-shape table (default 1)")
    ap.add_argument("--targets", action="store_true", help="check issue #8's three targets instead")
    args = ap.parse_args()
    for path in args.tables:
        if not os.path.isfile(path):
            ap.error(f"no such file: {path}")
    if args.targets:
        targets(read(args.tables))
        return
    one_m = args.m
    rows = read(args.tables)
    kernels = sorted({k for k, *_ in rows})
    ms = sorted({m for *_, m in rows})
    layer = per_layer(rows)
    print("Per decoder layer (four shapes summed, µs):\n")
    print("| kernel | " + " | ".join(f"M = {m}" for m in ms) + " |")
    print("|---|" + "---|" * len(ms))
    for kern in kernels:
        print(f"| {kern} | " + " | ".join(f"{layer[kern][m]:.1f}" if m in layer[kern] else "—" for m in ms) + " |")
    print(f"\nPer shape at M = {one_m} (µs, % of copy):\n")
    print("| kernel | " + " | ".join(f"{n}×{k}" for n, k in SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for kern in kernels:
        cells = []
        for n, k in SHAPES:
            r = rows.get((kern, n, k, one_m))
            cells.append(f"{r[0]:.1f} ({r[1]})" if r else "—")
        print(f"| {kern} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
