#!/usr/bin/env bash
# Full performance comparison on this machine: libbroadcast (C ABI) vs the C limit vs NumPy,
# interleaved, written to docs/perf/RESULTS.md (the tables for the README), docs/perf/results.csv
# (every measurement) and docs/perf/sweep.png (throughput vs size; needs matplotlib).
# Takes several minutes; run it on a quiet machine. Extra arguments go to bench-compare
# (e.g. --rounds 7).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/perf
cargo run --release -p bench-compare -- \
  --markdown docs/perf/RESULTS.md --csv docs/perf/results.csv "$@"
if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 scripts/perf_plot.py docs/perf/results.csv docs/perf/sweep.png
else
  echo "matplotlib is missing (python3 -m pip install matplotlib): no plot" >&2
fi
