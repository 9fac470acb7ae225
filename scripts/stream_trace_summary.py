#!/usr/bin/env python3
"""Summarises the stream kernel's timelines (a -DQS_MARLIN_STREAM_TRACE build of bench_kernels
prints, per traced call, CTA 0's SM clock at each hand-off of its first 64 items; see
docs/marlin.md, "tuning switches"): for every timeline in the files, the steady-state period
per item and how a consumer warp spends it, averaged over items FIRST..LAST (default 6..28: past
the ring's start, before the first group's end), in SM clocks.
Usage: stream_trace_summary.py TRACE.txt [TRACE.txt ...] [--items 6:28]

Columns of a timeline (marlin_stream.cu, TraceEvent): wcopy / xcopy — the weight / activation
producer issued the item's copy; staged / rewrit — rewriter warp 0 saw the staged activations /
finished rewriting them; w_in — consumer warp 0 saw the weights; expand — it had expanded them;
x_in0 — it saw the rewritten activations; issued — it committed the wgmma group; prevdn — its
wait for the previous group returned; x_in1 — consumer warp 4 saw the activations."""
import re
import sys
from statistics import mean

COLUMNS = ["item", "wcopy", "xcopy", "staged", "rewrit", "w_in", "expand", "x_in0", "issued", "prevdn", "x_in1"]
ROW = re.compile(r"^\s*\d+(\s+-?\d+){%d}\s*$" % (len(COLUMNS) - 1))


def timelines(path):
    """Yields (title, rows) per timeline: rows as dicts by column name, keyed by item."""
    title, rows = None, {}
    for line in open(path):
        if line.startswith("stream trace:"):
            if rows:
                yield title, rows
            title, rows = line.split(":", 1)[1].strip(), {}
        elif title and ROW.match(line):
            values = [int(v) for v in line.split()]
            rows[values[0]] = dict(zip(COLUMNS, values))
    if rows:
        yield title, rows


def summary(rows, first, last):
    items = [i for i in range(first, last + 1) if i in rows and i + 1 in rows]
    if not items:
        return None
    r = lambda i, c: rows[i][c]
    per = lambda f: mean(f(i) for i in items)
    return {
        "period": per(lambda i: r(i + 1, "w_in") - r(i, "w_in")),
        "wait weights": per(lambda i: r(i + 1, "w_in") - r(i, "prevdn")),
        "load+expand": per(lambda i: r(i, "expand") - r(i, "w_in")),
        "wait acts": per(lambda i: r(i, "x_in0") - r(i, "expand")),
        "issue": per(lambda i: r(i, "issued") - r(i, "x_in0")),
        "wait group": per(lambda i: r(i, "prevdn") - r(i, "issued")),
        "acts ready early": per(lambda i: r(i, "x_in0") - r(i, "rewrit")),
        "weight copy to use": per(lambda i: r(i, "w_in") - r(i, "wcopy")),
        "act copy latency": per(lambda i: r(i, "staged") - r(i, "xcopy")),
        "rewrite": per(lambda i: r(i, "rewrit") - r(i, "staged")),
    }


def main():
    args = sys.argv[1:]
    first, last = 6, 28
    if "--items" in args:
        i = args.index("--items")
        first, last = (int(x) for x in args[i + 1].split(":"))
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    for path in args:
        for title, rows in timelines(path):
            s = summary(rows, first, last)
            if not s:
                print(f"{path}: {title}: fewer than two items in {first}..{last}")
                continue
            print(f"{path}: {title}")
            print("  " + "  ".join(f"{k} {v:.0f}" for k, v in s.items()))


if __name__ == "__main__":
    main()
