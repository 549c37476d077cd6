//go:build bcfault

package broadcast

/*
#cgo CFLAGS: -DGOBC_FAULT
#include "shims.h"
*/
import "C"

// FailShimAlloc makes the n-th allocation of a C shim from now on fail (0: none), for the tests
// built with -tags bcfault. Not safe while other goroutines call the package.
func FailShimAlloc(n int) { C.gobc_fault_malloc(C.int(n)) }
