#!/usr/bin/env python3
"""Side-by-side table of several bench_kernels runs from one file: each run follows a line
"=== NAME" (a trailing " round N" is dropped, so repeated rounds of a build or variant merge and
the fastest round counts). Prints, per kernel, time_us per shape and M with a column per NAME in
order of first appearance, then per decoder layer (the sum over the Llama-3.1-8B shapes, where all
four are present). Session 20 compared six hollow builds of the stream kernel this way.
Usage: bench_builds_table.py FILE [--kernels a,b]"""
import argparse
import re
import sys
from collections import defaultdict

LLAMA = ["6144x4096", "4096x4096", "28672x4096", "4096x14336"]
HEADER = re.compile(r"^=== (.*?)(?: round \d+)?\s*$")


def read(path, wanted):
    times, names, name = defaultdict(list), [], None
    for line in open(path):
        m = HEADER.match(line)
        if m:
            name = m.group(1)
            if name not in names:
                names.append(name)
            continue
        f = line.split()
        if name is None or len(f) < 5 or not f[0].startswith(("marlin", "cublaslt", "emulation", "torch")):
            continue
        if wanted and f[0] not in wanted:
            continue
        try:
            key = (f[0], f"{int(f[1])}x{int(f[2])}", int(f[3]), name)
            times[key].append(float(f[4]))
        except ValueError:
            continue
    return times, names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("--kernels", default="", help="only these kernels (comma-separated)")
    args = ap.parse_args()
    times, names = read(args.file, set(k for k in args.kernels.split(",") if k))
    if not times:
        sys.exit(f"{args.file}: no bench_kernels rows after a '=== NAME' line")
    width = max(9, *(len(n) for n in names))
    for kernel in sorted({k[0] for k in times}):
        shapes = sorted({k[1] for k in times if k[0] == kernel}, key=lambda s: (s not in LLAMA, LLAMA.index(s) if s in LLAMA else s))
        ms = sorted({k[2] for k in times if k[0] == kernel})
        print(kernel)
        print(f"{'shape':11} {'M':>3}  " + "  ".join(f"{n:>{width}}" for n in names))
        best = lambda s, m, n: min(times[(kernel, s, m, n)]) if times.get((kernel, s, m, n)) else None
        for s in shapes:
            for m in ms:
                cells = [best(s, m, n) for n in names]
                if any(c is not None for c in cells):
                    print(f"{s:11} {m:3}  " + "  ".join(f"{c:{width}.1f}" if c is not None else f"{'-':>{width}}" for c in cells))
        if all(s in shapes for s in LLAMA):
            print("per decoder layer (fastest round of each shape)")
            for m in ms:
                cells = []
                for n in names:
                    parts = [best(s, m, n) for s in LLAMA]
                    cells.append(sum(parts) if all(p is not None for p in parts) else None)
                print(f"{'layer':11} {m:3}  " + "  ".join(f"{c:{width}.1f}" if c is not None else f"{'-':>{width}}" for c in cells))
        print()


if __name__ == "__main__":
    main()
