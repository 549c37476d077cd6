#!/usr/bin/env bash
# Run the C test suite (tests/c_suite.rs) with the C programs built under AddressSanitizer and
# UndefinedBehaviorSanitizer. The Rust library itself is not instrumented; ASan still checks every
# C-side access to memory the library hands out or writes into (wrapped buffers, copy_to, ...).
# Extra arguments go to `cargo test` (e.g. --release).
set -euo pipefail
cd "$(dirname "$0")/.."
export BC_C_SUITE_CFLAGS="${BC_C_SUITE_CFLAGS:-} -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
exec cargo test "$@" --test c_suite
