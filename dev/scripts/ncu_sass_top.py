#!/usr/bin/env python3
"""Prints the SASS lines of an Nsight Compute source-page CSV (ncu -i R --page source --csv
--print-source sass) with the most warp-stall samples: python3 ncu_sass_top.py page.csv [N]."""
import csv
import sys


def main():
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    head = next(i for i, r in enumerate(rows) if any("Source" == c or "Address" == c for c in r))
    names = rows[head]
    col = next(i for i, c in enumerate(names) if c.startswith("Warp Stall Sampling (All"))
    src = names.index("Source")
    body = [r for r in rows[head + 1:] if len(r) > col and r[col].replace(",", "").isdigit()]
    total = sum(int(r[col].replace(",", "")) for r in body) or 1
    print(f"{total} stall samples; top {top} SASS lines (index, % of samples, instruction)")
    ranked = sorted(enumerate(body), key=lambda t: -int(t[1][col].replace(",", "")))[:top]
    for idx, r in sorted(ranked):
        print(f"{idx:5d} {100.0 * int(r[col].replace(',', '')) / total:5.1f}%  {r[src][:90]}")


if __name__ == "__main__":
    main()
