// Package cmem gives the Go package's tests memory outside Go's heap and a C release function
// that counts its calls, to check that WrapC's release runs exactly once, and when.
package cmem

/*
#include <stdlib.h>

static long released;

static void counting_free(void *p) {
	__atomic_add_fetch(&released, 1, __ATOMIC_SEQ_CST);
	free(p);
}

static void *counting_free_ptr(void) { return (void *)counting_free; }
static long released_count(void) { return __atomic_load_n(&released, __ATOMIC_SEQ_CST); }
*/
import "C"

import "unsafe"

// Malloc returns n bytes from C's malloc (nil when that fails).
func Malloc(n int) unsafe.Pointer { return C.malloc(C.size_t(n)) }

// Free frees memory from Malloc.
func Free(p unsafe.Pointer) { C.free(p) }

// CountingFree is a C function void f(void *p) that counts its call, then frees p.
func CountingFree() unsafe.Pointer { return C.counting_free_ptr() }

// Released is how many times CountingFree's function has run in this process.
func Released() int { return int(C.released_count()) }
