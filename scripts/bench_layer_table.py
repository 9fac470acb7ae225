#!/usr/bin/env python3
"""Markdown tables from the kernel benchmark output (bench_kernels and bench_torch_kernels.py,
docs/bench/*.txt): per decoder layer (the four Llama-3.1-8B linear shapes summed, µs) for every
kernel and M, and per shape at one M (µs and % of the copy bandwidth of the same run).
Usage: bench_layer_table.py TABLE.txt [TABLE.txt ...] [--m 1]"""
import sys
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


def main():
    args = sys.argv[1:]
    one_m = 1
    if "--m" in args:
        i = args.index("--m")
        one_m = int(args[i + 1])
        del args[i:i + 2]
    rows = read(args)
    kernels = sorted({k for k, *_ in rows})
    ms = sorted({m for *_, m in rows})
    layer = defaultdict(dict)
    for kern in kernels:
        for m in ms:
            t = [rows.get((kern, n, k, m)) for n, k in SHAPES]
            if all(t):
                layer[kern][m] = sum(x[0] for x in t)
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
