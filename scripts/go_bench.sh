#!/usr/bin/env bash
# `make go-bench`: the Go package's benchmarks (bindings/go/bench_test.go) in interleaved rounds:
# each round runs every case through the Go package and from C, one after the other; the table
# gives the median ns per call of each, and their difference (what the package and cgo add).
# ROUNDS (default 9) and BENCHTIME (default 300ms) tune it. The machine's load is printed before
# and after: timings on a shared machine move.
set -euo pipefail
source "$(dirname "$0")/go_env.sh"
rounds="${ROUNDS:-9}"
benchtime="${BENCHTIME:-300ms}"
cd "$root/bindings/go"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load before: $(uptime)"
"$go" test -c -o "$out.test" . >/dev/null
for ((r = 1; r <= rounds; r++)); do
  "$out.test" -test.run '^$' -test.bench . -test.benchtime "$benchtime" | grep '^Benchmark' >>"$out"
done
rm -f "$out.test"
echo "load after:  $(uptime)"
echo "$rounds rounds, -benchtime $benchtime; median ns per call"
awk '
  { name = $1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkAdd\//, "", name)
    v[name] = v[name] " " $3; if (!(name in seen)) { seen[name] = 1; order[n++] = name } }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    printf "%-36s %14s %14s %14s\n", "case", "Go package", "C", "Go - C"
    for (i = 0; i < n; i++) {
      name = order[i]; if (name !~ /\/go$/) continue
      base = substr(name, 1, length(name) - 3); g = median(v[name]); c = median(v[base "/c"])
      printf "%-36s %14.1f %14.1f %14.1f\n", base, g, c, g - c
    }
  }' "$out"
