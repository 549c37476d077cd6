// Package cbench times calls of libbroadcast made from C, in one loop inside one cgo call, so
// that the Go package's benchmarks can set the same calls made through cgo beside them.
package cbench

/*
#include <stdint.h>
#include "broadcast.h"

// n times: *out = a + b, then free it. Returns BC_OK or the first failure's status.
static int32_t add_alloc(uintptr_t a, uintptr_t b, long n) {
	for (long i = 0; i < n; i++) {
		bc_tensor *r = NULL;
		int32_t s = bc_add((const bc_tensor *)a, (const bc_tensor *)b, &r);
		if (s != BC_OK) return s;
		bc_tensor_free(r);
	}
	return BC_OK;
}

// n times: out = a + b into an existing tensor.
static int32_t add_out(uintptr_t a, uintptr_t b, uintptr_t out, long n) {
	for (long i = 0; i < n; i++) {
		int32_t s = bc_add_out((const bc_tensor *)a, (const bc_tensor *)b, (bc_tensor *)out);
		if (s != BC_OK) return s;
	}
	return BC_OK;
}

static void empty(void) {}

static void free_handle(uintptr_t h) { bc_tensor_free((bc_tensor *)h); }

// One allocating addition in one cgo call, as the Go package makes it: frees prev (the previous
// result, 0 for none) first, and returns the new result (0 on failure).
static uintptr_t add_free_prev(uintptr_t a, uintptr_t b, uintptr_t prev) {
	bc_tensor *r = NULL;
	if (prev != 0) bc_tensor_free((bc_tensor *)prev);
	if (bc_add((const bc_tensor *)a, (const bc_tensor *)b, &r) != BC_OK) return 0;
	return (uintptr_t)r;
}
*/
import "C"

// AddAlloc runs n allocating additions of the tensors with handles a and b (and frees each
// result); it returns the library's status (0 for success).
func AddAlloc(a, b uintptr, n int) int32 {
	return int32(C.add_alloc(C.uintptr_t(a), C.uintptr_t(b), C.long(n)))
}

// AddOut runs n additions of a and b into out.
func AddOut(a, b, out uintptr, n int) int32 {
	return int32(C.add_out(C.uintptr_t(a), C.uintptr_t(b), C.uintptr_t(out), C.long(n)))
}

// AddFreePrev is one allocating addition of a and b in one cgo call, which first frees prev (the
// previous result, 0 for none): the least a call from Go that frees a result in the cgo call of
// the next can cost. It returns the new result's handle (0 on failure).
func AddFreePrev(a, b, prev uintptr) uintptr {
	return uintptr(C.add_free_prev(C.uintptr_t(a), C.uintptr_t(b), C.uintptr_t(prev)))
}

// FreeHandle frees the handle h (0: none).
func FreeHandle(h uintptr) { C.free_handle(C.uintptr_t(h)) }

// Empty is one cgo call of a C function that does nothing: the least any call from Go costs.
func Empty() { C.empty() }
