//go:build !nopkgconfig

package cmem

// The library is found through pkg-config (broadcast.pc, installed by `make install`; or, for the
// repository's own tests, the broadcast-uninstalled.pc that `make go-test` writes). Build with
// -tags nopkgconfig to give the flags yourself in CGO_CFLAGS and CGO_LDFLAGS instead.

// #cgo pkg-config: broadcast
import "C"
