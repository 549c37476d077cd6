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

// As add_alloc, but as the Go package calls the library: the results freed `batch` (at most 64)
// at a time (young.go), and, when numel is true, each result's element count read after the
// addition (its storage count, unclosed.go: the package reads it unless both operands have fewer
// than 64 elements and the product of their counts is below 512).
static int32_t add_alloc_batch(uintptr_t a, uintptr_t b, long n, int batch, _Bool numel) {
	bc_tensor *rs[64];
	int k = 0;
	for (long i = 0; i < n; i++) {
		int64_t count = 0;
		int32_t s = bc_add((const bc_tensor *)a, (const bc_tensor *)b, &rs[k]);
		if (s != BC_OK) return s;
		if (numel && bc_tensor_numel(rs[k], &count) != BC_OK) return -1;
		if (++k == batch) {
			for (int j = 0; j < k; j++) bc_tensor_free(rs[j]);
			k = 0;
		}
	}
	for (int j = 0; j < k; j++) bc_tensor_free(rs[j]);
	return BC_OK;
}

static void empty(void) {}
*/
import "C"

// AddAlloc runs n allocating additions of the tensors with handles a and b (and frees each
// result); it returns the library's status (0 for success).
func AddAlloc(a, b uintptr, n int) int32 {
	return int32(C.add_alloc(C.uintptr_t(a), C.uintptr_t(b), C.long(n)))
}

// AddAllocBatch is AddAlloc with the results freed batch (1 to 64) at a time and, when numel is
// true, each result's element count read, as the Go package calls the library.
func AddAllocBatch(a, b uintptr, n, batch int, numel bool) int32 {
	return int32(C.add_alloc_batch(C.uintptr_t(a), C.uintptr_t(b), C.long(n), C.int(batch), C._Bool(numel)))
}

// AddOut runs n additions of a and b into out.
func AddOut(a, b, out uintptr, n int) int32 {
	return int32(C.add_out(C.uintptr_t(a), C.uintptr_t(b), C.uintptr_t(out), C.long(n)))
}

// Empty is one cgo call of a C function that does nothing: the least any call from Go costs.
func Empty() { C.empty() }
