#!/usr/bin/env python3
"""Sums one decode step's GPU time by kernel, from Nsight Compute's CSV of a bench_decode run
(GPU machine: `QSERVE_CUDA_GRAPHS=0 ncu --clock-control none --cache-control none --csv --metrics
gpu__time_duration.sum out/device/bench_decode MODEL --linear-backend marlin --batches B --steps 1
> ncu-B.csv`, gzip optional; `--cache-control none` keeps ncu from flushing the caches before every
kernel, which inflates the small kernels' times; sessions 17-18 ran without it). A forward starts
at an embedding kernel. By default the last forward is summed (the others are the prefill and the
warm-up steps). A run over several batch sizes (`--batches 1,16`) makes 1 prefill + 3 warm-up +
STEPS forwards per batch: `--forwards-per-run 4+STEPS` splits the file into those runs and reports
each run's last forward (its timed step), labelled by `--labels 1,16`; `--prefill` also reports
each run's first forward (the prefill of `--prompt` tokens). A forward ends at its last sampling
kernel where it has one (bench_decode samples on the device). Prints each reported forward's total
and its kernels by total time, largest first; `--json FILE` writes the same figures.
Usage: ncu_step_summary.py NCU.csv[.gz] [...] [--top N] [--forwards-per-run N [--labels A,B]]
       [--prefill] [--json FILE]"""
import argparse
import collections
import csv
import gzip
import json
import re


def kernels(path):
    """(name, grid, microseconds) per kernel launch, in launch order."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]
    return [(r["Kernel Name"], r["Grid Size"], float(r["Metric Value"].replace(",", "")) / 1000)
            for r in csv.DictReader(lines) if r["Metric Name"] == "gpu__time_duration.sum"]


def trim(forward):
    """A forward up to its last sampling kernel, where it has one: kernels after it (the next
    batch's set-up, in a run over several batch sizes) are no part of the step."""
    last = [i for i, r in enumerate(forward) if "sample_kernel" in r[0]]
    return forward[:last[-1] + 1] if last else forward


def summarise(path, label, rows, top):
    """Prints one forward's total and its largest kernels; returns the same as a dict."""
    by_name = collections.defaultdict(lambda: [0, 0.0, set()])
    for name, grid, us in rows:
        key = re.sub(r"\(.*", "", name)[:70]
        by_name[key][0] += 1
        by_name[key][1] += us
        by_name[key][2].add(grid)
    total = sum(r[2] for r in rows)
    print(f"== {path}: {label} {len(rows)} kernels, {total:.0f} us")
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][1])
    for key, (count, us, grids) in ranked[:top]:
        print(f"  {us:8.1f} us  {count:4d}x  {key}  grids {sorted(grids)[:3]}")
    return {"file": path, "label": label, "kernels": len(rows), "us": round(total, 1),
            "top": [{"name": k, "count": c, "us": round(us, 1)} for k, (c, us, _) in ranked[:top]]}


def main():
    ap = argparse.ArgumentParser(description="one decode step's GPU time by kernel, from ncu's CSV")
    ap.add_argument("csv", nargs="+", help="ncu --csv output of a bench_decode run (.gz allowed)")
    ap.add_argument("--top", type=int, default=14, help="kernels to print per forward")
    ap.add_argument("--forwards-per-run", type=int, default=0,
                    help="forwards per batch size (1 prefill + 3 warm-up + --steps): report every run")
    ap.add_argument("--labels", default="", help="the runs' names, comma-separated (bench_decode's --batches)")
    ap.add_argument("--prefill", action="store_true", help="also report each run's first forward")
    ap.add_argument("--json", help="write the reported forwards' totals and top kernels here")
    args = ap.parse_args()
    report = []
    for path in args.csv:
        rows = kernels(path)
        starts = [i for i, r in enumerate(rows) if "embedding" in r[0].lower()]
        if not starts:
            print(f"{path}: no embedding kernel, no step found")
            continue
        forwards = [trim(rows[s:e]) for s, e in zip(starts, starts[1:] + [len(rows)])]
        n = args.forwards_per_run or len(forwards)
        if len(forwards) % n:
            print(f"{path}: {len(forwards)} forwards, not a multiple of {n} per run: "
                  f"the last run is cut short (a run that stopped early?)")
        labels = [x for x in args.labels.split(",") if x]
        for r, first in enumerate(range(0, len(forwards), n)):
            run = forwards[first:first + n]
            name = f"batch {labels[r]}" if r < len(labels) else (f"run {r + 1}" if args.forwards_per_run else "")
            if args.prefill:
                report.append(dict(summarise(path, f"{name} prefill".strip(), run[0], args.top), run=r, kind="prefill"))
            if len(run) == n or not args.forwards_per_run:
                report.append(dict(summarise(path, f"{name} last step".strip(), run[-1], args.top), run=r, kind="step"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
