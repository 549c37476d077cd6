#!/usr/bin/env bash
# `make go-bench`: the Go package's benchmarks (bindings/go/bench_test.go) in interleaved rounds:
# each round runs every case through the Go package and from C, one after the other, and an empty
# cgo call; the table gives the median ns per call of each, their ratio, and what the package
# adds beyond the C call and the empty cgo call (the floor of any call from Go); and the floor of
# each case: the C call and an empty cgo call (a small result's handle is freed without a cgo
# call of its own: in the cgo call of a later one, or with others). It
# also prints what a Go object with its finalizer set and cleared costs
# (BenchmarkOwnerFinalizer): a Tensor would pay that on top for each result, but a small one
# closed while young (bindings/go/young.go) never gets a finalizer.
# ROUNDS (default 9) and BENCHTIME (default 300ms) tune it. The machine's load is printed before
# and after: timings on a shared machine move.
set -euo pipefail
source "$(dirname "$0")/go_env.sh"
rounds="${ROUNDS:-9}"
benchtime="${BENCHTIME:-300ms}"
cd "$root/bindings/go"
out="$(mktemp)"
trap 'rm -f "$out" "$out.cpu" "$out.test"' EXIT
echo "load before: $(uptime)"
"$go" test -c -o "$out.test" . >/dev/null
for ((r = 1; r <= rounds; r++)); do
  "$out.test" -test.run '^$' -test.bench '^Benchmark(EmptyCgoCall|OwnerFinalizer|Add)$' -test.benchtime "$benchtime" |
    grep '^Benchmark' >>"$out"
done
# CPU time per call (user + sys of every thread of the process, the garbage collector's too),
# which a loaded machine stretches far less than the wall time above: the tiny allocating addition
# and the same into out, from Go and from C, and an empty cgo call, in chunks alternating every
# fraction of a millisecond (BenchmarkAddTinyAlternating), so that both sides get the same machine.
cpu_chunks="${CPU_CHUNKS:-300}"
for ((r = 1; r <= 3; r++)); do
  "$out.test" -test.run '^$' -test.bench 'AddTinyAlternating$' -test.benchtime "${cpu_chunks}x" | grep '^Benchmark' >>"$out.cpu"
done
rm -f "$out.test"
echo "load after:  $(uptime)"
echo "$rounds rounds, -benchtime $benchtime; median ns per call"
awk '
  { name = $1; sub(/-[0-9]+$/, "", name); sub(/^BenchmarkAdd\//, "", name)
    v[name] = v[name] " " $3; for (i = 5; i <= NF; i++) if ($i == "allocs/op") allocs[name] = $(i - 1)
    if (!(name in seen)) { seen[name] = 1; order[n++] = name } }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    cgo = median(v["BenchmarkEmptyCgoCall"]); fin = median(v["BenchmarkOwnerFinalizer"])
    printf "empty cgo call: %.1f ns; a Go owner object with its finalizer set and cleared: %.1f ns\n", cgo, fin
    printf "%-36s %12s %12s %8s %14s %12s %8s %7s\n", "case", "Go package", "C", "Go / C", "Go - C - cgo", "floor", "floor/C", "allocs"
    for (i = 0; i < n; i++) {
      name = order[i]; if (name !~ /\/go$/) continue
      base = substr(name, 1, length(name) - 3); g = median(v[name]); c = median(v[base "/c"])
      # The least the call can cost from Go: the C call and one cgo call (a small result is freed
      # in the cgo call of a later one: bindings/go/young.go). (A finalizer set and cleared for
      # each result, which the young ring spares short-lived small results, would add the figure
      # printed above.)
      floor = c + cgo
      printf "%-36s %12.1f %12.1f %8.2f %14.1f %12.1f %8.2f %7s\n", base, g, c, g / c, g - c - cgo, floor, floor / c, allocs[name]
    }
  }' "$out"
# The alternating benchmark's metrics, medians of its rounds.
awk '{ for (i = 5; i < NF; i += 2) v[$(i + 1)] = v[$(i + 1)] " " $i }
  function median(s,   a, k, i, j, t) {
    k = split(s, a, " ")
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    g = median(v["alloc-go-cpu-ns"]); c = median(v["alloc-c-cpu-ns"]); fl = median(v["alloc-floor-cpu-ns"])
    og = median(v["out-go-cpu-ns"]); oc = median(v["out-c-cpu-ns"]); e = median(v["empty-cgo-cpu-ns"])
    printf "CPU time per call, alternating chunks (medians of 3 runs):\n"
    printf "  tiny allocating addition: %.1f ns from Go, %.1f ns from C (%.2fx; target 2x); floor %.1f ns (%.2fx: the C call in one cgo call that frees the previous result)\n", g, c, g / c, fl, fl / c
    printf "  into out: %.1f ns from Go, %.1f ns from C; Go - C - empty cgo call = %.1f ns (target 10 ns)\n", og, oc, og - oc - e
    printf "  empty cgo call: %.1f ns\n", e
  }' "$out.cpu"
