#!/usr/bin/env bash
# include/broadcast.h and include/broadcast.hpp under clang's -Wdocumentation, as errors. Clang
# reads /** */ and /// comments as Doxygen, where a backslash or an @ before a word is a command
# (`\n` inside a quoted string, `GC.@preserve`): a program built with -Wdocumentation -Werror
# would fail on our headers. The C header's comments come from the doc comments in src/ffi.
#
# Needs clang++ or a versioned clang++-NN (CLANGXX names another). Without it the check does not run and says SKIPPED: that
# is not a pass.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's clang-NN packages install clang++-NN only (the unversioned name comes with the `clang`
# package): without CLANGXX, clang++ or else the newest clang++-NN on the PATH.
clangxx=${CLANGXX:-clang++}
if [ -z "${CLANGXX:-}" ] && ! command -v clang++ >/dev/null 2>&1; then
  versioned=$(compgen -c clang++- | grep -E '^clang\+\+-[0-9]+$' | sort -t- -k2 -n | tail -n 1 || true)
  [ -n "$versioned" ] && clangxx=$versioned
fi
if ! command -v "$clangxx" >/dev/null 2>&1; then
  echo "SKIPPED: header documentation check: $clangxx not found (install clang to run it)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "broadcast.h"\n' >"$tmp/c_header.c"
printf '#include "broadcast.hpp"\n' >"$tmp/cpp_header.cpp"
flags=(-fsyntax-only -Werror -Wdocumentation -Wdocumentation-unknown-command -Iinclude)

"$clangxx" -x c -std=c11 "${flags[@]}" "$tmp/c_header.c"
for std in c++17 c++20; do
  "$clangxx" -std="$std" "${flags[@]}" "$tmp/cpp_header.cpp"
done
echo "header documentation check: broadcast.h (C11) and broadcast.hpp (C++17, C++20) clean under $("$clangxx" --version | head -n 1)'s -Wdocumentation"
