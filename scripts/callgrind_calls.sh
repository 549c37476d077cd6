#!/bin/sh
# Instructions per call under callgrind (scripts/callgrind_calls.c says what each case computes).
# By default the tiny calls: bc_add (allocating) and bc_add_out for float32 (3,1)+(1,3) (L1) and
# (4,)+(4,) (L2), each run 1,000 and 2,000 times. With the argument `reduce`, the reductions
# R1, R2, F1 and M6 of a float32 (512,512) on one thread, each run 10 and 20 times. The
# difference of the two totals over the difference of the counts is one call's count, free of
# start-up and set-up. Deterministic, so two builds compare exactly:
# LIBDIR=/path/to/other/build sh scripts/callgrind_calls.sh [reduce].
# Needs valgrind and a C compiler; uses target/release (cargo build --release) by default.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIBDIR=${LIBDIR:-$ROOT/target/release}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
${CC:-cc} -O2 -I "$ROOT/include" "$ROOT/scripts/callgrind_calls.c" -L"$LIBDIR" -lbroadcast \
    -Wl,-rpath,"$LIBDIR" -o "$TMP/calls"
if [ "${1:-}" = reduce ]; then
    cases="R1:alloc R2:alloc F1:alloc M6:alloc"
    counts="10 20"
else
    cases="L1:alloc L1:out L2:alloc L2:out"
    counts="1000 2000"
fi
for case in $cases; do
    totals=""
    for n in $counts; do
        valgrind --tool=callgrind --callgrind-out-file="$TMP/out" "$TMP/calls" "${case%:*}" "${case#*:}" "$n" 2>/dev/null
        totals="$totals $(grep -m1 '^summary:\|^totals:' "$TMP/out" | awk '{print $2}')"
    done
    echo "${case%:*} ${case#*:} $counts$totals" |
        awk '{printf "%s %-5s %10.1f instructions per call\n", $1, $2, ($6 - $5) / ($4 - $3)}'
done
