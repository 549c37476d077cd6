#!/usr/bin/env bash
# Run the C test suite (tests/c_suite.rs) with every C program under valgrind: invalid reads and
# writes, uses of uninitialised memory, and definite/indirect leaks (in the C programs and in the
# library) fail the test. Extra arguments go to `cargo test` (e.g. --release).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install -y valgrind)" >&2; exit 2; }
export BC_C_SUITE_WRAPPER="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect"
exec cargo test "$@" --test c_suite
