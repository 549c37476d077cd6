#!/usr/bin/env bash
# The Go package's checks against the library of this checkout (`make go-test`): go vet, the tests
# as they are, under the race detector, with cgo's full pointer checks, and with -tags bcdebug
# (a garbage collection at every handle read, GOGC=1), and with -tags bcfault (the shims' own
# allocations made to fail); then the quick start built with
# -tags nopkgconfig and flags given by hand, the other documented way to link.
# Expects `cargo build --release` done (go_env.sh points pkg-config at it).
set -euo pipefail
source "$(dirname "$0")/go_env.sh"

cd "$root/bindings/go"
echo "== go vet ($("$go" env GOVERSION))"
"$go" vet ./...
echo "== go test"
"$go" test -count=1 -bench . -benchtime 1x ./...
echo "== go test -race"
"$go" test -count=1 -race ./...
# cgo's full pointer checks: a run-time setting up to Go 1.20, a build-time experiment after.
case "$("$go" env GOVERSION)" in
  go1.1[0-9]* | go1.20*) echo "== go test, GODEBUG=cgocheck=2"; GODEBUG=cgocheck=2 "$go" test -count=1 ./... ;;
  *) echo "== go test, GOEXPERIMENT=cgocheck2"; GOEXPERIMENT=cgocheck2 "$go" test -count=1 ./... ;;
esac
echo "== go test -short -tags bcdebug, GOGC=1"
GOGC=1 "$go" test -count=1 -short -tags bcdebug ./...
echo "== go vet and go test -tags bcfault (a shim's own allocation made to fail)"
"$go" vet -tags bcfault ./...
"$go" test -count=1 -tags bcfault -run ShimAlloc ./...
echo "== quick start built with -tags nopkgconfig"
CGO_CFLAGS="-I$root/include" CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib -lbroadcast" \
  "$go" run -tags nopkgconfig ./examples/quickstart
