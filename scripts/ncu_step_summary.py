#!/usr/bin/env python3
"""Sums one decode step's GPU time by kernel, from Nsight Compute's CSV of a bench_decode run
(GPU machine: `QSERVE_CUDA_GRAPHS=0 ncu --csv --metrics gpu__time_duration.sum
out/device/bench_decode MODEL --linear-backend marlin --batches B --steps 1 > ncu-B.csv`, gzip
optional). A step starts at an embedding kernel; the last step is summed (the others are the
warm-up steps). Prints the step's total and its kernels by total time, largest first.
Usage: ncu_step_summary.py NCU.csv[.gz] [...] [--top N]"""
import argparse
import collections
import csv
import gzip
import re


def kernels(path):
    """(name, grid, microseconds) per kernel launch, in launch order."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        lines = [line for line in f if line.startswith('"')]
    return [(r["Kernel Name"], r["Grid Size"], float(r["Metric Value"].replace(",", "")) / 1000)
            for r in csv.DictReader(lines) if r["Metric Name"] == "gpu__time_duration.sum"]


def main():
    ap = argparse.ArgumentParser(description="one decode step's GPU time by kernel, from ncu's CSV")
    ap.add_argument("csv", nargs="+", help="ncu --csv output of a bench_decode run (.gz allowed)")
    ap.add_argument("--top", type=int, default=14, help="kernels to print per file")
    args = ap.parse_args()
    for path in args.csv:
        rows = kernels(path)
        starts = [i for i, r in enumerate(rows) if "embedding" in r[0].lower()]
        if not starts:
            print(f"{path}: no embedding kernel, no step found")
            continue
        step = rows[starts[-1]:]
        by_name = collections.defaultdict(lambda: [0, 0.0, set()])
        for name, grid, us in step:
            key = re.sub(r"\(.*", "", name)[:70]
            by_name[key][0] += 1
            by_name[key][1] += us
            by_name[key][2].add(grid)
        print(f"== {path}: last step {len(step)} kernels, {sum(r[2] for r in step):.0f} us")
        for key, (count, us, grids) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:args.top]:
            print(f"  {us:8.1f} us  {count:4d}x  {key}  grids {sorted(grids)[:3]}")


if __name__ == "__main__":
    main()
