#!/bin/sh
# Instructions per tiny call under callgrind: bc_add (allocating) and bc_add_out for float32
# (3,1)+(1,3) (L1) and (4,)+(4,) (L2). Each case runs 1,000 and 2,000 calls; the difference of
# the totals over 1,000 is one call's count, free of start-up and set-up. Deterministic, so two
# builds compare exactly: LIBDIR=/path/to/other/build sh scripts/callgrind_calls.sh.
# Needs valgrind and a C compiler; uses target/release (cargo build --release) by default.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIBDIR=${LIBDIR:-$ROOT/target/release}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
${CC:-cc} -O2 -I "$ROOT/include" "$ROOT/scripts/callgrind_calls.c" -L"$LIBDIR" -lbroadcast \
    -Wl,-rpath,"$LIBDIR" -o "$TMP/calls"
for case in "L1 alloc" "L1 out" "L2 alloc" "L2 out"; do
    totals=""
    for n in 1000 2000; do
        # shellcheck disable=SC2086
        valgrind --tool=callgrind --callgrind-out-file="$TMP/out" "$TMP/calls" $case $n 2>/dev/null
        totals="$totals $(grep -m1 '^summary:\|^totals:' "$TMP/out" | awk '{print $2}')"
    done
    echo "$case$totals" | awk '{printf "%s %-5s %8.1f instructions per call\n", $1, $2, ($4 - $3) / 1000}'
done
