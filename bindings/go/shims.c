// The shims declared in shims.h (compiled by cgo with the package).
#include <stdlib.h>
#include <string.h>

#include "shims.h"

#define H(h) ((bc_tensor *)(h))

#ifdef GOBC_FAULT
/* -tags bcfault (tests): the shims' own allocations fail on request. */
static int fail_countdown; /* allocations until the one that fails; 0: none fails */
void gobc_fault_malloc(int n) { fail_countdown = n; }
static void *shim_malloc(size_t size) {
	if (fail_countdown > 0 && --fail_countdown == 0) return NULL;
	return malloc(size);
}
#else
#define shim_malloc malloc
#endif

static gobc_err *capture(void) {
	size_t n = bc_last_error_message(NULL, 0);
	gobc_err *e = shim_malloc(sizeof(gobc_err) + n + 1);
	if (e == NULL) return NULL;
	e->msg = (char *)(e + 1);
	e->msg_len = bc_last_error_message(e->msg, n + 1);
	if (e->msg_len > n) e->msg_len = n;
	/* These only read the record and cannot fail here (no NULL, room for BC_MAX_NDIM sizes); if
	 * one did, the error would carry no details rather than stale ones. */
	if (bc_last_error_info(&e->info) != BC_OK) memset(&e->info, 0, sizeof e->info);
	if (bc_last_error_shape(0, e->shape_a, BC_MAX_NDIM, &e->ndim_a) != BC_OK) e->ndim_a = -1;
	if (bc_last_error_shape(1, e->shape_b, BC_MAX_NDIM, &e->ndim_b) != BC_OK) e->ndim_b = -1;
	return e;
}

/* The failure of a hot shim: the captured record with its status, or, with no memory to capture
 * it, a static record of the status alone (msg NULL). */
#define BARE(s) [s] = {.status = s}
static gobc_err bare[16] = {BARE(0),  BARE(1),  BARE(2),  BARE(3),  BARE(4),  BARE(5),
                            BARE(6),  BARE(7),  BARE(8),  BARE(9),  BARE(10), BARE(11),
                            BARE(12), BARE(13), BARE(14), BARE(15)};
static gobc_err *failed(int32_t status) {
	gobc_err *e = capture();
	if (e != NULL) {
		e->status = status;
		return e;
	}
	return &bare[status >= 0 && status < 16 ? status : BC_ERR_INTERNAL];
}

static gobc_res done(int32_t status, bc_tensor *out, int64_t val) {
	gobc_res r;
	r.status = status;
	r.out = (uintptr_t)out;
	r.val = val;
	r.nbytes = 0;
	r.err = status == BC_OK ? NULL : capture();
	return r;
}

/* The bytes of a new tensor's own storage: it is dense, so its elements times their size. Below
 * 512 elements the size is taken as 8 bytes, the largest: that spares the smallest results, whose
 * metadata the count leaves out anyway, a second query that would cost them a tenth of a call. */
static int64_t storage_bytes(const bc_tensor *t) {
	int64_t n = 0;
	int32_t d = 0;
	if (bc_tensor_numel(t, &n) != BC_OK) return 0;
	if (n < 512) return n * 8;
	if (bc_tensor_dtype(t, &d) != BC_OK) return 0;
	return n * (int64_t)bc_dtype_size(d);
}

/* The outcome of a call that allocates new storage for its result. */
static gobc_res made(int32_t status, bc_tensor *out) {
	gobc_res r = done(status, out, 0);
	if (status == BC_OK && out != NULL) r.nbytes = storage_bytes(out);
	return r;
}

/* The end of t's storage (NULL if it cannot be read): two tensors share storage exactly when
 * their storage ends at the same address. */
static const char *storage_end(const bc_tensor *t) {
	void *data = NULL;
	size_t n = 0;
	if (bc_tensor_data(t, &data, &n, NULL) != BC_OK) return NULL;
	return (const char *)data + n;
}

/* The outcome of a call whose result is a view of t when the strides allow, else a copy
 * (reshape, flatten), or t itself when nothing is summed (sum_to_size). */
static gobc_res made_or_view(int32_t status, uintptr_t t, bc_tensor *out) {
	gobc_res r = done(status, out, 0);
	if (status == BC_OK && storage_end(out) != storage_end(H(t))) r.nbytes = storage_bytes(out);
	return r;
}

static gobc_dims dims_done(int32_t status, size_t ndim, gobc_dims *d) {
	d->status = status;
	d->ndim = ndim;
	d->err = status == BC_OK ? NULL : capture();
	return *d;
}

void gobc_free(uintptr_t t) { bc_tensor_free(H(t)); }

void gobc_free_n(const uintptr_t *hs, size_t n) {
	for (size_t i = 0; i < n; i++) bc_tensor_free(H(hs[i]));
}

bool gobc_is_live(uintptr_t t) { return bc_tensor_is_live(H(t)); }

gobc_res gobc_binary(int32_t op, uintptr_t a, uintptr_t b) {
	bc_tensor *o = NULL;
	int32_t s = bc_binary(op, H(a), H(b), &o);
	return made(s, o);
}

gobc_made gobc_binary_made(int32_t op, uintptr_t a, uintptr_t b, uintptr_t dead) {
	bc_tensor *o = NULL;
	if (dead != 0) bc_tensor_free(H(dead));
	int32_t s = bc_binary(op, H(a), H(b), &o);
	gobc_made r = {(uintptr_t)o, NULL};
	if (s != BC_OK) {
		r.out = 0;
		r.err = failed(s);
	}
	return r;
}

gobc_err *gobc_binary_inplace_err(int32_t op, uintptr_t target, uintptr_t other) {
	int32_t s = bc_binary_inplace(op, H(target), H(other));
	return s == BC_OK ? NULL : failed(s);
}

gobc_err *gobc_binary_out_err(int32_t op, uintptr_t a, uintptr_t b, uintptr_t out) {
	int32_t s = bc_binary_out(op, H(a), H(b), H(out));
	return s == BC_OK ? NULL : failed(s);
}

gobc_res gobc_binary_scalar(int form, int32_t op, uintptr_t t, bc_scalar s) {
	bc_tensor *o = NULL;
	int32_t st;
	switch (form) {
	case 0: st = bc_binary_scalar(op, H(t), s, &o); break;
	case 1: st = bc_binary_rscalar(op, s, H(t), &o); break;
	default: st = bc_binary_scalar_inplace(op, H(t), s); break;
	}
	return made(st, o);
}

gobc_res gobc_plan(int form, int32_t op, bc_scalar s, const int32_t *dtypes, const size_t *ndims,
                   const int64_t *shapes, const int64_t *strides, const bool *has_strides,
                   const int64_t *list, size_t nlist, bool keepdim, bc_plan *plan) {
	static const int operands[11] = {2, 2, 3, 1, 1, 1, 3, 4, 1, 1, 2};
	bc_geometry g[4];
	size_t at = 0;
	for (int k = 0; k < operands[form]; k++) {
		g[k].dtype = dtypes[k];
		g[k].ndim = ndims[k];
		g[k].shape = shapes + at;
		g[k].strides = has_strides[k] ? strides + at : NULL;
		at += ndims[k];
	}
	int32_t st;
	switch (form) {
	case 0: st = bc_plan_binary(op, &g[0], &g[1], plan); break;
	case 1: st = bc_plan_binary_inplace(op, &g[0], &g[1], plan); break;
	case 2: st = bc_plan_binary_out(op, &g[0], &g[1], &g[2], plan); break;
	case 3: st = bc_plan_binary_scalar(op, &g[0], s, plan); break;
	case 4: st = bc_plan_binary_rscalar(op, s, &g[0], plan); break;
	case 5: st = bc_plan_binary_scalar_inplace(op, &g[0], s, plan); break;
	case 6: st = bc_plan_where(&g[0], &g[1], &g[2], plan); break;
	case 7: st = bc_plan_where_out(&g[0], &g[1], &g[2], &g[3], plan); break;
	case 8: st = bc_plan_reduce(op, &g[0], list, nlist, keepdim, plan); break;
	case 9: st = bc_plan_sum_to_size(&g[0], list, nlist, plan); break;
	default: st = bc_plan_binary_sum_to(op, &g[0], &g[1], list, nlist, plan); break;
	}
	return done(st, NULL, 0);
}

/* The n geometries of a planner call, from Go's flattened arrays (each shape and stride list
 * ndims[k] long, one after another); NULL when n is 0 or memory is short. The caller frees it. */
static bc_geometry *geometries(size_t n, const int32_t *dtypes, const size_t *ndims,
                               const int64_t *shapes, const int64_t *strides,
                               const bool *has_strides) {
	bc_geometry *g = n ? shim_malloc(n * sizeof *g) : NULL;
	if (!g) {
		return NULL;
	}
	size_t at = 0;
	for (size_t k = 0; k < n; k++) {
		g[k].dtype = dtypes[k];
		g[k].ndim = ndims[k];
		g[k].shape = shapes + at;
		g[k].strides = has_strides[k] ? strides + at : NULL;
		at += ndims[k];
	}
	return g;
}

gobc_res gobc_plan_expr(const bc_expr_step *steps, size_t nsteps, size_t n, int into,
                        const int32_t *dtypes, const size_t *ndims, const int64_t *shapes,
                        const int64_t *strides, const bool *has_strides, bc_plan *plan) {
	bc_geometry *g = geometries(n, dtypes, ndims, shapes, strides, has_strides);
	if (n && !g) {
		/* The shim's own failure: the library's error record is not this call's. */
		gobc_res r = {BC_ERR_ALLOC, 0, 0, 0, NULL};
		return r;
	}
	size_t ninputs = n - (size_t)into;
	int32_t st = into ? bc_plan_expr_out(steps, nsteps, g, ninputs, &g[ninputs], plan)
	                  : bc_plan_expr(steps, nsteps, g, ninputs, plan);
	free(g);
	return done(st, NULL, 0);
}

gobc_res gobc_plan_expr_reduce(const bc_expr_step *steps, size_t nsteps, size_t n,
                               const int32_t *dtypes, const size_t *ndims, const int64_t *shapes,
                               const int64_t *strides, const bool *has_strides, int32_t op,
                               const int64_t *dims, size_t ndim, bool keepdim, bc_plan *plan) {
	bc_geometry *g = geometries(n, dtypes, ndims, shapes, strides, has_strides);
	if (n && !g) {
		/* The shim's own failure: the library's error record is not this call's. */
		gobc_res r = {BC_ERR_ALLOC, 0, 0, 0, NULL};
		return r;
	}
	int32_t st = bc_plan_expr_reduce(steps, nsteps, g, n, op, dims, ndim, keepdim, plan);
	free(g);
	return done(st, NULL, 0);
}

gobc_res gobc_new(int fill, int32_t dtype, const int64_t *shape, size_t ndim, double value) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (fill) {
	case 0: s = bc_tensor_empty(dtype, shape, ndim, &o); break;
	case 1: s = bc_tensor_zeros(dtype, shape, ndim, &o); break;
	case 2: s = bc_tensor_ones(dtype, shape, ndim, &o); break;
	default: s = bc_tensor_full(dtype, shape, ndim, value, &o); break;
	}
	return made(s, o);
}

gobc_res gobc_from_data(int32_t dtype, const int64_t *shape, size_t ndim, const void *data,
                        size_t nbytes) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_from_data(dtype, shape, ndim, data, nbytes, &o);
	return made(s, o);
}

gobc_res gobc_wrap(int32_t dtype, void *data, size_t nbytes, const int64_t *shape,
                   const int64_t *strides, size_t ndim, int64_t offset, void *release,
                   void *user_data) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_wrap(dtype, data, nbytes, shape, strides, ndim, offset,
	                           (bc_release_fn)release, user_data, &o);
	return done(s, o, 0);
}

gobc_res gobc_copy(int what, uintptr_t t, int32_t dtype) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (what) {
	case 0: s = bc_tensor_clone(H(t), &o); break;
	case 1: s = bc_tensor_contiguous(H(t), &o); break;
	default: s = bc_tensor_to_dtype(H(t), dtype, &o); break;
	}
	return made(s, o);
}

gobc_res gobc_query(int what, uintptr_t t) {
	int32_t s, d = 0;
	size_t n = 0;
	int64_t v = 0;
	bool b = false;
	switch (what) {
	case 0: s = bc_tensor_dtype(H(t), &d); v = d; break;
	case 1: s = bc_tensor_ndim(H(t), &n); v = (int64_t)n; break;
	case 2: s = bc_tensor_numel(H(t), &v); break;
	case 3: s = bc_tensor_offset(H(t), &v); break;
	default: s = bc_tensor_is_contiguous(H(t), &b); v = b; break;
	}
	return done(s, NULL, v);
}

gobc_dims gobc_tensor_dims(uintptr_t t, int strides) {
	gobc_dims d;
	size_t n = 0;
	int32_t s = bc_tensor_ndim(H(t), &n);
	if (s == BC_OK)
		s = strides ? bc_tensor_strides(H(t), d.dims, BC_MAX_NDIM)
		            : bc_tensor_shape(H(t), d.dims, BC_MAX_NDIM);
	return dims_done(s, n, &d);
}

gobc_res gobc_copy_to(uintptr_t t, void *buf, size_t nbytes) {
	return done(bc_tensor_copy_to(H(t), buf, nbytes), NULL, 0);
}

gobc_res gobc_view(int what, uintptr_t t, const int64_t *a, const int64_t *b, size_t ndim,
                   int64_t offset) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (what) {
	case 0: s = bc_tensor_expand(H(t), a, ndim, &o); break;
	case 1: s = bc_tensor_permute(H(t), a, ndim, &o); break;
	case 2: s = bc_tensor_as_strided(H(t), a, b, ndim, offset, &o); break;
	case 3: s = bc_tensor_broadcast_to(H(t), a, ndim, &o); break;
	case 4: s = bc_tensor_view(H(t), a, ndim, &o); break;
	default: s = bc_tensor_reshape(H(t), a, ndim, NULL, &o); break;
	}
	return what == 5 ? made_or_view(s, t, o) : done(s, o, 0);
}

gobc_res gobc_dim_view(int what, uintptr_t t, int64_t d0, int64_t d1) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (what) {
	case 0: s = bc_tensor_unsqueeze(H(t), d0, &o); break;
	case 1: s = bc_tensor_squeeze(H(t), d0, &o); break;
	case 2: s = bc_tensor_squeeze_all(H(t), &o); break;
	default: s = bc_tensor_flatten(H(t), d0, d1, NULL, &o); break;
	}
	return what == 3 ? made_or_view(s, t, o) : done(s, o, 0);
}

gobc_res gobc_format(uintptr_t t, size_t max, char **text) {
	size_t n = 0;
	*text = NULL;
	int32_t s = bc_tensor_format(H(t), NULL, 0, &n);
	if (s != BC_OK || n > max) return done(s, NULL, (int64_t)n);
	char *buf = shim_malloc(n + 1);
	if (buf == NULL) {
		/* The shim's own failure: the library's error record is not this call's. */
		gobc_res r = {BC_ERR_ALLOC, 0, 0, 0, NULL};
		return r;
	}
	s = bc_tensor_format(H(t), buf, n + 1, &n);
	if (s != BC_OK) {
		free(buf);
		buf = NULL;
	}
	*text = buf;
	return done(s, NULL, (int64_t)n);
}

gobc_res gobc_data(uintptr_t t, void **data, bool *writable) {
	size_t n = 0;
	int32_t s = bc_tensor_data(H(t), data, &n, writable);
	return done(s, NULL, (int64_t)n);
}

gobc_res gobc_at(uintptr_t t, const int64_t *idx, size_t n, void *out) {
	int64_t strides[BC_MAX_NDIM];
	int32_t dtype = 0;
	void *data = NULL;
	int32_t s = bc_tensor_dtype(H(t), &dtype);
	if (s == BC_OK) s = bc_tensor_strides(H(t), strides, BC_MAX_NDIM);
	if (s == BC_OK) s = bc_tensor_data(H(t), &data, NULL, NULL);
	if (s == BC_OK) {
		size_t size = bc_dtype_size(dtype);
		int64_t at = 0;
		for (size_t i = 0; i < n; i++) at += idx[i] * strides[i];
		memcpy(out, (const char *)data + at * (int64_t)size, size);
	}
	return done(s, NULL, 0);
}

gobc_res gobc_dlpack(int what, uintptr_t t, void *m, void **out) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (what) {
	case 0: s = bc_tensor_to_dlpack_versioned(H(t), (DLManagedTensorVersioned **)out); break;
	case 1: s = bc_tensor_to_dlpack(H(t), (DLManagedTensor **)out); break;
	case 2: s = bc_tensor_from_dlpack_versioned(m, &o); break;
	default: s = bc_tensor_from_dlpack(m, &o); break;
	}
	return done(s, o, 0);
}

gobc_res gobc_expand_as(uintptr_t t, uintptr_t other) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_expand_as(H(t), H(other), &o);
	return done(s, o, 0);
}

gobc_res gobc_transpose(uintptr_t t, int64_t dim0, int64_t dim1) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_transpose(H(t), dim0, dim1, &o);
	return done(s, o, 0);
}

gobc_res gobc_slice(uintptr_t t, int64_t dim, int64_t start, int64_t stop, int64_t step) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_slice(H(t), dim, start, stop, step, &o);
	return done(s, o, 0);
}

// Handles cross as uintptr_t; a bc_tensor * has the same representation.
gobc_res gobc_broadcast_tensors(const uintptr_t *ins, size_t n, uintptr_t *outs) {
	int32_t s = bc_tensor_broadcast_tensors((const bc_tensor *const *)ins, n, (bc_tensor **)outs);
	return done(s, NULL, 0);
}

gobc_res gobc_where(uintptr_t cond, uintptr_t a, uintptr_t b) {
	bc_tensor *o = NULL;
	int32_t s = bc_where(H(cond), H(a), H(b), &o);
	return made(s, o);
}

gobc_res gobc_where_out(uintptr_t cond, uintptr_t a, uintptr_t b, uintptr_t out) {
	return done(bc_where_out(H(cond), H(a), H(b), H(out)), NULL, 0);
}

gobc_res gobc_expr_eval(const bc_expr_step *steps, size_t nsteps, const uintptr_t *ins, size_t n,
                        int into, uintptr_t out) {
	const bc_tensor *const *inputs = (const bc_tensor *const *)ins;
	if (into) return done(bc_expr_eval_out(steps, nsteps, inputs, n, H(out)), NULL, 0);
	bc_tensor *o = NULL;
	int32_t s = bc_expr_eval(steps, nsteps, inputs, n, &o);
	return made(s, o);
}

gobc_res gobc_expr_reduce(const bc_expr_step *steps, size_t nsteps, const uintptr_t *ins, size_t n,
                          int32_t op, const int64_t *dims, size_t ndims, bool keepdim) {
	bc_tensor *o = NULL;
	int32_t s = bc_expr_reduce(steps, nsteps, (const bc_tensor *const *)ins, n, op, dims, ndims,
	                           keepdim, &o);
	return made(s, o);
}

gobc_dims gobc_shape_broadcast(const int64_t *a, size_t an, const int64_t *b, size_t bn) {
	gobc_dims d;
	size_t n = 0;
	int32_t s = bc_shape_broadcast(a, an, b, bn, d.dims, BC_MAX_NDIM, &n);
	return dims_done(s, n, &d);
}

// The pointer array bc_shape_broadcast_n takes is built here, in C memory, for the call only.
gobc_dims gobc_shape_broadcast_n(const int64_t *flat, const size_t *ndims, size_t n) {
	gobc_dims d;
	size_t nd = 0;
	const int64_t **shapes = shim_malloc((n ? n : 1) * sizeof *shapes);
	if (shapes == NULL) {
		d.status = BC_ERR_ALLOC;
		d.ndim = 0;
		d.err = NULL;
		return d;
	}
	for (size_t i = 0, at = 0; i < n; at += ndims[i], i++) shapes[i] = ndims[i] ? flat + at : NULL;
	int32_t s = bc_shape_broadcast_n(shapes, ndims, n, d.dims, BC_MAX_NDIM, &nd);
	free(shapes);
	return dims_done(s, nd, &d);
}

gobc_res gobc_shape_is_broadcastable(const int64_t *a, size_t an, const int64_t *b, size_t bn) {
	bool yes = false;
	int32_t s = bc_shape_is_broadcastable(a, an, b, bn, &yes);
	return done(s, NULL, yes);
}

// goBcWarning is the exported Go trampoline (warning.go). The adapter casts away const: cgo
// exports take char *.
extern void goBcWarning(char *message);

static void warning_adapter(void *user_data, const char *message) {
	(void)user_data;
	goBcWarning((char *)message);
}

int32_t gobc_set_warning_handler(int go) { return bc_set_warning_handler(go ? warning_adapter : NULL, NULL); }

gobc_res gobc_reduce(int32_t op, uintptr_t t, const int64_t *dims, size_t ndims, bool keepdim) {
	bc_tensor *o = NULL;
	int32_t s = bc_reduce(op, H(t), dims, ndims, keepdim, &o);
	return made(s, o);
}

gobc_res gobc_sum_to_size(uintptr_t t, const int64_t *shape, size_t ndim) {
	bc_tensor *o = NULL;
	int32_t s = bc_tensor_sum_to_size(H(t), shape, ndim, &o);
	return made_or_view(s, t, o);
}

gobc_res gobc_binary_sum_to(int32_t op, uintptr_t a, uintptr_t b, const int64_t *shape,
                            size_t ndim) {
	bc_tensor *o = NULL;
	int32_t s = bc_binary_sum_to(op, H(a), H(b), shape, ndim, &o);
	return made(s, o);
}

gobc_res gobc_unary(int form, int32_t op, uintptr_t x, uintptr_t out) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (form) {
	case 0: s = bc_unary(op, H(x), &o); break;
	case 1: s = bc_unary_inplace(op, H(x)); break;
	default: s = bc_unary_out(op, H(x), H(out)); break;
	}
	return made(s, o);
}

gobc_res gobc_var_std(bool is_std, uintptr_t t, const int64_t *dims, size_t ndims, double correction, bool keepdim) {
	bc_tensor *o = NULL;
	int32_t s = is_std ? bc_std(H(t), dims, ndims, correction, keepdim, &o)
	                   : bc_var(H(t), dims, ndims, correction, keepdim, &o);
	return made(s, o);
}

gobc_res gobc_reduce_more(int which, uintptr_t t, const int64_t *dims, size_t ndims, bool keepdim) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (which) {
	case 0: s = bc_all(H(t), dims, ndims, keepdim, &o); break;
	case 1: s = bc_any(H(t), dims, ndims, keepdim, &o); break;
	case 2: s = bc_logsumexp(H(t), dims, ndims, keepdim, &o); break;
	case 3: s = bc_nansum(H(t), dims, ndims, keepdim, &o); break;
	default: s = bc_nanmean(H(t), dims, ndims, keepdim, &o); break;
	}
	return made(s, o);
}

gobc_res gobc_arg_extreme(bool is_max, uintptr_t t, const int64_t *dim, bool keepdim) {
	bc_tensor *o = NULL;
	int32_t s = is_max ? bc_argmax(H(t), dim, keepdim, &o) : bc_argmin(H(t), dim, keepdim, &o);
	return made(s, o);
}

gobc_res gobc_ternary(int form, int which, uintptr_t input, uintptr_t b, uintptr_t c, bc_scalar value, uintptr_t out) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (which * 3 + form) {
	case 0: s = bc_lerp(H(input), H(b), H(c), &o); break;
	case 1: s = bc_lerp_inplace(H(input), H(b), H(c)); break;
	case 2: s = bc_lerp_out(H(input), H(b), H(c), H(out)); break;
	case 3: s = bc_addcmul(H(input), H(b), H(c), value, &o); break;
	case 4: s = bc_addcmul_inplace(H(input), H(b), H(c), value); break;
	case 5: s = bc_addcmul_out(H(input), H(b), H(c), value, H(out)); break;
	case 6: s = bc_addcdiv(H(input), H(b), H(c), value, &o); break;
	case 7: s = bc_addcdiv_inplace(H(input), H(b), H(c), value); break;
	case 8: s = bc_addcdiv_out(H(input), H(b), H(c), value, H(out)); break;
	case 9: s = bc_clamp(H(input), H(b), H(c), &o); break;
	case 10: s = bc_clamp_inplace(H(input), H(b), H(c)); break;
	default: s = bc_clamp_out(H(input), H(b), H(c), H(out)); break;
	}
	return made(s, o);
}

gobc_res gobc_lerp_scalar(int form, uintptr_t input, uintptr_t end, bc_scalar weight, uintptr_t out) {
	bc_tensor *o = NULL;
	int32_t s;
	switch (form) {
	case 0: s = bc_lerp_scalar(H(input), H(end), weight, &o); break;
	case 1: s = bc_lerp_scalar_inplace(H(input), H(end), weight); break;
	default: s = bc_lerp_scalar_out(H(input), H(end), weight, H(out)); break;
	}
	return made(s, o);
}

gobc_res gobc_clamp_scalar(int form, uintptr_t input, bool has_min, bc_scalar min, bool has_max, bc_scalar max, uintptr_t out) {
	bc_tensor *o = NULL;
	const bc_scalar *lo = has_min ? &min : NULL, *hi = has_max ? &max : NULL;
	int32_t s;
	switch (form) {
	case 0: s = bc_clamp_scalar(H(input), lo, hi, &o); break;
	case 1: s = bc_clamp_scalar_inplace(H(input), lo, hi); break;
	default: s = bc_clamp_scalar_out(H(input), lo, hi, H(out)); break;
	}
	return made(s, o);
}
