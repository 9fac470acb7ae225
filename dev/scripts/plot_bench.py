#!/usr/bin/env python3
"""Plots weight GB/s against M, one panel per Llama-3.1-8B shape, one line per kernel, from the
tables bench_kernels and bench_torch_kernels.py print (docs/bench/*.txt), with the device copy
bandwidth as a dashed line. Usage: plot_bench.py OUT.png COPY_GBPS TABLE.txt [TABLE.txt ...]
(a table file may be given as FILE:PREFIX to rename its kernels, e.g. old.txt:v1-)."""
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(spec):
    path, _, prefix = spec.partition(":")
    rows = []
    for line in open(path):
        f = line.split()
        if len(f) >= 8 and f[1].isdigit() and f[2].isdigit() and f[3].isdigit():
            rows.append((prefix + f[0], int(f[1]), int(f[2]), int(f[3]), float(f[6])))
    return rows


def main():
    out, copy = sys.argv[1], float(sys.argv[2])
    series = defaultdict(dict)
    for spec in sys.argv[3:]:
        for kernel, n, k, m, gbs in read(spec):
            series[(n, k)].setdefault(kernel, {})[m] = gbs
    shapes = list(series)
    fig, axes = plt.subplots(1, len(shapes), figsize=(5 * len(shapes), 4.2), sharey=True)
    for ax, shape in zip(axes, shapes):
        for kernel, pts in sorted(series[shape].items()):
            ms = sorted(pts)
            style = "-o" if "marlin" in kernel else "--."
            ax.plot(ms, [pts[m] for m in ms], style, label=kernel, markersize=3)
        ax.axhline(copy, color="k", linestyle=":", linewidth=1, label=f"copy {copy:.0f} GB/s")
        ax.axhline(0.85 * copy, color="grey", linestyle=":", linewidth=1, label="85% of copy")
        ax.set_xscale("log", base=2)
        ax.set_title(f"N={shape[0]} K={shape[1]}")
        ax.set_xlabel("M (tokens)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("weight bytes / time (GB/s)")
    axes[-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
