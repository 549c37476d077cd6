#!/usr/bin/env bash
# What `make demo` or `make test` needs, checked before anything is built, so that a missing tool
# is named at the start (with the Debian package that provides it) instead of failing the run
# where it is first used, minutes in. Every missing tool is listed at once.
#
# Usage: scripts/prereqs.sh demo|test. Exits 1 when something is missing, 0 otherwise.
# The tools are looked up on PATH (CC and CXX are honoured, as cargo's cc crate honours them).
set -u
what=${1:-test}
cd "$(dirname "$0")/.."

missing=()
# need <command> <what provides it>
need() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 ($2)"); }

need cargo "a Rust toolchain: https://rustup.rs"
need rustc "a Rust toolchain: https://rustup.rs"
need make "Debian package make"
need "${CC:-cc}" "Debian package gcc"
if [ "$what" = test ]; then
    need "${CXX:-c++}" "Debian package g++"
    need git "Debian package git"
    need sha256sum "Debian package coreutils"
    need objdump "Debian package binutils"
    need readelf "Debian package binutils"
    need strip "Debian package binutils"
    need valgrind "Debian package valgrind"
    need go "Debian package golang-go"
    need pkg-config "Debian package pkg-config"
    need cmake "Debian package cmake"
    need python3 "Debian package python3"
    # `python3 -m venv` needs ensurepip, which Debian ships apart from python3.
    if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        missing+=("python3's venv module (Debian package python3-venv)")
    fi
    if command -v cargo >/dev/null 2>&1; then
        cargo fmt --version >/dev/null 2>&1 || missing+=("rustfmt (rustup component add rustfmt)")
        cargo clippy --version >/dev/null 2>&1 || missing+=("clippy (rustup component add clippy)")
    fi
fi

# The compiler must be at least the stated minimum (Cargo.toml's rust-version).
if command -v rustc >/dev/null 2>&1; then
    want=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
    have=$(rustc --version | sed -n 's/^rustc \([0-9]*\.[0-9]*\).*/\1/p')
    if [ -n "$want" ] && [ -n "$have" ] &&
        [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -n 1)" != "$want" ]; then
        missing+=("rustc $want or later (this is $have: rustup update)")
    fi
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "make $what cannot run: missing" >&2
    for m in "${missing[@]}"; do echo "  - $m" >&2; done
    [ "$what" = test ] && echo "(.ci/run installs the Debian packages with apt-get)" >&2
    exit 1
fi

# Disk: a whole `make test` leaves about 11 GB in target/ (debug, sanitizer and release builds).
if [ "$what" = test ]; then
    free_kb=$(df -Pk . 2>/dev/null | awk 'NR == 2 { print $4 }')
    if [ -n "$free_kb" ] && [ "$free_kb" -lt $((12 * 1024 * 1024)) ] && [ ! -d target/debug ]; then
        echo "warning: $((free_kb / 1024 / 1024)) GB free here; make test needs about 12 GB for target/" >&2
    fi
fi
echo "make $what: every tool it needs is here"
