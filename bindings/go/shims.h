// The C side of the Go package: one shim per kind of call. Every shim takes handles as uintptr_t
// (a bc_tensor * is a token, not an address, and may fall inside the Go heap's address range, so
// Go never holds one in a pointer type) and returns its result by value, so that a call on handles
// alone makes no Go pointer escape. On failure a shim captures the status, bc_error_info, the
// message and both shapes before it returns, in the same cgo call as the failing function: the
// last error is per OS thread, and a goroutine may move to another thread between two cgo calls.
#ifndef GOBC_SHIMS_H
#define GOBC_SHIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broadcast.h"

// A failure as data, malloc'd by the shim (the message follows the struct in the same block);
// the Go side frees it. (The hot shims below return one with only status set, and msg NULL, when
// there was no memory to capture the failure: a static record, not to be freed.)
typedef struct {
	int32_t status;
	bc_error_info info;
	int64_t ndim_a, ndim_b;
	int64_t shape_a[BC_MAX_NDIM], shape_b[BC_MAX_NDIM];
	size_t msg_len;
	char *msg;
} gobc_err;

// A call's outcome: the status, a new handle or a number, the bytes of new storage the library
// allocated for the new handle (0 for a view, which shares its tensor's), and the captured
// failure (NULL on success, and also when there was no memory to capture it).
typedef struct {
	int32_t status;
	uintptr_t out;
	int64_t val;
	int64_t nbytes;
	gobc_err *err;
} gobc_res;

// The outcome of a call that yields dimensions (shapes, strides).
typedef struct {
	int32_t status;
	size_t ndim;
	int64_t dims[BC_MAX_NDIM];
	gobc_err *err;
} gobc_dims;

// The outcome of a hot call that makes a new handle, in two words, which C returns in registers:
// the new handle (0 on failure) and the failure (NULL on success). (gobc_res is returned through
// memory, and copying it into the cgo call's frame stalled each call on its stores.)
typedef struct {
	uintptr_t out;
	gobc_err *err;
} gobc_made;

void gobc_free(uintptr_t t);
// Frees the n handles at hs, in one cgo call (the young list's closed tensors, young.go).
void gobc_free_n(const uintptr_t *hs, size_t n);
bool gobc_is_live(uintptr_t t);

gobc_res gobc_binary(int32_t op, uintptr_t a, uintptr_t b);
// gobc_binary without the storage bytes (the caller knows a bound of them); first it frees dead
// (a closed tensor's handle the young ring hands over, young.go; 0 for none), whatever the
// operation's outcome.
gobc_made gobc_binary_made(int32_t op, uintptr_t a, uintptr_t b, uintptr_t dead);
// In place and into out: the failure alone, NULL on success.
gobc_err *gobc_binary_inplace_err(int32_t op, uintptr_t target, uintptr_t other);
gobc_err *gobc_binary_out_err(int32_t op, uintptr_t a, uintptr_t b, uintptr_t out);

// With a number: form 0 is t op s, 1 is s op t, 2 is t op= s (no new handle).
gobc_res gobc_binary_scalar(int form, int32_t op, uintptr_t t, bc_scalar s);

// The planner: form 0 a new result (operands a, b), 1 in place (target, other), 2 into out (a,
// b, out); with the number s: 3 t op s, 4 s op t, 5 t op= s (operand t); 6 where (cond, a, b),
// 7 where into out (cond, a, b, out); 8 the reduction `op` (t) over the dims `list` (nlist of
// them) with keepdim, 9 sum_to_size (t) to the shape `list`, 10 binary_sum_to (a, b) to the shape
// `list`. Operand k has dtypes[k] and ndims[k] sizes, taken in turn from `shapes`; its strides
// likewise from `strides` when has_strides[k], else it is row-major. (The geometries are built
// here: Go memory passed to C may hold no Go pointers.)
gobc_res gobc_plan(int form, int32_t op, bc_scalar s, const int32_t *dtypes, const size_t *ndims,
                   const int64_t *shapes, const int64_t *strides, const bool *has_strides,
                   const int64_t *list, size_t nlist, bool keepdim, bc_plan *plan);

// bc_plan_expr over n geometries (into == 0), or bc_plan_expr_out (into == 1: the last of the n is
// out); the geometries as for gobc_plan.
/* bc_plan_expr_reduce, the n input geometries given as gobc_plan_expr takes them. */
gobc_res gobc_plan_expr_reduce(const bc_expr_step *steps, size_t nsteps, size_t n,
                               const int32_t *dtypes, const size_t *ndims, const int64_t *shapes,
                               const int64_t *strides, const bool *has_strides, int32_t op,
                               const int64_t *dims, size_t ndim, bool keepdim, bc_plan *plan);
gobc_res gobc_plan_expr(const bc_expr_step *steps, size_t nsteps, size_t n, int into,
                        const int32_t *dtypes, const size_t *ndims, const int64_t *shapes,
                        const int64_t *strides, const bool *has_strides, bc_plan *plan);

// fill: 0 empty, 1 zeros, 2 ones, 3 full(value).
gobc_res gobc_new(int fill, int32_t dtype, const int64_t *shape, size_t ndim, double value);
gobc_res gobc_from_data(int32_t dtype, const int64_t *shape, size_t ndim, const void *data,
                        size_t nbytes);
// what: 0 clone, 1 contiguous, 2 to_dtype(dtype).
gobc_res gobc_copy(int what, uintptr_t t, int32_t dtype);
// what: 0 dtype, 1 ndim, 2 numel, 3 offset, 4 is_contiguous.
gobc_res gobc_query(int what, uintptr_t t);
// Sizes (strides 0) or strides (1).
gobc_dims gobc_tensor_dims(uintptr_t t, int strides);
// bc_tensor_wrap, with release given as a plain pointer (NULL for none).
gobc_res gobc_wrap(int32_t dtype, void *data, size_t nbytes, const int64_t *shape,
                   const int64_t *strides, size_t ndim, int64_t offset, void *release,
                   void *user_data);
gobc_res gobc_copy_to(uintptr_t t, void *buf, size_t nbytes);

// what: 0 expand(a), 1 permute(a), 2 as_strided(a, b, offset), 3 broadcast_to(a), 4 view(a),
// 5 reshape(a).
gobc_res gobc_view(int what, uintptr_t t, const int64_t *a, const int64_t *b, size_t ndim,
                   int64_t offset);
// what: 0 unsqueeze(d0), 1 squeeze(d0), 2 squeeze_all, 3 flatten(d0, d1).
gobc_res gobc_dim_view(int what, uintptr_t t, int64_t d0, int64_t d1);
gobc_res gobc_expand_as(uintptr_t t, uintptr_t other);
// bc_tensor_format: val is the text's length; *text is a malloc'd copy (the caller frees it)
// when that length is at most max, else NULL.
gobc_res gobc_format(uintptr_t t, size_t max, char **text);
// bc_tensor_data: *data, and val is nbytes; *writable.
gobc_res gobc_data(uintptr_t t, void **data, bool *writable);
// Copies the element at idx (n indices, checked by the caller against the shape) into out.
gobc_res gobc_at(uintptr_t t, const int64_t *idx, size_t n, void *out);
// DLPack: what 0 bc_tensor_to_dlpack_versioned, 1 bc_tensor_to_dlpack (*m gets the struct);
// 2 bc_tensor_from_dlpack_versioned, 3 bc_tensor_from_dlpack (of m).
gobc_res gobc_dlpack(int what, uintptr_t t, void *m, void **out);
gobc_res gobc_transpose(uintptr_t t, int64_t dim0, int64_t dim1);
gobc_res gobc_slice(uintptr_t t, int64_t dim, int64_t start, int64_t stop, int64_t step);
gobc_res gobc_broadcast_tensors(const uintptr_t *ins, size_t n, uintptr_t *outs);

gobc_res gobc_where(uintptr_t cond, uintptr_t a, uintptr_t b);
gobc_res gobc_where_out(uintptr_t cond, uintptr_t a, uintptr_t b, uintptr_t out);
// bc_expr_eval (into == 0) or bc_expr_eval_out into out.
gobc_res gobc_expr_eval(const bc_expr_step *steps, size_t nsteps, const uintptr_t *ins, size_t n,
                        int into, uintptr_t out);
/* bc_expr_reduce: the reduction op over dims (NULL, 0 for all) of the expression's value. */
gobc_res gobc_expr_reduce(const bc_expr_step *steps, size_t nsteps, const uintptr_t *ins, size_t n,
                          int32_t op, const int64_t *dims, size_t ndims, bool keepdim);

gobc_dims gobc_shape_broadcast(const int64_t *a, size_t an, const int64_t *b, size_t bn);
// n shapes as one flat array of sizes plus their lengths.
gobc_dims gobc_shape_broadcast_n(const int64_t *flat, const size_t *ndims, size_t n);
gobc_res gobc_shape_is_broadcastable(const int64_t *a, size_t an, const int64_t *b, size_t bn);

// Reductions: bc_reduce (dims as given, (NULL, 0) for all), bc_tensor_sum_to_size,
// bc_binary_sum_to.
gobc_res gobc_reduce(int32_t op, uintptr_t t, const int64_t *dims, size_t ndims, bool keepdim);
gobc_res gobc_sum_to_size(uintptr_t t, const int64_t *shape, size_t ndim);
gobc_res gobc_binary_sum_to(int32_t op, uintptr_t a, uintptr_t b, const int64_t *shape,
                            size_t ndim);

// Installs the Go warning handler (go != 0) or restores the library's default.
int32_t gobc_set_warning_handler(int go); /* BC_OK, always */

#ifdef GOBC_FAULT
// -tags bcfault (tests): the n-th allocation of a shim from now on fails (0: none).
void gobc_fault_malloc(int n);
#endif

// Unary operations; form 0: new, 1: in place, 2: into out.
gobc_res gobc_unary(int form, int32_t op, uintptr_t x, uintptr_t out);
/* var (std when is_std) over dims. */
gobc_res gobc_var_std(bool is_std, uintptr_t t, const int64_t *dims, size_t ndims, double correction, bool keepdim);
/* which: 0 all, 1 any, 2 logsumexp, 3 nansum, 4 nanmean; dims NULL: every dimension. */
gobc_res gobc_reduce_more(int which, uintptr_t t, const int64_t *dims, size_t ndims, bool keepdim);
/* argmax (argmin unless is_max); dim NULL: the flattened input. */
gobc_res gobc_arg_extreme(bool is_max, uintptr_t t, const int64_t *dim, bool keepdim);
/* Three-operand operations; form as for gobc_unary. which: 0 lerp, 1 addcmul, 2 addcdiv, 3 clamp. */
gobc_res gobc_ternary(int form, int which, uintptr_t input, uintptr_t b, uintptr_t c, bc_scalar value, uintptr_t out);
/* lerp with a number weight. */
gobc_res gobc_lerp_scalar(int form, uintptr_t input, uintptr_t end, bc_scalar weight, uintptr_t out);
/* clamp with number bounds (has_min / has_max false: none). */
gobc_res gobc_clamp_scalar(int form, uintptr_t input, bool has_min, bc_scalar min, bool has_max, bc_scalar max, uintptr_t out);

#endif
