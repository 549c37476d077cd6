#!/usr/bin/env bash
# The Go package's checks against the library of this checkout (`make go-test`): go vet, the tests
# as they are, under the race detector, with cgo's full pointer checks, and with -tags bcdebug
# (a garbage collection at every handle read, GOGC=1); then the quick start built with
# -tags nopkgconfig and flags given by hand, the other documented way to link.
# Expects `cargo build --release` done; writes target/pkgconfig/broadcast-uninstalled.pc, which
# pkg-config prefers to an installed broadcast.pc.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
go="${GO:-go}"
lib="$root/target/release"
pc="$root/target/pkgconfig"
version="$(sed -n 's/^#define BC_VERSION_STRING "\(.*\)"/\1/p' "$root/include/broadcast.h")"

mkdir -p "$pc"
cat >"$pc/broadcast-uninstalled.pc" <<PC
libdir=$lib
includedir=$root/include

Name: broadcast
Description: libbroadcast, uninstalled (the build in $root)
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lbroadcast
PC
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

cd "$root/bindings/go"
echo "== go vet ($("$go" env GOVERSION))"
"$go" vet ./...
echo "== go test"
"$go" test -count=1 ./...
echo "== go test -race"
"$go" test -count=1 -race ./...
# cgo's full pointer checks: a run-time setting up to Go 1.20, a build-time experiment after.
case "$("$go" env GOVERSION)" in
  go1.1[0-9]* | go1.20*) echo "== go test, GODEBUG=cgocheck=2"; GODEBUG=cgocheck=2 "$go" test -count=1 ./... ;;
  *) echo "== go test, GOEXPERIMENT=cgocheck2"; GOEXPERIMENT=cgocheck2 "$go" test -count=1 ./... ;;
esac
echo "== go test -tags bcdebug, GOGC=1"
GOGC=1 "$go" test -count=1 -tags bcdebug ./...
echo "== quick start built with -tags nopkgconfig"
CGO_CFLAGS="-I$root/include" CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib -lbroadcast" \
  "$go" run -tags nopkgconfig ./examples/quickstart
