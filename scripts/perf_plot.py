#!/usr/bin/env python3
"""Plot throughput against size for the (n,1024)+(1024,) sweep from bench-compare's CSV.

Usage: python3 scripts/perf_plot.py [docs/perf/results.csv] [docs/perf/sweep.png]
Needs matplotlib (python3 -m pip install matplotlib); not run in CI.

The CSV (bench-compare --csv FILE) has one row per measurement and round:
  peer,key,variant,round,ms,bytes
with sweep keys "SW <elements> <alloc|out>". Each point is the median over rounds; throughput is
bytes moved (each distinct input element once plus each output element) per second.
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

src = sys.argv[1] if len(sys.argv) > 1 else "docs/perf/results.csv"
dst = sys.argv[2] if len(sys.argv) > 2 else "docs/perf/sweep.png"

times = defaultdict(list)  # (peer, variant) -> {elements: [ms]}
points = defaultdict(lambda: defaultdict(list))
nbytes = {}
with open(src) as f:
    for row in csv.DictReader(f):
        key = row["key"].split()
        if key[0] != "SW":
            continue
        elems, kind = int(key[1]), key[2]
        points[(row["peer"], kind)][elems].append(float(row["ms"]))
        nbytes[elems] = float(row["bytes"])

style = {
    "lib": ("libbroadcast", "tab:blue"),
    "limit": ("C limit (-march=native)", "tab:gray"),
    "numpy": ("NumPy (1 thread)", "tab:orange"),
}
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
for ax, kind, title in [
    (axes[0], "alloc", "result allocated per call (c = a + b)"),
    (axes[1], "out", "into an existing result (out=)"),
]:
    for peer, (label, color) in style.items():
        series = points.get((peer, kind))
        if not series:
            continue
        xs = sorted(series)
        ys = [nbytes[x] / (statistics.median(series[x]) * 1e6) for x in xs]
        ax.plot(xs, ys, marker="o", label=label, color=color,
                linestyle="--" if peer == "limit" else "-")
    ax.set_xscale("log")
    ax.set_xlabel("output elements, (n,1024)+(1024,) float32")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
axes[0].set_ylabel("throughput, GB/s (inputs + output bytes / time)")
axes[0].legend()
fig.suptitle("libbroadcast vs the hand-written C limit and NumPy (2 threads for libbroadcast and the limit)")
fig.tight_layout()
fig.savefig(dst, dpi=110)
print(f"wrote {dst}")
