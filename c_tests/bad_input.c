/*
 * bad_input.c: ways a caller can hold the C API wrong that need more than the boundary checks,
 * and the contract's answer to each. NULL in every pointer position of every function, and freed,
 * forged and stale handles in every handle position, are checked for every export by the contract
 * test (c_tests/contract.c, generated from the header); this file keeps the rest:
 *
 *  - the documented (NULL, 0) empty cases, which are valid;
 *  - unknown dtype / op codes (BC_ERR_INVALID_ARG), negative sizes, size products that overflow
 *    int64 (BC_ERR_OVERFLOW), an allocation far too large (BC_ERR_ALLOC, and the process goes on);
 *  - buffers that are too small (BC_ERR_BUFFER_TOO_SMALL, the buffer left alone);
 *  - the last-error API (truncation, (NULL, 0) length query, errno-like lifetime), bc_status_str;
 *  - refused in-place / out= operations (shape, dtype, overlap) leave the written-to data unchanged;
 *  - bc_tensor_wrap bounds checks, and the release callback: never on failure, exactly once when
 *    the last view of the memory is freed;
 *  - the version macros agree with bc_version();
 *  - a panic inside the library (BC_ERR_INTERNAL, the library stays usable), the last error being
 *    per thread, and bc_tensor_broadcast_tensors with one array as input and output.
 *
 * The contract is README.md ("Ownership and errors") and the header's comments; the texts come from
 * docs/semantics.md.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads, for the per-thread last-error test */
#include "check.h"

#include <pthread.h>

#if !defined(BC_VERSION_MAJOR) || !defined(BC_VERSION_MINOR) || !defined(BC_VERSION_PATCH) ||     \
    !defined(BC_VERSION_STRING)
#error "include/broadcast.h must define BC_VERSION_MAJOR, _MINOR, _PATCH and _STRING"
#endif

/* Under AddressSanitizer, let malloc return NULL for the deliberately huge allocations below
 * instead of aborting the process: the library must turn that into BC_ERR_ALLOC. An ordinary
 * function (never called) in a build without ASan. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

typedef int32_t (*inplace_fn)(bc_tensor *, const bc_tensor *);
typedef int32_t (*outop_fn)(const bc_tensor *, const bc_tensor *, bc_tensor *);
typedef int32_t (*ctor_fn)(int32_t, const int64_t *, size_t, bc_tensor **);

static const inplace_fn INPLACE_OPS[] = {bc_add_inplace, bc_sub_inplace, bc_mul_inplace, bc_div_inplace};
static const outop_fn OUT_OPS[] = {bc_add_out, bc_sub_out, bc_mul_out, bc_div_out};
static const ctor_fn CTORS[] = {bc_tensor_empty, bc_tensor_zeros, bc_tensor_ones};
static const char *const CTOR_NAMES[] = {"empty", "zeros", "ones"};

/* Release-callback bookkeeping. */
typedef struct {
    int calls;
    void *last_user_data;
} release_log;

static void on_release(void *user_data) {
    release_log *log = (release_log *)user_data;
    log->calls++;
    log->last_user_data = user_data;
}

/* A small float32 tensor of the given shape holding 0, 1, 2, ... */
static bc_tensor *arange_f32(const int64_t *shape, size_t ndim) {
    size_t n = 1;
    for (size_t i = 0; i < ndim; i++) n *= (size_t)shape[i];
    float *d = malloc((n ? n : 1) * sizeof(float));
    if (!d) return NULL;
    fill_arange(d, n, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, ndim, d, n);
    free(d);
    return t;
}

/* ============================================================================================== */
/* Errors, status strings, version                                                                 */
/* ============================================================================================== */

static void test_status_str_every_code(void) {
    const char *seen[13];
    for (int32_t code = 0; code <= 12; code++) {
        const char *s = bc_status_str(code);
        CHECK(s != NULL);
        if (!s) continue;
        CHECK(s[0] != '\0');
        if (strcmp(s, "unknown status") == 0) {
            CHECK(strcmp(s, "unknown status") != 0);
            printf("        code %d has no name\n", (int)code);
        }
        seen[code] = s;
        for (int32_t j = 0; j < code; j++) {
            if (seen[j] && strcmp(seen[j], s) == 0) {
                CHECK(strcmp(seen[j], s) != 0);
                printf("        codes %d and %d share the text \"%s\"\n", (int)j, (int)code, s);
            }
        }
    }
    const int32_t unknown[] = {-1, 13, 14, 100, 7000, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(unknown); i++) CHECK_STR_EQ(bc_status_str(unknown[i]), "unknown status");
    /* the named constants have their fixed values */
    CHECK_EQ_INT(BC_OK, 0);
    CHECK_EQ_INT(BC_ERR_NULL_ARG, 1);
    CHECK_EQ_INT(BC_ERR_INVALID_ARG, 2);
    CHECK_EQ_INT(BC_ERR_SHAPE, 3);
    CHECK_EQ_INT(BC_ERR_DTYPE, 4);
    CHECK_EQ_INT(BC_ERR_OVERLAP, 5);
    CHECK_EQ_INT(BC_ERR_OVERFLOW, 6);
    CHECK_EQ_INT(BC_ERR_ALLOC, 7);
    CHECK_EQ_INT(BC_ERR_BUFFER_TOO_SMALL, 8);
    CHECK_EQ_INT(BC_ERR_READ_ONLY, 12);
    CHECK_STR_EQ(bc_status_str(BC_ERR_READ_ONLY), "BC_ERR_READ_ONLY: the tensor is read-only");
    CHECK_EQ_INT(BC_ERR_INTERNAL, 9);
    CHECK_EQ_INT(BC_ERR_INVALID_HANDLE, 10);
    CHECK_EQ_INT(BC_ERR_VALUE, 11);
}

static void test_version_macros_match_bc_version(void) {
    const char *v = bc_version();
    CHECK(v != NULL);
    CHECK_STR_EQ(v, BC_VERSION_STRING);
    char composed[64];
    snprintf(composed, sizeof composed, "%d.%d.%d", (int)BC_VERSION_MAJOR, (int)BC_VERSION_MINOR,
             (int)BC_VERSION_PATCH);
    CHECK_STR_EQ(composed, BC_VERSION_STRING);
    CHECK_STR_EQ(v, composed);
    CHECK(bc_version() == v || strcmp(bc_version(), v) == 0); /* stable */
}

static void test_last_error_message_api(void) {
    bc_last_error_clear();
    CHECK_EQ_INT(bc_last_error_status(), 0);
    CHECK_EQ_SIZE(bc_last_error_message(NULL, 0), 0);
    char small[8];
    memset(small, 'x', sizeof small);
    CHECK_EQ_SIZE(bc_last_error_message(small, sizeof small), 0);
    CHECK(small[0] == '\0');

    /* provoke a failure with a long, known message */
    const int64_t a[] = {5, 2, 4, 1}, b[] = {3, 1, 1};
    int64_t out[4];
    size_t nd = 0;
    CHECK_STATUS(bc_shape_broadcast(a, 4, b, 3, out, 4, &nd), BC_ERR_SHAPE);
    const char *full = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1";
    size_t len = strlen(full);
    CHECK_EQ_INT(bc_last_error_status(), BC_ERR_SHAPE);

    /* (NULL, 0) returns the length; (NULL, n) copies nothing and still returns it */
    CHECK_EQ_SIZE(bc_last_error_message(NULL, 0), len);
    CHECK_EQ_SIZE(bc_last_error_message(NULL, 16), len);

    /* a big enough buffer gets the whole message */
    char big[256];
    memset(big, 'x', sizeof big);
    CHECK_EQ_SIZE(bc_last_error_message(big, sizeof big), len);
    CHECK_STR_EQ(big, full);

    /* exactly len+1 fits; len truncates by one */
    char exact[256];
    memset(exact, 'x', sizeof exact);
    CHECK_EQ_SIZE(bc_last_error_message(exact, len + 1), len);
    CHECK_STR_EQ(exact, full);
    memset(exact, 'x', sizeof exact);
    CHECK_EQ_SIZE(bc_last_error_message(exact, len), len);
    CHECK(exact[len - 1] == '\0');
    CHECK(strncmp(exact, full, len - 1) == 0);
    CHECK(exact[len] == 'x');

    /* truncation: at most len-1 bytes + NUL, nothing written past the buffer */
    char trunc[16];
    memset(trunc, 'x', sizeof trunc);
    CHECK_EQ_SIZE(bc_last_error_message(trunc, 8), len);
    CHECK(memcmp(trunc, full, 7) == 0);
    CHECK(trunc[7] == '\0');
    for (size_t i = 8; i < sizeof trunc; i++) CHECK(trunc[i] == 'x');

    /* a 1-byte buffer gets just the NUL */
    char one[2] = {'x', 'y'};
    CHECK_EQ_SIZE(bc_last_error_message(one, 1), len);
    CHECK(one[0] == '\0');
    CHECK(one[1] == 'y');

    /* a successful call does not clear it (errno-like) */
    bool yes = false;
    CHECK_OK(bc_shape_is_broadcastable(b, 3, b, 3, &yes));
    CHECK_LAST_ERROR(full);
    CHECK_EQ_INT(bc_last_error_status(), BC_ERR_SHAPE);

    /* a later failure replaces it */
    CHECK_STATUS(bc_tensor_ndim(NULL, &nd), BC_ERR_NULL_ARG);
    CHECK_EQ_INT(bc_last_error_status(), BC_ERR_NULL_ARG);
    CHECK(strcmp(check_last_error(), full) != 0);
    CHECK(check_last_error()[0] != '\0');

    /* clearing resets both */
    bc_last_error_clear();
    CHECK_EQ_INT(bc_last_error_status(), 0);
    CHECK_EQ_SIZE(bc_last_error_message(NULL, 0), 0);
    CHECK_LAST_ERROR("");
}

static void test_dtype_size_and_name(void) {
    static const struct {
        int32_t code;
        size_t size;
        const char *name;
    } dts[] = {
        {BC_DTYPE_BOOL, 1, "bool"},       {BC_DTYPE_UINT8, 1, "uint8"},
        {BC_DTYPE_INT8, 1, "int8"},       {BC_DTYPE_INT16, 2, "int16"},
        {BC_DTYPE_INT32, 4, "int32"},     {BC_DTYPE_INT64, 8, "int64"},
        {BC_DTYPE_FLOAT16, 2, "float16"}, {BC_DTYPE_BFLOAT16, 2, "bfloat16"},
        {BC_DTYPE_FLOAT32, 4, "float32"}, {BC_DTYPE_FLOAT64, 8, "float64"},
    };
    for (size_t i = 0; i < COUNT_OF(dts); i++) {
        CHECK_EQ_INT(dts[i].code, (int32_t)i);
        CHECK_EQ_SIZE(bc_dtype_size(dts[i].code), dts[i].size);
        CHECK_STR_EQ(bc_dtype_name(dts[i].code), dts[i].name);
    }
    const int32_t bad[] = {-1, 10, 11, 255, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        CHECK_EQ_SIZE(bc_dtype_size(bad[i]), 0);
        CHECK_STR_EQ(bc_dtype_name(bad[i]), "unknown");
    }
}

/* ============================================================================================== */
/* (NULL, 0): the documented empty cases, which are valid                                          */
/* (NULL in any other pointer position is the contract test's: c_tests/contract.c)                 */
/* ============================================================================================== */

static void test_empty_shapes(void) {
    const int64_t a[] = {2, 1}, b[] = {3};
    int64_t out[4] = {-7, -7, -7, -7};
    size_t nd = 99;
    bool yes = false;

    /* bc_shape_broadcast: (NULL, 0) is the 0-d shape */
    CHECK_OK(bc_shape_broadcast(NULL, 0, NULL, 0, NULL, 0, &nd));
    CHECK_EQ_SIZE(nd, 0);
    nd = 99;
    CHECK_OK(bc_shape_broadcast(NULL, 0, a, 2, out, 4, &nd));
    CHECK_DIMS(out, nd, 2, 1);
    nd = 99;
    CHECK_OK(bc_shape_broadcast(b, 1, NULL, 0, out, 4, &nd));
    CHECK_DIMS(out, nd, 3);

    /* bc_shape_is_broadcastable */
    CHECK_OK(bc_shape_is_broadcastable(NULL, 0, NULL, 0, &yes));
    CHECK(yes);
    yes = false;
    CHECK_OK(bc_shape_is_broadcastable(NULL, 0, a, 2, &yes));
    CHECK(yes);

    /* bc_shape_broadcast_n: shapes[2] = (NULL, 0) is 0-d */
    const int64_t *shapes[3] = {a, b, NULL};
    size_t ndims[3] = {2, 1, 0};
    nd = 99;
    CHECK_OK(bc_shape_broadcast_n(shapes, ndims, 3, out, 4, &nd));
    CHECK_DIMS(out, nd, 2, 3);
    /* no shapes at all: the 0-d shape (as torch.broadcast_shapes()) */
    nd = 99;
    CHECK_OK(bc_shape_broadcast_n(NULL, NULL, 0, NULL, 0, &nd));
    CHECK_EQ_SIZE(nd, 0);
}

static void test_empty_constructors(void) {
    float data[6] = {0};
    bc_tensor *t = SENTINEL;

    /* (NULL, 0): a 0-d tensor */
    for (size_t i = 0; i < COUNT_OF(CTORS); i++) {
        t = NULL;
        CHECK_OK(CTORS[i](BC_DTYPE_FLOAT32, NULL, 0, &t));
        size_t nd = 99;
        int64_t numel = -1;
        CHECK_OK(bc_tensor_ndim(t, &nd));
        CHECK_OK(bc_tensor_numel(t, &numel));
        CHECK_EQ_SIZE(nd, 0);
        CHECK_EQ_INT(numel, 1);
        if (check_current_failures) printf("        (bc_tensor_%s)\n", CTOR_NAMES[i]);
        bc_tensor_free(t);
    }
    t = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, NULL, 0, 2.5, &t));
    CHECK_SHAPE0(t);
    CHECK_F32(t, 2.5f);
    bc_tensor_free(t);

    /* bc_tensor_from_data: data may be NULL iff nbytes == 0: fine for an empty tensor */
    const int64_t shape[] = {2, 3};
    const int64_t empty_shape[] = {2, 0};
    t = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_FLOAT32, empty_shape, 2, NULL, 0, &t));
    CHECK_SHAPE(t, 2, 0);
    bc_tensor_free(t);
    /* ... but not for a non-empty one (nbytes must equal numel * itemsize) */
    t = SENTINEL;
    CHECK_STATUS(bc_tensor_from_data(BC_DTYPE_FLOAT32, shape, 2, NULL, 0, &t), BC_ERR_INVALID_ARG);
    CHECK(t == NULL);
    /* 0-d from (NULL, 0) shape */
    t = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_FLOAT32, NULL, 0, data, sizeof(float), &t));
    CHECK_SHAPE0(t);
    bc_tensor_free(t);

    /* bc_tensor_wrap: data NULL is fine when nbytes is 0 (an empty tensor) */
    release_log log = {0, NULL};
    const int64_t no_elems[] = {0, 3};
    const int32_t empty_dtypes[] = {BC_DTYPE_BOOL, BC_DTYPE_FLOAT32, BC_DTYPE_FLOAT64};
    for (size_t i = 0; i < COUNT_OF(empty_dtypes); i++) {
        t = SENTINEL;
        int32_t st = bc_tensor_wrap(empty_dtypes[i], NULL, 0, no_elems, NULL, 2, 0, on_release, &log, &t);
        CHECK_EQ_INT(st, BC_OK);
        if (st != BC_OK) {
            printf("        wrap(%s, NULL, 0 bytes, shape (0,3)): \"%s\"\n", bc_dtype_name(empty_dtypes[i]),
                   check_last_error());
            CHECK(t == NULL);
        } else {
            CHECK_SHAPE(t, 0, 3);
            bc_tensor_free(t);
            CHECK_EQ_INT(log.calls, 1); /* released when freed, like any wrap */
            log.calls = 0;
        }
    }
    CHECK_EQ_INT(log.calls, 0);

    /* strides NULL means row-major; release NULL is allowed */
    t = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, NULL, 2, 0, NULL, NULL, &t));
    CHECK_STRIDES(t, 3, 1);
    bc_tensor_free(t);
}

static void test_empty_accessors(void) {
    const int64_t shape[] = {2, 3};
    bc_tensor *t = arange_f32(shape, 2);

    /* (NULL, 0) for a 0-d tensor's shape/strides, and for an empty tensor's data */
    bc_tensor *scalar = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, NULL, 0, &scalar));
    CHECK_OK(bc_tensor_shape(scalar, NULL, 0));
    CHECK_OK(bc_tensor_strides(scalar, NULL, 0));
    const int64_t zero_shape[] = {0, 4};
    bc_tensor *empty = NULL;
    CHECK_OK(bc_tensor_empty(BC_DTYPE_FLOAT32, zero_shape, 2, &empty));
    CHECK_OK(bc_tensor_copy_to(empty, NULL, 0));
    /* (NULL, 0) where something must be written is a too-small buffer */
    CHECK_STATUS(bc_tensor_shape(t, NULL, 0), BC_ERR_BUFFER_TOO_SMALL);
    CHECK_STATUS(bc_tensor_copy_to(t, NULL, 0), BC_ERR_BUFFER_TOO_SMALL);

    bc_tensor_free(empty);
    bc_tensor_free(scalar);
    bc_tensor_free(t);
}

static void test_empty_views(void) {
    const int64_t shape[] = {2, 1};
    bc_tensor *t = arange_f32(shape, 2);

    /* (NULL, 0) shapes: a 0-d view */
    bc_tensor *scalar = NULL, *v = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, NULL, 0, 4.0, &scalar));
    CHECK_OK(bc_tensor_expand(scalar, NULL, 0, &v));
    CHECK_SHAPE0(v);
    bc_tensor_free(v);
    v = NULL;
    CHECK_OK(bc_tensor_permute(scalar, NULL, 0, &v));
    CHECK_SHAPE0(v);
    bc_tensor_free(v);
    v = NULL;
    CHECK_OK(bc_tensor_as_strided(t, NULL, NULL, 0, 1, &v));
    CHECK_SHAPE0(v);
    CHECK_F32(v, 1.0f);
    bc_tensor_free(v);
    bc_tensor_free(scalar);
    bc_tensor_free(t);
}

/* ============================================================================================== */
/* Invalid codes, negative sizes, overflow, huge allocations                                       */
/* ============================================================================================== */

static void test_invalid_dtype_codes(void) {
    const int64_t shape[] = {2};
    const int32_t bad[] = {-1, 10, 11, 255, INT32_MIN, INT32_MAX};
    float data[2] = {1.0f, 2.0f};
    release_log log = {0, NULL};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        for (size_t c = 0; c < COUNT_OF(CTORS); c++) {
            bc_tensor *t = SENTINEL;
            CHECK_STATUS(CTORS[c](bad[i], shape, 1, &t), BC_ERR_INVALID_ARG);
            CHECK(t == NULL);
        }
        bc_tensor *t = SENTINEL;
        CHECK_STATUS(bc_tensor_full(bad[i], shape, 1, 0.0, &t), BC_ERR_INVALID_ARG);
        CHECK(t == NULL);
        t = SENTINEL;
        CHECK_STATUS(bc_tensor_from_data(bad[i], shape, 1, data, sizeof data, &t), BC_ERR_INVALID_ARG);
        CHECK(t == NULL);
        t = SENTINEL;
        CHECK_STATUS(bc_tensor_wrap(bad[i], data, sizeof data, shape, NULL, 1, 0, on_release, &log, &t),
                     BC_ERR_INVALID_ARG);
        CHECK(t == NULL);
        bc_tensor *src = MAKE_F32(shape, 1, data, 2);
        t = SENTINEL;
        CHECK_STATUS(bc_tensor_to_dtype(src, bad[i], &t), BC_ERR_INVALID_ARG);
        CHECK(t == NULL);
        bc_tensor_free(src);
    }
    CHECK_EQ_INT(log.calls, 0);
}

static void test_invalid_op_codes(void) {
    const int64_t shape[] = {3};
    float d[3] = {1.0f, 2.0f, 3.0f};
    bc_tensor *a = MAKE_F32(shape, 1, d, 3);
    bc_tensor *b = MAKE_F32(shape, 1, d, 3);
    bc_tensor *out = MAKE_F32(shape, 1, d, 3);
    const int32_t bad[] = {-1, BC_OP_COUNT, BC_OP_COUNT + 1, 100, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < COUNT_OF(bad); i++) {
        bc_tensor *o = SENTINEL;
        CHECK_STATUS(bc_binary(bad[i], a, b, &o), BC_ERR_INVALID_ARG);
        CHECK(o == NULL);
        CHECK_STATUS(bc_binary_inplace(bad[i], a, b), BC_ERR_INVALID_ARG);
        CHECK_STATUS(bc_binary_out(bad[i], a, b, out), BC_ERR_INVALID_ARG);
    }
    CHECK_F32(a, 1.0f, 2.0f, 3.0f);
    CHECK_F32(out, 1.0f, 2.0f, 3.0f);
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor_free(out);
}

static void test_negative_sizes(void) {
    const int64_t neg[] = {2, -1};
    const int64_t neg2[] = {-3};
    const int64_t ok[] = {2, 3};
    float data[8] = {0};
    int64_t out[4];
    size_t nd = 0;
    bool yes = false;

    for (size_t c = 0; c < COUNT_OF(CTORS); c++) {
        bc_tensor *t = SENTINEL;
        CHECK_STATUS(CTORS[c](BC_DTYPE_FLOAT32, neg, 2, &t), BC_ERR_INVALID_ARG);
        CHECK(t == NULL);
    }
    bc_tensor *t = SENTINEL;
    CHECK_STATUS(bc_tensor_full(BC_DTYPE_FLOAT32, neg2, 1, 1.0, &t), BC_ERR_INVALID_ARG);
    CHECK(t == NULL);
    t = SENTINEL;
    CHECK_STATUS(bc_tensor_from_data(BC_DTYPE_FLOAT32, neg, 2, data, sizeof data, &t), BC_ERR_INVALID_ARG);
    CHECK(t == NULL);
    t = SENTINEL;
    CHECK_STATUS(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, neg, NULL, 2, 0, NULL, NULL, &t),
                 BC_ERR_INVALID_ARG);
    CHECK(t == NULL);

    CHECK_STATUS(bc_shape_broadcast(neg, 2, ok, 2, out, 4, &nd), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_shape_broadcast(ok, 2, neg2, 1, out, 4, &nd), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_shape_is_broadcastable(neg, 2, ok, 2, &yes), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_shape_is_broadcastable(ok, 2, neg2, 1, &yes), BC_ERR_INVALID_ARG);
    const int64_t *shapes[2] = {ok, neg};
    size_t ndims[2] = {2, 2};
    /* A negative size meeting a size other than 1 is a mismatch, as in PyTorch */
    CHECK_STATUS(bc_shape_broadcast_n(shapes, ndims, 2, out, 4, &nd), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("Attempting to broadcast a dimension of length -1 at -1! Mismatching argument at index 1 "
                     "had (2, -1); but expected shape should be broadcastable to [2, 3]");
    /* PyTorch's text for a negative size that would enter the common shape */
    const int64_t one[] = {1}, minus12[] = {-12};
    const int64_t *three[3] = {one, one, minus12};
    size_t three_ndims[3] = {1, 1, 1};
    CHECK_STATUS(bc_shape_broadcast_n(three, three_ndims, 3, out, 4, &nd), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("Attempting to broadcast a dimension with negative length!");

    /* expand: -1 keeps a size but is refused in a new leading dimension (a shape error) */
    const int64_t one_shape[] = {3, 1};
    bc_tensor *base = arange_f32(one_shape, 2);
    const int64_t keep[] = {-1, 4};
    bc_tensor *v = NULL;
    CHECK_OK(bc_tensor_expand(base, keep, 2, &v));
    CHECK_SHAPE(v, 3, 4);
    CHECK_STRIDES(v, 1, 0);
    bc_tensor_free(v);
    const int64_t lead[] = {-1, 3, 4};
    v = SENTINEL;
    CHECK_STATUS(bc_tensor_expand(base, lead, 3, &v), BC_ERR_SHAPE);
    CHECK(v == NULL);
    CHECK_LAST_ERROR("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0");
    bc_tensor_free(base);
}

static void test_size_overflow(void) {
    const int64_t big1[] = {INT64_MAX, 2};
    const int64_t big2[] = {(int64_t)1 << 32, (int64_t)1 << 32};
    const int64_t big3[] = {(int64_t)1 << 21, (int64_t)1 << 21, (int64_t)1 << 21}; /* 2^63 */
    const int64_t bytes_big[] = {(int64_t)1 << 62}; /* numel fits, numel * 8 bytes does not */
    const int64_t *const shapes[] = {big1, big2, big3};
    const size_t ndims[] = {2, 2, 3};

    for (size_t s = 0; s < COUNT_OF(shapes); s++) {
        for (size_t c = 0; c < COUNT_OF(CTORS); c++) {
            bc_tensor *t = SENTINEL;
            CHECK_STATUS(CTORS[c](BC_DTYPE_FLOAT32, shapes[s], ndims[s], &t), BC_ERR_OVERFLOW);
            CHECK(t == NULL);
        }
        bc_tensor *t = SENTINEL;
        CHECK_STATUS(bc_tensor_full(BC_DTYPE_UINT8, shapes[s], ndims[s], 1.0, &t), BC_ERR_OVERFLOW);
        CHECK(t == NULL);
    }
    bc_tensor *t = SENTINEL;
    CHECK_STATUS(bc_tensor_empty(BC_DTYPE_FLOAT64, bytes_big, 1, &t), BC_ERR_OVERFLOW);
    CHECK(t == NULL);
    t = SENTINEL;
    CHECK_STATUS(bc_tensor_zeros(BC_DTYPE_INT64, bytes_big, 1, &t), BC_ERR_OVERFLOW);
    CHECK(t == NULL);

    /* a view whose element count overflows */
    const int64_t one[] = {1, 1};
    bc_tensor *base = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, one, 2, &base));
    bc_tensor *v = SENTINEL;
    CHECK_STATUS(bc_tensor_expand(base, big2, 2, &v), BC_ERR_OVERFLOW);
    CHECK(v == NULL);
    bc_tensor_free(base);

    /* shapes alone never multiply: broadcasting huge sizes is fine */
    int64_t out[4];
    size_t nd = 0;
    const int64_t row2[] = {1, 2};
    CHECK_OK(bc_shape_broadcast(big1, 2, row2, 2, out, 4, &nd));
    CHECK_DIMS(out, nd, INT64_MAX, 2);
    CHECK_OK(bc_shape_broadcast(big2, 2, one, 2, out, 4, &nd));
    CHECK_DIMS(out, nd, (int64_t)1 << 32, (int64_t)1 << 32);
}

/*
 * Allocations that cannot be satisfied must fail with BC_ERR_ALLOC, and the process go on.
 *
 * Safety of this test itself: the filled constructors (zeros/ones/full) and the operation are only
 * asked for sizes beyond the 128 TiB of a 47-bit user address space, which no mapping can ever
 * provide, so even a library that maps lazily (MAP_NORESERVE) and then writes cannot exhaust the
 * machine's memory. The 8 TiB request (2^40 float64) goes only to bc_tensor_empty, which writes
 * nothing; a success there is reported as a failure (the tensor is freed at once, untouched).
 */
static void test_huge_allocation_fails_cleanly(void) {
    /* 2^45 float64 = 256 TiB */
    const int64_t impossible[] = {(int64_t)1 << 22, (int64_t)1 << 23};
    for (size_t c = 0; c < COUNT_OF(CTORS); c++) {
        bc_tensor *t = SENTINEL;
        int32_t st = CTORS[c](BC_DTYPE_FLOAT64, impossible, 2, &t);
        CHECK_EQ_INT(st, BC_ERR_ALLOC);
        if (st != BC_ERR_ALLOC) printf("        (bc_tensor_%s of 2^45 float64)\n", CTOR_NAMES[c]);
        if (st == BC_OK) bc_tensor_free(t);
        else CHECK(t == NULL);
    }
    bc_tensor *t = SENTINEL;
    int32_t st = bc_tensor_full(BC_DTYPE_FLOAT64, impossible, 2, 3.0, &t);
    CHECK_EQ_INT(st, BC_ERR_ALLOC);
    if (st == BC_OK) bc_tensor_free(t);
    else CHECK(t == NULL);

    /* 2^40 float64 = 8 TiB, more than this machine has: refused up front, not promised lazily
     * (a lazily mapped tensor would kill the process with the first writes that reach it) */
    const int64_t huge40[] = {(int64_t)1 << 20, (int64_t)1 << 20};
    t = SENTINEL;
    st = bc_tensor_empty(BC_DTYPE_FLOAT64, huge40, 2, &t);
    CHECK_EQ_INT(st, BC_ERR_ALLOC);
    if (st != BC_ERR_ALLOC) printf("        (bc_tensor_empty of 2^40 float64 = 8 TiB)\n");
    if (st == BC_OK) bc_tensor_free(t); /* never written */
    else CHECK(t == NULL);

    /* an operation whose broadcast result is too large: (2^23,1) + (1,2^23) float32 -> 256 TiB */
    const int64_t col[] = {(int64_t)1 << 23, 1};
    const int64_t row[] = {1, (int64_t)1 << 23};
    bc_tensor *a = NULL, *b = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, col, 2, &a));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, row, 2, &b));
    bc_tensor *r = SENTINEL;
    st = bc_add(a, b, &r);
    CHECK_EQ_INT(st, BC_ERR_ALLOC);
    if (st == BC_OK) bc_tensor_free(r);
    else CHECK(r == NULL);
    /* a broadcast *view* of that size is fine: nothing is allocated */
    const int64_t square[] = {(int64_t)1 << 23, (int64_t)1 << 23};
    bc_tensor *v = NULL;
    CHECK_OK(bc_tensor_expand(a, square, 2, &v));
    CHECK_STRIDES(v, 1, 0);
    bc_tensor_free(v);
    bc_tensor_free(a);
    bc_tensor_free(b);

    /* the process goes on normally */
    const int64_t small[] = {3};
    bc_tensor *ok = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, small, 1, 1.5, &ok));
    CHECK_F32(ok, 1.5f, 1.5f, 1.5f);
    bc_tensor_free(ok);
}

/* ============================================================================================== */
/* Buffers too small                                                                               */
/* ============================================================================================== */

static void test_buffers_too_small(void) {
    const int64_t shape[] = {2, 3, 4};
    bc_tensor *t = arange_f32(shape, 3);

    int64_t buf[3] = {-9, -9, -9};
    CHECK_STATUS(bc_tensor_shape(t, buf, 2), BC_ERR_BUFFER_TOO_SMALL);
    CHECK(buf[0] == -9 && buf[1] == -9 && buf[2] == -9); /* nothing written on failure */
    CHECK_STATUS(bc_tensor_strides(t, buf, 2), BC_ERR_BUFFER_TOO_SMALL);
    CHECK(buf[0] == -9 && buf[1] == -9 && buf[2] == -9);
    CHECK_OK(bc_tensor_shape(t, buf, 3));
    CHECK_DIMS(buf, 3, 2, 3, 4);
    int64_t roomy[8];
    CHECK_OK(bc_tensor_strides(t, roomy, 8));
    CHECK_DIMS(roomy, 3, 12, 4, 1);

    float data[25];
    for (size_t i = 0; i < 25; i++) data[i] = -1.0f;
    CHECK_STATUS(bc_tensor_copy_to(t, data, 24 * sizeof(float) - 1), BC_ERR_BUFFER_TOO_SMALL);
    CHECK_STATUS(bc_tensor_copy_to(t, data, 23 * sizeof(float)), BC_ERR_BUFFER_TOO_SMALL);
    bool untouched = true;
    for (size_t i = 0; i < 25; i++) untouched = untouched && data[i] == -1.0f;
    CHECK(untouched);
    CHECK_OK(bc_tensor_copy_to(t, data, sizeof data)); /* bigger than needed is fine */
    CHECK_EQ_DBL(data[23], 23.0);
    CHECK_EQ_DBL(data[24], -1.0); /* and nothing past numel is written */

    /* bc_shape_broadcast: *out_ndim is set even when out_cap is too small */
    const int64_t a[] = {5, 1, 4, 1}, b[] = {3, 1, 1};
    int64_t out[4] = {-9, -9, -9, -9};
    size_t nd = 0;
    CHECK_STATUS(bc_shape_broadcast(a, 4, b, 3, out, 3, &nd), BC_ERR_BUFFER_TOO_SMALL);
    CHECK_EQ_SIZE(nd, 4);
    CHECK(out[0] == -9 && out[1] == -9 && out[2] == -9 && out[3] == -9);
    nd = 0;
    CHECK_STATUS(bc_shape_broadcast(a, 4, b, 3, NULL, 0, &nd), BC_ERR_BUFFER_TOO_SMALL); /* size query */
    CHECK_EQ_SIZE(nd, 4);
    CHECK_OK(bc_shape_broadcast(a, 4, b, 3, out, 4, &nd));
    CHECK_DIMS(out, nd, 5, 3, 4, 1);

    const int64_t *shapes[2] = {a, b};
    size_t ndims[2] = {4, 3};
    nd = 0;
    int64_t out2[4] = {-9, -9, -9, -9};
    CHECK_STATUS(bc_shape_broadcast_n(shapes, ndims, 2, out2, 2, &nd), BC_ERR_BUFFER_TOO_SMALL);
    CHECK_EQ_SIZE(nd, 4);
    CHECK(out2[0] == -9 && out2[1] == -9);

    bc_tensor_free(t);
}

/* ============================================================================================== */
/* Refused writes leave the written-to data unchanged                                              */
/* ============================================================================================== */

static void test_refused_inplace_shape_leaves_self(void) {
    const int64_t s_shape[] = {1, 3, 1};
    const int64_t o_shape[] = {3, 1, 7};
    float buf[3] = {7.0f, 8.0f, 9.0f};
    bc_tensor *self = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, s_shape, NULL, 3, 0, NULL, NULL, &self));
    bc_tensor *other = arange_f32(o_shape, 3);
    for (size_t i = 0; i < 4; i++) {
        CHECK_STATUS(INPLACE_OPS[i](self, other), BC_ERR_SHAPE);
        CHECK_LAST_ERROR("The expanded size of the tensor (1) must match the existing size (7) at "
                         "non-singleton dimension 2.");
    }
    CHECK(buf[0] == 7.0f && buf[1] == 8.0f && buf[2] == 9.0f);
    CHECK_SHAPE(self, 1, 3, 1);

    /* other with more dimensions than self, but broadcastable: PyTorch 2.x's text */
    const int64_t s2_shape[] = {3};
    const int64_t o2_shape[] = {2, 3};
    bc_tensor *self2 = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, s2_shape, NULL, 1, 0, NULL, NULL, &self2));
    bc_tensor *other2 = arange_f32(o2_shape, 2);
    CHECK_STATUS(bc_add_inplace(self2, other2), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("output with shape [3] doesn't match the broadcast shape [2, 3]");
    CHECK(buf[0] == 7.0f && buf[1] == 8.0f && buf[2] == 9.0f);

    bc_tensor_free(self2);
    bc_tensor_free(other2);
    bc_tensor_free(self);
    bc_tensor_free(other);
}

static void test_refused_inplace_dtype_leaves_self(void) {
    const int64_t shape[] = {4};
    int32_t ibuf[4] = {1, 2, 3, 4};
    bc_tensor *self = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_INT32, ibuf, sizeof ibuf, shape, NULL, 1, 0, NULL, NULL, &self));
    float fd[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    bc_tensor *other = MAKE_F32(shape, 1, fd, 4);

    /* int32 += float32: the result type Float can't be cast to Int */
    for (size_t i = 0; i < 4; i++) {
        CHECK_STATUS(INPLACE_OPS[i](self, other), BC_ERR_DTYPE);
        CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
        CHECK_LAST_STATUS(BC_ERR_DTYPE);
    }
    /* int32 /= int32: true division gives Float, refused too */
    bc_tensor *iother = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_INT32, shape, 1, 2.0, &iother));
    CHECK_STATUS(bc_div_inplace(self, iother), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    CHECK(ibuf[0] == 1 && ibuf[1] == 2 && ibuf[2] == 3 && ibuf[3] == 4);

    /* out= of the wrong type is refused the same way, and left alone */
    int32_t obuf[4] = {-1, -1, -1, -1};
    bc_tensor *out = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_INT32, obuf, sizeof obuf, shape, NULL, 1, 0, NULL, NULL, &out));
    CHECK_STATUS(bc_add_out(self, other, out), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    CHECK(obuf[0] == -1 && obuf[1] == -1 && obuf[2] == -1 && obuf[3] == -1);

    /* bool - bool is not defined */
    uint8_t bbuf[4] = {1, 0, 1, 0};
    bc_tensor *bself = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_BOOL, bbuf, sizeof bbuf, shape, NULL, 1, 0, NULL, NULL, &bself));
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_sub(bself, bself, &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR(SPEC_MSG_BOOL_SUB);
    CHECK_STATUS(bc_sub_inplace(bself, bself), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_BOOL_SUB);
    CHECK(bbuf[0] == 1 && bbuf[1] == 0 && bbuf[2] == 1 && bbuf[3] == 0);

    bc_tensor_free(bself);
    bc_tensor_free(out);
    bc_tensor_free(iother);
    bc_tensor_free(self);
    bc_tensor_free(other);
}

static void test_refused_overlap_leaves_data(void) {
    /* self = base[0:3] expanded to (2,3) with stride 0: two elements per memory location */
    float base[6] = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    const int64_t row_shape[] = {3};
    bc_tensor *row = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, base, sizeof base, row_shape, NULL, 1, 0, NULL, NULL, &row));
    const int64_t two_rows[] = {2, 3};
    bc_tensor *expanded = NULL;
    CHECK_OK(bc_tensor_expand(row, two_rows, 2, &expanded));
    bc_tensor *one = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, NULL, 0, 1.0, &one));
    for (size_t i = 0; i < 4; i++) {
        CHECK_STATUS(INPLACE_OPS[i](expanded, one), BC_ERR_OVERLAP);
        CHECK_LAST_ERROR(SPEC_MSG_INTERNAL_OVERLAP);
    }
    /* the same through as_strided, and as an out= tensor */
    const int64_t st_shape[] = {2, 3}, st_strides[] = {0, 1};
    bc_tensor *strided = NULL;
    CHECK_OK(bc_tensor_as_strided(row, st_shape, st_strides, 2, 0, &strided));
    CHECK_STATUS(bc_add_inplace(strided, one), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_INTERNAL_OVERLAP);
    bc_tensor *src = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, two_rows, 2, &src));
    CHECK_STATUS(bc_add_out(src, one, strided), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_INTERNAL_OVERLAP);
    for (int i = 0; i < 6; i++) CHECK_EQ_DBL(base[i], (double)i);

    /* partial overlap: out = base[0:4], input = base[1:5] */
    const int64_t four[] = {4};
    bc_tensor *out = NULL, *in = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, base, sizeof base, four, NULL, 1, 0, NULL, NULL, &out));
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, base, sizeof base, four, NULL, 1, 1, NULL, NULL, &in));
    CHECK_STATUS(bc_add_out(in, one, out), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_PARTIAL_OVERLAP);
    CHECK_STATUS(bc_add_inplace(out, in), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_PARTIAL_OVERLAP);
    for (int i = 0; i < 6; i++) CHECK_EQ_DBL(base[i], (double)i);

    /* full, exact aliasing is allowed: x += x, out = x + 1 with out the same view as x */
    CHECK_OK(bc_add_inplace(out, out));
    CHECK_OK(bc_add_out(out, one, out));
    const float want[6] = {1.0f, 3.0f, 5.0f, 7.0f, 4.0f, 5.0f};
    for (int i = 0; i < 6; i++) CHECK_EQ_DBL(base[i], want[i]);

    bc_tensor_free(out);
    bc_tensor_free(in);
    bc_tensor_free(src);
    bc_tensor_free(strided);
    bc_tensor_free(one);
    bc_tensor_free(expanded);
    bc_tensor_free(row);
}

static void test_refused_out_shape_leaves_out(void) {
    const int64_t a_shape[] = {2, 3}, b_shape[] = {3}, wrong[] = {3, 3}, bigger[] = {1, 2, 3};
    bc_tensor *a = arange_f32(a_shape, 2);
    bc_tensor *b = arange_f32(b_shape, 1);
    float obuf[9];
    for (int i = 0; i < 9; i++) obuf[i] = -5.0f;
    bc_tensor *out = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, obuf, sizeof obuf, wrong, NULL, 2, 0, NULL, NULL, &out));
    for (size_t i = 0; i < 4; i++) CHECK_STATUS(OUT_OPS[i](a, b, out), BC_ERR_SHAPE);
    bc_tensor *out2 = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, obuf, sizeof obuf, bigger, NULL, 3, 0, NULL, NULL, &out2));
    CHECK_STATUS(bc_add_out(a, b, out2), BC_ERR_SHAPE);
    for (int i = 0; i < 9; i++) CHECK_EQ_DBL(obuf[i], -5.0);
    CHECK_SHAPE(out, 3, 3);
    bc_tensor_free(out2);
    bc_tensor_free(out);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* ============================================================================================== */
/* bc_tensor_wrap bounds and the release callback                                                  */
/* ============================================================================================== */

static void test_wrap_out_of_bounds_refused(void) {
    float data[6] = {0, 1, 2, 3, 4, 5};
    release_log log = {0, NULL};
    const int64_t shape[] = {2, 3};
    const struct {
        const int64_t *strides;
        int64_t offset;
        size_t nbytes;
        const char *why;
    } cases[] = {
        {(const int64_t[]){3, 1}, 1, sizeof data, "offset 1 pushes the last element past the end"},
        {(const int64_t[]){4, 1}, 0, sizeof data, "stride 4 addresses element 6"},
        {(const int64_t[]){1, 3}, 0, sizeof data, "strides (1,3) address element 7"},
        {(const int64_t[]){-3, 1}, 3, sizeof data, "negative stride"},
        {(const int64_t[]){3, -1}, 2, sizeof data, "negative stride"},
        {(const int64_t[]){3, 1}, -1, sizeof data, "negative offset"},
        {(const int64_t[]){3, 1}, 6, sizeof data, "offset past the end"},
        {(const int64_t[]){3, 1}, 0, sizeof data - 1, "nbytes one short of the last element"},
        {NULL, 0, 5 * sizeof(float), "contiguous (2,3) needs 6 elements, 5 given"},
        {(const int64_t[]){4, 1}, -4, sizeof data, "negative offset that strides bring back inside"},
        {(const int64_t[]){INT64_MAX, 1}, 0, sizeof data, "stride whose extent overflows int64"},
    };
    const size_t overflow_case = COUNT_OF(cases) - 1; /* BC_ERR_OVERFLOW is an acceptable answer */
    for (size_t i = 0; i < COUNT_OF(cases); i++) {
        bc_tensor *t = SENTINEL;
        int32_t st = bc_tensor_wrap(BC_DTYPE_FLOAT32, data, cases[i].nbytes, shape, cases[i].strides, 2,
                                    cases[i].offset, on_release, &log, &t);
        if (!(i == overflow_case && st == BC_ERR_OVERFLOW)) {
            CHECK_EQ_INT(st, BC_ERR_INVALID_ARG);
            if (st != BC_ERR_INVALID_ARG) printf("        case %zu: %s\n", i, cases[i].why);
        }
        if (st == BC_OK) bc_tensor_free(t);
        else CHECK(t == NULL);
    }
    /* the release callback never ran for any of the refused wraps (nor for a successful one
     * whose status we wrongly got, which would count too) */
    CHECK_EQ_INT(log.calls, 0);
    for (int i = 0; i < 6; i++) CHECK_EQ_DBL(data[i], (double)i);

    /* data must be aligned to the element size */
    _Alignas(8) unsigned char raw[64] = {0};
    const int64_t two[] = {2};
    bc_tensor *mis = SENTINEL;
    CHECK_STATUS(bc_tensor_wrap(BC_DTYPE_FLOAT32, raw + 1, 16, two, NULL, 1, 0, on_release, &log, &mis),
                 BC_ERR_INVALID_ARG);
    CHECK(mis == NULL);
    mis = SENTINEL;
    CHECK_STATUS(bc_tensor_wrap(BC_DTYPE_INT64, raw + 4, 32, two, NULL, 1, 0, on_release, &log, &mis),
                 BC_ERR_INVALID_ARG);
    CHECK(mis == NULL);
    CHECK_EQ_INT(log.calls, 0);

    /* the boundary cases that are inside are accepted */
    bc_tensor *t = NULL;
    const int64_t inside[] = {0, 1};
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, inside, 2, 3, NULL, NULL, &t));
    CHECK_F32(t, 3.0f, 4.0f, 5.0f, 3.0f, 4.0f, 5.0f);
    bc_tensor_free(t);
    t = NULL;
    const int64_t stepped[] = {1, 2};
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, stepped, 2, 0, NULL, NULL, &t));
    CHECK_F32(t, 0.0f, 2.0f, 4.0f, 1.0f, 3.0f, 5.0f);
    bc_tensor_free(t);

    /* as_strided is bounds-checked against the storage too */
    bc_tensor *base = NULL, *v = SENTINEL;
    const int64_t six[] = {6};
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, six, NULL, 1, 0, NULL, NULL, &base));
    const int64_t far[] = {3, 1};
    CHECK_STATUS(bc_tensor_as_strided(base, shape, far, 2, 1, &v), BC_ERR_INVALID_ARG);
    CHECK(v == NULL);
    v = SENTINEL;
    CHECK_STATUS(bc_tensor_as_strided(base, shape, far, 2, -1, &v), BC_ERR_INVALID_ARG);
    CHECK(v == NULL);
    bc_tensor_free(base);
}

static void test_release_called_once_when_last_view_freed(void) {
    float data[6] = {0, 1, 2, 3, 4, 5};
    const int64_t shape[] = {2, 3};

    /* 1. wrap, free */
    release_log log = {0, NULL};
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, NULL, 2, 0, on_release, &log, &t));
    CHECK_EQ_INT(log.calls, 0);
    bc_tensor_free(t);
    CHECK_EQ_INT(log.calls, 1);
    CHECK(log.last_user_data == &log);

    /* 2. wrap, expand; free the base first, then the view */
    log.calls = 0;
    const int64_t col[] = {3, 1}, wide[] = {3, 4};
    t = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, 3 * sizeof(float), col, NULL, 2, 0, on_release, &log, &t));
    bc_tensor *view = NULL;
    CHECK_OK(bc_tensor_expand(t, wide, 2, &view));
    bc_tensor_free(t);
    CHECK_EQ_INT(log.calls, 0); /* the view still uses the memory */
    CHECK_F32(view, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
    bc_tensor_free(view);
    CHECK_EQ_INT(log.calls, 1);

    /* 3. several views of several kinds, freed in a scattered order */
    log.calls = 0;
    t = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, NULL, 2, 0, on_release, &log, &t));
    bc_tensor *p = NULL, *s = NULL, *as = NULL, *bt[2] = {NULL, NULL}, *cl = NULL, *sum = NULL;
    const int64_t perm[] = {1, 0};
    CHECK_OK(bc_tensor_permute(t, perm, 2, &p));
    CHECK_OK(bc_tensor_slice(p, 0, 1, 3, 1, &s));
    const int64_t as_shape[] = {2}, as_strides[] = {2};
    CHECK_OK(bc_tensor_as_strided(s, as_shape, as_strides, 1, 1, &as));
    const int64_t col_shape[] = {3, 1}, col_strides[] = {1, 0};
    bc_tensor *colv = NULL;
    CHECK_OK(bc_tensor_as_strided(t, col_shape, col_strides, 2, 0, &colv));
    const bc_tensor *ins[2] = {colv, as};
    CHECK_OK(bc_tensor_broadcast_tensors(ins, 2, bt));
    CHECK_SHAPE(bt[0], 3, 2);
    CHECK_SHAPE(bt[1], 3, 2);
    CHECK_OK(bc_tensor_clone(t, &cl));
    CHECK_OK(bc_add(t, t, &sum));
    bc_tensor_free(t);
    bc_tensor_free(as);
    bc_tensor_free(p);
    bc_tensor_free(colv);
    CHECK_EQ_INT(log.calls, 0);
    bc_tensor_free(bt[0]);
    bc_tensor_free(s);
    CHECK_EQ_INT(log.calls, 0);
    bc_tensor_free(bt[1]);
    CHECK_EQ_INT(log.calls, 1); /* the last view is gone */
    /* clones and results own their own memory: still readable, freeing them does not release */
    CHECK_F32(cl, 0, 1, 2, 3, 4, 5);
    CHECK_F32(sum, 0, 2, 4, 6, 8, 10);
    bc_tensor_free(cl);
    bc_tensor_free(sum);
    CHECK_EQ_INT(log.calls, 1);

    /* 4. two independent wraps of the same memory each release once */
    release_log l1 = {0, NULL}, l2 = {0, NULL};
    bc_tensor *w1 = NULL, *w2 = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, NULL, 2, 0, on_release, &l1, &w1));
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, data, sizeof data, shape, NULL, 2, 0, on_release, &l2, &w2));
    bc_tensor_free(w2);
    CHECK_EQ_INT(l1.calls, 0);
    CHECK_EQ_INT(l2.calls, 1);
    bc_tensor_free(w1);
    CHECK_EQ_INT(l1.calls, 1);
    CHECK(l1.last_user_data == &l1 && l2.last_user_data == &l2);
}

/* ============================================================================================== */
/* Panics, threads                                                                                */
/* ============================================================================================== */

static void test_panic_is_caught_at_the_boundary(void) {
    CHECK_STATUS(bc_debug_panic(), BC_ERR_INTERNAL);
    CHECK_LAST_ERROR("internal error: bc_debug_panic: deliberate panic");
    CHECK_LAST_STATUS(BC_ERR_INTERNAL);
    /* the library goes on working */
    const int64_t shape[] = {2};
    bc_tensor *a = NULL, *r = NULL;
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, shape, 1, 1.5, &a));
    CHECK_OK(bc_add(a, a, &r));
    CHECK_F32(r, 3.0f, 3.0f);
    bc_tensor_free(r);
    bc_tensor_free(a);
}

typedef struct {
    int which;
    int32_t status;
    int32_t last_status;
    char message[256];
    int warnings;
} thread_result;

static void count_warning(void *user_data, const char *message) {
    (void)message;
    int *n = (int *)user_data;
    (*n)++;
}

static void *thread_body(void *arg) {
    thread_result *r = (thread_result *)arg;
    if (r->which == 0) {
        const int64_t a[] = {5, 2, 4, 1}, b[] = {3, 1, 1};
        int64_t out[4];
        size_t nd = 0;
        r->status = bc_shape_broadcast(a, 4, b, 3, out, 4, &nd);
    } else {
        size_t nd = 0;
        r->status = bc_tensor_ndim(NULL, &nd);
    }
    r->last_status = bc_last_error_status();
    bc_last_error_message(r->message, sizeof r->message);
    return NULL;
}

static void *warning_thread_body(void *arg) {
    thread_result *r = (thread_result *)arg;
    r->last_status = bc_last_error_status(); /* a new thread has no error yet */
    bc_last_error_message(r->message, sizeof r->message);
    const int64_t a[] = {4, 1}, b[] = {4};
    bc_tensor *ta = NULL, *tb = NULL, *o = NULL;
    r->status = bc_tensor_ones(BC_DTYPE_FLOAT32, a, 2, &ta);
    if (r->status == BC_OK) r->status = bc_tensor_ones(BC_DTYPE_FLOAT32, b, 1, &tb);
    if (r->status == BC_OK) r->status = bc_add(ta, tb, &o);
    bc_tensor_free(o);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
    return NULL;
}

static void test_last_error_is_per_thread(void) {
    /* this thread's error must survive the other threads' failures */
    bc_tensor *o = SENTINEL;
    CHECK_STATUS(bc_tensor_clone(NULL, &o), BC_ERR_NULL_ARG);
    char mine[256];
    bc_last_error_message(mine, sizeof mine);

    thread_result res[2];
    memset(res, 0, sizeof res);
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        res[i].which = i;
        CHECK(pthread_create(&th[i], NULL, thread_body, &res[i]) == 0);
    }
    for (int i = 0; i < 2; i++) CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ_INT(res[0].status, BC_ERR_SHAPE);
    CHECK_EQ_INT(res[0].last_status, BC_ERR_SHAPE);
    CHECK_STR_EQ(res[0].message,
                 "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1");
    CHECK_EQ_INT(res[1].status, BC_ERR_NULL_ARG);
    CHECK_EQ_INT(res[1].last_status, BC_ERR_NULL_ARG);
    CHECK(strcmp(res[1].message, res[0].message) != 0);
    CHECK_LAST_STATUS(BC_ERR_NULL_ARG);
    CHECK_LAST_ERROR(mine);

    /* a fresh thread starts with no error */
    thread_result fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.which = 2;
    pthread_t ft;
    CHECK(pthread_create(&ft, NULL, warning_thread_body, &fresh) == 0);
    CHECK(pthread_join(ft, NULL) == 0);
    CHECK_EQ_INT(fresh.status, BC_OK);
    CHECK_EQ_INT(fresh.last_status, BC_OK);
    CHECK_STR_EQ(fresh.message, "");

    /* settings are process-wide: a warning switched on here fires for another thread's call,
     * through the handler installed here */
    int warnings = 0;
    CHECK_OK(bc_set_warning_handler(count_warning, &warnings));
    CHECK_OK(bc_set_broadcast_warning(true));
    thread_result w;
    memset(&w, 0, sizeof w);
    CHECK(pthread_create(&ft, NULL, warning_thread_body, &w) == 0);
    CHECK(pthread_join(ft, NULL) == 0);
    CHECK_EQ_INT(w.status, BC_OK);
    CHECK_EQ_INT(warnings, 1);
}

/* The same array as input and output. Every input is read before any output
 * is written, so this works like any other call (and a failing call leaves the array NULL, as
 * documented for the outputs). */
static void test_broadcast_tensors_in_place(void) {
    const int64_t col_shape[] = {3, 1}, row_shape[] = {4};
    bc_tensor *arr[2] = {arange_f32(col_shape, 2), arange_f32(row_shape, 1)};
    bc_tensor *orig[2] = {arr[0], arr[1]};
    CHECK_OK(bc_tensor_broadcast_tensors((const bc_tensor *const *)arr, 2, arr));
    CHECK(arr[0] != orig[0] && arr[1] != orig[1]);
    CHECK_SHAPE(arr[0], 3, 4);
    CHECK_SHAPE(arr[1], 3, 4);
    CHECK_STRIDES(arr[0], 1, 0);
    CHECK_STRIDES(arr[1], 0, 1);
    bc_tensor_free(arr[0]);
    bc_tensor_free(arr[1]);

    /* A failure: the array's entries become NULL; the tensors they named are untouched. */
    const int64_t bad_shape[] = {2, 2};
    arr[0] = orig[0];
    arr[1] = arange_f32(bad_shape, 2);
    bc_tensor *second = arr[1];
    CHECK_STATUS(bc_tensor_broadcast_tensors((const bc_tensor *const *)arr, 2, arr), BC_ERR_SHAPE);
    CHECK(arr[0] == NULL && arr[1] == NULL);
    CHECK_SHAPE(orig[0], 3, 1);
    bc_tensor_free(orig[0]);
    bc_tensor_free(orig[1]);
    bc_tensor_free(second);
}

int main(void) {
    RUN_TEST(status_str_every_code);
    RUN_TEST(version_macros_match_bc_version);
    RUN_TEST(last_error_message_api);
    RUN_TEST(dtype_size_and_name);
    RUN_TEST(empty_shapes);
    RUN_TEST(empty_constructors);
    RUN_TEST(empty_accessors);
    RUN_TEST(empty_views);
    RUN_TEST(invalid_dtype_codes);
    RUN_TEST(invalid_op_codes);
    RUN_TEST(negative_sizes);
    RUN_TEST(size_overflow);
    RUN_TEST(huge_allocation_fails_cleanly);
    RUN_TEST(buffers_too_small);
    RUN_TEST(refused_inplace_shape_leaves_self);
    RUN_TEST(refused_inplace_dtype_leaves_self);
    RUN_TEST(refused_overlap_leaves_data);
    RUN_TEST(refused_out_shape_leaves_out);
    RUN_TEST(wrap_out_of_bounds_refused);
    RUN_TEST(release_called_once_when_last_view_freed);
    RUN_TEST(broadcast_tensors_in_place);
    RUN_TEST(panic_is_caught_at_the_boundary);
    RUN_TEST(last_error_is_per_thread);
    return check_summary();
}
