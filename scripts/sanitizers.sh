#!/usr/bin/env bash
# Memory checking: the C suite (tests/c_suite.rs, c_tests/*.c, among them the boundary contract
# of every export, c_tests/contract.c with its calls generated from the header) under
# AddressSanitizer + UndefinedBehaviorSanitizer and under valgrind, with zero errors and zero
# leaks; and, since Miri
# cannot run here (no miri/rust-src components and no network to fetch them), the engine's unsafe
# code under valgrind through the Rust reliability tests and the fuzz corpus.
#
# Stages (all by default; choose with SANITIZERS="asan asan-static valgrind valgrind-rust rust-asan"):
#   asan           C programs built with -fsanitize=address,undefined, linked to libbroadcast.so.
#                  gcc 12 links libasan into the executable itself, so it is loaded first and
#                  intercepts malloc/free for the (uninstrumented) Rust library too: no LD_PRELOAD
#                  is needed. LeakSanitizer checks leaks at exit (C and Rust allocations alike);
#                  allocator_may_return_null=1 lets a 2^40-element request come back as
#                  BC_ERR_ALLOC instead of an ASan abort. The script checks that the binaries
#                  really link libasan (a sanitizer that silently did not apply would pass).
#   asan-static    the same with libbroadcast.a linked in (BC_C_SUITE_LINK=static).
#   valgrind       every C program under memcheck: invalid accesses, uninitialised values,
#                  definite/indirect/possible leaks are errors (exit 99).
#   valgrind-rust  the Rust reliability tests' single-threaded parts and the fuzz corpus under
#                  memcheck (errors only: the test harness keeps thread-locals alive at exit).
#   (valgrind's uninitialised-value reports say where the value came from only with
#   VALGRIND_ORIGINS=yes: --track-origins made the two valgrind stages 3.4x slower, 969 s
#   against 286 s for the corpus; the errors are reported either way.)
#   rust-asan      the same Rust tests built with `cargo +nightly -Zsanitizer=address` (optional:
#                  needs a nightly toolchain; skipped with a notice, never counted as passed).
#
# Prints "sanitizers: N passed, N failed, N skipped" last; exits non-zero when a stage failed.
# Extra arguments go to each `cargo test` (e.g. --release).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ORIGINS="--track-origins=${VALGRIND_ORIGINS:-no}"
STAGES=${SANITIZERS:-"asan asan-static valgrind valgrind-rust rust-asan"}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PASSED=0 FAILED=0 SKIPPED=0
FAILED_NAMES=""

stage() { echo; echo "=== sanitizers: $1 === (started $(date -u +%T))"; }
pass() { echo "--- $1: PASSED ($(date -u +%T))"; PASSED=$((PASSED + 1)); }
fail() { echo "--- $1: FAILED ($2)"; FAILED=$((FAILED + 1)); FAILED_NAMES="$FAILED_NAMES $1"; }
skip() { echo "--- $1: SKIPPED, NOT RUN: $2"; SKIPPED=$((SKIPPED + 1)); }

# The profile directory cargo test will use (debug unless --release is among the arguments).
PROFILE=debug
for a in "$@"; do [ "$a" = "--release" ] && PROFILE=release; done
C_BIN_DIR="$TARGET/c_suite/$PROFILE"

# Every C program the suite built must link the ASan runtime (shared) or contain it (static).
check_asan_linked() {
    local missing=0 n=0
    for exe in "$C_BIN_DIR"/*; do
        [ -f "$exe" ] && [ -x "$exe" ] || continue
        n=$((n + 1))
        # grep reads all of its input here (no -q): with pipefail, a grep that quits at the first
        # match makes ldd/nm die of SIGPIPE and the pipeline fail at random on large outputs.
        if ! { ldd "$exe" 2>/dev/null | grep libasan >/dev/null || nm "$exe" 2>/dev/null | grep __asan_init >/dev/null; }; then
            echo "not instrumented with ASan: $exe"
            missing=1
        fi
    done
    [ "$n" -gt 0 ] || { echo "no C programs found in $C_BIN_DIR"; return 1; }
    return $missing
}

run_asan() {
    local name=$1 link=$2
    shift 2
    stage "$name"
    rm -rf "$C_BIN_DIR"
    if BC_C_SUITE_CFLAGS="${BC_C_SUITE_CFLAGS:-} -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
        BC_C_SUITE_LINK=$link \
        ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=0:exitcode=98}" \
        LSAN_OPTIONS="${LSAN_OPTIONS:-exitcode=97}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        cargo test "$@" --test c_suite -- --test-threads=2; then
        if check_asan_linked; then pass "$name"; else fail "$name" "programs not instrumented"; fi
    else
        fail "$name" "c_suite reported errors"
    fi
}

for s in $STAGES; do
    case $s in
    asan) run_asan asan shared "$@" ;;
    asan-static)
        # The static library comes from `cargo build` (cargo test builds the cdylib/rlib only).
        cargo build "$@" --lib >/dev/null 2>&1 || true
        run_asan asan-static static "$@"
        ;;
    valgrind)
        stage valgrind
        if ! command -v valgrind >/dev/null; then
            fail valgrind "valgrind is not installed (apt-get install -y valgrind)"
            continue
        fi
        rm -rf "$C_BIN_DIR"
        if BC_C_SUITE_WRAPPER="valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible $ORIGINS" \
            BC_C_SUITE_TIMEOUT=${BC_C_SUITE_TIMEOUT:-900} \
            cargo test "$@" --test c_suite -- --test-threads=2; then
            pass valgrind
        else
            fail valgrind "c_suite reported errors (VALGRIND_ORIGINS=yes says where uninitialised values come from)"
        fi
        ;;
    valgrind-rust)
        stage valgrind-rust
        if ! command -v valgrind >/dev/null; then
            fail valgrind-rust "valgrind is not installed"
            continue
        fi
        ok=1
        # Build the test binaries, then run each under memcheck (one test thread: valgrind
        # serialises threads anyway). Subprocess-spawning tests re-run themselves, also checked.
        for t in fuzz_api handle_registry panics out_of_memory; do
            exe=$(cargo test "$@" --no-run --message-format=json --test "$t" 2>/dev/null |
                sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
            [ -n "$exe" ] || { echo "could not build $t"; ok=0; continue; }
            filter=""
            [ "$t" = fuzz_api ] && filter="corpus_replays_clean"
            echo "valgrind $t $filter"
            # out_of_memory limits its children's address space, which valgrind's own
            # reservations cannot live with: its in-process tests only.
            extra=""
            [ "$t" = out_of_memory ] && extra="--skip tera_element --skip exhausting"
            # `empty` tensors in the corpus have unspecified but zeroed elements: memcheck sees no
            # uninitialised reads.
            if ! valgrind --quiet --error-exitcode=99 --leak-check=no $ORIGINS \
                "$exe" $filter $extra --test-threads=1 -q; then
                ok=0
            fi
        done
        if [ $ok = 1 ]; then pass valgrind-rust; else fail valgrind-rust "memcheck reported errors (VALGRIND_ORIGINS=yes says where uninitialised values come from)"; fi
        ;;
    rust-asan)
        stage rust-asan
        if ! cargo +nightly --version >/dev/null 2>&1; then
            skip rust-asan "no nightly toolchain (cargo +nightly); AddressSanitizer for Rust code needs -Zsanitizer"
            continue
        fi
        host=$(rustc -vV | sed -n 's/^host: //p')
        # Our crate is instrumented; std is not (no rust-src for -Zbuild-std), which only means
        # fewer checks inside std, not false reports (unlike ThreadSanitizer, AddressSanitizer
        # needs no view of std's synchronisation). Newer nightlies refuse to mix instrumented and
        # uninstrumented crates unless told that this is deliberate.
        if RUSTFLAGS="-Zsanitizer=address -Cunsafe-allow-abi-mismatch=sanitizer" \
            RUSTDOCFLAGS="-Zsanitizer=address -Cunsafe-allow-abi-mismatch=sanitizer" \
            ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1" \
            CARGO_TARGET_DIR="$TARGET/asan" \
            cargo +nightly test "$@" --target "$host" \
            --test fuzz_api --test handle_registry --test panics \
            --test threads --test out_of_memory -- --test-threads=2 \
            --skip tera_element --skip exhausting; then
            # (The two skipped tests limit their child's address space, and ASan's shadow
            # memory alone needs terabytes of it; they run in every other stage.)
            pass rust-asan
        else
            fail rust-asan "tests failed under -Zsanitizer=address"
        fi
        ;;
    *) fail "$s" "unknown stage" ;;
    esac
done

echo
[ -n "$FAILED_NAMES" ] && echo "failed stages:$FAILED_NAMES"
echo "sanitizers: $PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" -eq 0 ]
