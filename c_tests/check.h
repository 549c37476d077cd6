/*
 * check.h: a tiny test framework for the libbroadcast C test programs.
 *
 * Usage:
 *
 *     #include "check.h"
 *
 *     static void test_something(void) {   // run as RUN_TEST(something)
 *         CHECK(1 + 1 == 2);
 *         CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, shape, 2, &t));
 *         CHECK_STATUS(bc_add(a, b, &out), BC_ERR_SHAPE);
 *         CHECK_LAST_ERROR("The size of tensor a (2) must match ...");
 *     }
 *
 *     int main(void) {
 *         RUN_TEST(something);
 *         return check_summary();
 *     }
 *
 * Every CHECK that fails prints `file:line: CHECK failed: <expression>` (plus the values involved,
 * and for status checks the library's last error message) and counts one failure; the test goes on.
 * RUN_TEST also counts a failure when the test leaves more (or fewer) live handles than it found
 * (bc_tensor_live_count), so a handle leaked by a test, or by the library on a failing call, shows.
 * RUN_TEST prints `test <name> ... ok` or `test <name> ... FAILED` after the test has run, and puts
 * the library's process-wide settings back to their defaults (broadcast warning off, legacy
 * fallback off, default warning handler) and clears the last error, so tests do not leak state
 * into each other. check_summary() prints `N passed, N failed` and returns the exit status
 * (0 when every test passed, 1 otherwise).
 *
 * Everything here is `static` (inline where it is a function), so that a program may use any part
 * of it without -Wunused-function complaining about the rest.
 */
#ifndef BC_C_TESTS_CHECK_H
#define BC_C_TESTS_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"

/* ------------------------------------------------------------------------------------------------
 * Counters
 * --------------------------------------------------------------------------------------------- */

static int check_current_failures = 0; /* failed CHECKs in the running test */
static int check_total_failures = 0;   /* failed CHECKs overall */
static int check_tests_passed = 0;
static int check_tests_failed = 0;
static const char *check_current_test = "";

static inline void check_fail_header(const char *file, int line, const char *what) {
    if (check_current_failures == 0) printf("  in test %s:\n", check_current_test);
    check_current_failures++;
    check_total_failures++;
    printf("    %s:%d: CHECK failed: %s\n", file, line, what);
    fflush(stdout);
}

/* The library's last error message, in a static buffer (valid until the next call). */
static inline const char *check_last_error(void) {
    static char buf[4096];
    buf[0] = '\0';
    (void)bc_last_error_message(buf, sizeof buf);
    return buf;
}

static inline const char *check_status_name(int32_t status) {
    const char *s = bc_status_str(status);
    return s ? s : "(NULL from bc_status_str)";
}

/* ------------------------------------------------------------------------------------------------
 * CHECK macros (non-fatal: they report and count, then the test continues)
 * --------------------------------------------------------------------------------------------- */

#define CHECK(expr)                                                                                \
    do {                                                                                           \
        if (!(expr)) check_fail_header(__FILE__, __LINE__, #expr);                                  \
    } while (0)

/* Integers of any type up to 64 bits, compared as long long / printed as such. */
#define CHECK_EQ_INT(actual, expected)                                                             \
    do {                                                                                           \
        long long check_a_ = (long long)(actual);                                                  \
        long long check_e_ = (long long)(expected);                                                \
        if (check_a_ != check_e_) {                                                                \
            check_fail_header(__FILE__, __LINE__, #actual " == " #expected);                        \
            printf("        got %lld, expected %lld\n", check_a_, check_e_);                       \
        }                                                                                          \
    } while (0)

/* Unsigned sizes. */
#define CHECK_EQ_SIZE(actual, expected)                                                            \
    do {                                                                                           \
        unsigned long long check_a_ = (unsigned long long)(actual);                                \
        unsigned long long check_e_ = (unsigned long long)(expected);                              \
        if (check_a_ != check_e_) {                                                                \
            check_fail_header(__FILE__, __LINE__, #actual " == " #expected);                        \
            printf("        got %llu, expected %llu\n", check_a_, check_e_);                       \
        }                                                                                          \
    } while (0)

/* Doubles compared exactly (the values used in the tests are exactly representable). */
#define CHECK_EQ_DBL(actual, expected)                                                             \
    do {                                                                                           \
        double check_a_ = (double)(actual);                                                        \
        double check_e_ = (double)(expected);                                                      \
        if (!(check_a_ == check_e_)) {                                                             \
            check_fail_header(__FILE__, __LINE__, #actual " == " #expected);                        \
            printf("        got %.17g, expected %.17g\n", check_a_, check_e_);                     \
        }                                                                                          \
    } while (0)

/* Doubles compared with a relative tolerance. */
#define CHECK_NEAR(actual, expected, rel)                                                          \
    do {                                                                                           \
        double check_a_ = (double)(actual);                                                        \
        double check_e_ = (double)(expected);                                                      \
        double check_tol_ = (double)(rel) * (fabs(check_e_) > 1.0 ? fabs(check_e_) : 1.0);         \
        if (!(fabs(check_a_ - check_e_) <= check_tol_)) {                                          \
            check_fail_header(__FILE__, __LINE__, #actual " ~= " #expected);                        \
            printf("        got %.17g, expected %.17g\n", check_a_, check_e_);                     \
        }                                                                                          \
    } while (0)

/* Strings (either may be NULL, which only equals NULL). */
#define CHECK_STR_EQ(actual, expected)                                                             \
    do {                                                                                           \
        const char *check_a_ = (actual);                                                           \
        const char *check_e_ = (expected);                                                         \
        if (!((check_a_ == NULL && check_e_ == NULL) ||                                            \
              (check_a_ != NULL && check_e_ != NULL && strcmp(check_a_, check_e_) == 0))) {        \
            check_fail_header(__FILE__, __LINE__, #actual " == " #expected);                        \
            printf("        got      \"%s\"\n        expected \"%s\"\n",                           \
                   check_a_ ? check_a_ : "(NULL)", check_e_ ? check_e_ : "(NULL)");                \
        }                                                                                          \
    } while (0)

/* A status-returning call must return `expected`; on a mismatch the last error is printed. */
#define CHECK_STATUS(call, expected)                                                               \
    do {                                                                                           \
        int32_t check_s_ = (call);                                                                 \
        int32_t check_e_ = (int32_t)(expected);                                                    \
        if (check_s_ != check_e_) {                                                                \
            check_fail_header(__FILE__, __LINE__, #call " returns " #expected);                     \
            printf("        got status %d (%s), expected %d (%s)\n", (int)check_s_,                \
                   check_status_name(check_s_), (int)check_e_, check_status_name(check_e_));       \
            if (check_s_ != BC_OK) printf("        last error: \"%s\"\n", check_last_error());     \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, BC_OK)

/* The calling thread's last error message must be exactly `expected`. */
#define CHECK_LAST_ERROR(expected) CHECK_STR_EQ(check_last_error(), (expected))

/* The calling thread's last error status must be `expected`. */
#define CHECK_LAST_STATUS(expected) CHECK_EQ_INT(bc_last_error_status(), (expected))

/* ------------------------------------------------------------------------------------------------
 * Tensor helpers
 * --------------------------------------------------------------------------------------------- */

#define COUNT_OF(arr) (sizeof(arr) / sizeof((arr)[0]))

/* Compare a tensor's shape against `ndim` sizes; returns true when equal, reports otherwise. */
static inline bool check_shape_impl(const bc_tensor *t, const int64_t *expected, size_t ndim,
                                    const char *file, int line, const char *what) {
    size_t got_ndim = (size_t)-1;
    int64_t got[16];
    memset(got, 0xff, sizeof got);
    int32_t s1 = bc_tensor_ndim(t, &got_ndim);
    int32_t s2 = (s1 == BC_OK && got_ndim <= 16) ? bc_tensor_shape(t, got, 16) : -1;
    bool same = s1 == BC_OK && s2 == BC_OK && got_ndim == ndim;
    for (size_t i = 0; same && i < ndim; i++) same = got[i] == expected[i];
    if (!same) {
        check_fail_header(file, line, what);
        printf("        expected shape (");
        for (size_t i = 0; i < ndim; i++) printf("%s%" PRId64, i ? "," : "", expected[i]);
        if (s1 != BC_OK || s2 != BC_OK) {
            printf("), could not read the shape (status %d/%d, last error \"%s\")\n", (int)s1,
                   (int)s2, check_last_error());
        } else {
            printf("), got (");
            for (size_t i = 0; i < got_ndim && i < 16; i++)
                printf("%s%" PRId64, i ? "," : "", got[i]);
            printf(")\n");
        }
    }
    return same;
}

/* CHECK_SHAPE(t, 5, 3, 4, 1): tensor `t` has shape (5,3,4,1). Use CHECK_SHAPE0 for 0-d. */
#define CHECK_SHAPE(t, ...)                                                                        \
    check_shape_impl((t), (const int64_t[]){__VA_ARGS__},                                          \
                     sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t), __FILE__, __LINE__, \
                     "shape of " #t " is (" #__VA_ARGS__ ")")
#define CHECK_SHAPE0(t) check_shape_impl((t), NULL, 0, __FILE__, __LINE__, "shape of " #t " is ()")

/* Same for strides (in elements). */
static inline bool check_strides_impl(const bc_tensor *t, const int64_t *expected, size_t ndim,
                                      const char *file, int line, const char *what) {
    int64_t got[16];
    memset(got, 0xff, sizeof got);
    size_t got_ndim = (size_t)-1;
    int32_t s1 = bc_tensor_ndim(t, &got_ndim);
    int32_t s2 = (s1 == BC_OK && got_ndim <= 16) ? bc_tensor_strides(t, got, 16) : -1;
    bool same = s1 == BC_OK && s2 == BC_OK && got_ndim == ndim;
    for (size_t i = 0; same && i < ndim; i++) same = got[i] == expected[i];
    if (!same) {
        check_fail_header(file, line, what);
        printf("        expected strides (");
        for (size_t i = 0; i < ndim; i++) printf("%s%" PRId64, i ? "," : "", expected[i]);
        if (s1 != BC_OK || s2 != BC_OK) {
            printf("), could not read them (status %d/%d)\n", (int)s1, (int)s2);
        } else {
            printf("), got (");
            for (size_t i = 0; i < got_ndim && i < 16; i++)
                printf("%s%" PRId64, i ? "," : "", got[i]);
            printf(")\n");
        }
    }
    return same;
}

#define CHECK_STRIDES(t, ...)                                                                      \
    check_strides_impl((t), (const int64_t[]){__VA_ARGS__},                                        \
                       sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t), __FILE__,         \
                       __LINE__, "strides of " #t " are (" #__VA_ARGS__ ")")

/* Compare an array of `got_n` sizes (e.g. filled by bc_shape_broadcast) with the expected sizes. */
static inline bool check_dims_impl(const int64_t *got, size_t got_n, const int64_t *expected, size_t n,
                                   const char *file, int line, const char *what) {
    bool same = got_n == n;
    for (size_t i = 0; same && i < n; i++) same = got[i] == expected[i];
    if (!same) {
        check_fail_header(file, line, what);
        printf("        expected (");
        for (size_t i = 0; i < n; i++) printf("%s%" PRId64, i ? "," : "", expected[i]);
        printf("), got (");
        for (size_t i = 0; i < got_n && i < 64; i++) printf("%s%" PRId64, i ? "," : "", got[i]);
        printf(")\n");
    }
    return same;
}

/* CHECK_DIMS(buf, ndim, 5, 3, 4, 1): the first `ndim` entries of `buf` are (5,3,4,1) and ndim is 4. */
#define CHECK_DIMS(got, got_n, ...)                                                                \
    check_dims_impl((got), (got_n), (const int64_t[]){__VA_ARGS__},                                \
                    sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t), __FILE__, __LINE__,  \
                    #got " is (" #__VA_ARGS__ ")")

/* A tensor's dtype must be `expected`. */
#define CHECK_DTYPE(t, expected)                                                                   \
    do {                                                                                           \
        int32_t check_dt_ = -1;                                                                    \
        CHECK_OK(bc_tensor_dtype((t), &check_dt_));                                                \
        if (check_dt_ != (int32_t)(expected)) {                                                    \
            check_fail_header(__FILE__, __LINE__, "dtype of " #t " is " #expected);                 \
            printf("        got %s (%d)\n", bc_dtype_name(check_dt_), (int)check_dt_);             \
        }                                                                                          \
    } while (0)

/* Compare a float32 tensor's row-major contents with `n` expected values (exact). */
static inline bool check_f32_impl(const bc_tensor *t, const float *expected, size_t n,
                                  const char *file, int line, const char *what) {
    int64_t numel = -1;
    int32_t dt = -1;
    int32_t s1 = bc_tensor_numel(t, &numel);
    int32_t s2 = bc_tensor_dtype(t, &dt);
    if (s1 != BC_OK || s2 != BC_OK || numel != (int64_t)n || dt != BC_DTYPE_FLOAT32) {
        check_fail_header(file, line, what);
        printf("        expected %zu float32 elements, got numel %" PRId64 " dtype %s (status %d/%d)\n",
               n, numel, bc_dtype_name(dt), (int)s1, (int)s2);
        return false;
    }
    float *got = calloc(n ? n : 1, sizeof(float));
    if (!got) return false;
    int32_t s3 = bc_tensor_copy_to(t, got, n * sizeof(float));
    bool same = s3 == BC_OK;
    size_t bad = 0;
    for (size_t i = 0; same && i < n; i++) {
        if (!(got[i] == expected[i])) {
            same = false;
            bad = i;
        }
    }
    if (!same) {
        check_fail_header(file, line, what);
        if (s3 != BC_OK)
            printf("        bc_tensor_copy_to failed: status %d, \"%s\"\n", (int)s3, check_last_error());
        else
            printf("        element %zu: got %.9g, expected %.9g\n", bad, (double)got[bad],
                   (double)expected[bad]);
    }
    free(got);
    return same;
}

/* CHECK_F32(t, 1.0f, 2.0f, ...): tensor `t` is float32 with exactly these row-major values. */
#define CHECK_F32(t, ...)                                                                          \
    check_f32_impl((t), (const float[]){__VA_ARGS__},                                              \
                   sizeof((const float[]){__VA_ARGS__}) / sizeof(float), __FILE__, __LINE__,       \
                   "values of " #t)
/* CHECK_F32_ARRAY(t, array, n) */
#define CHECK_F32_ARRAY(t, arr, n) check_f32_impl((t), (arr), (n), __FILE__, __LINE__, "values of " #t)

/* Every element of float32 tensor `t` equals `v`. */
static inline bool check_f32_all_impl(const bc_tensor *t, float v, const char *file, int line,
                                      const char *what) {
    int64_t numel = 0;
    if (bc_tensor_numel(t, &numel) != BC_OK || numel < 0 || numel > (1 << 24)) {
        check_fail_header(file, line, what);
        printf("        could not read numel\n");
        return false;
    }
    float *want = malloc((size_t)(numel ? numel : 1) * sizeof(float));
    if (!want) return false;
    for (int64_t i = 0; i < numel; i++) want[i] = v;
    bool ok = check_f32_impl(t, want, (size_t)numel, file, line, what);
    free(want);
    return ok;
}
#define CHECK_F32_ALL(t, v) check_f32_all_impl((t), (v), __FILE__, __LINE__, "every element of " #t " == " #v)

/* Make a float32 tensor from row-major values; NULL (and a reported failure) when that fails. */
static inline bc_tensor *make_f32_impl(const int64_t *shape, size_t ndim, const float *data, size_t n,
                                       const char *file, int line) {
    bc_tensor *t = NULL;
    int32_t s = bc_tensor_from_data(BC_DTYPE_FLOAT32, shape, ndim, data, n * sizeof(float), &t);
    if (s != BC_OK) {
        check_fail_header(file, line, "bc_tensor_from_data(float32) succeeds");
        printf("        status %d (%s), \"%s\"\n", (int)s, check_status_name(s), check_last_error());
    }
    return t;
}
#define MAKE_F32(shape, ndim, data, n) make_f32_impl((shape), (ndim), (data), (n), __FILE__, __LINE__)

/* Make a tensor of `dtype` filled with `value`. */
static inline bc_tensor *make_full_impl(int32_t dtype, const int64_t *shape, size_t ndim, double value,
                                        const char *file, int line) {
    bc_tensor *t = NULL;
    int32_t s = bc_tensor_full(dtype, shape, ndim, value, &t);
    if (s != BC_OK) {
        check_fail_header(file, line, "bc_tensor_full succeeds");
        printf("        status %d (%s), \"%s\"\n", (int)s, check_status_name(s), check_last_error());
    }
    return t;
}
#define MAKE_FULL(dtype, shape, ndim, value)                                                       \
    make_full_impl((dtype), (shape), (ndim), (value), __FILE__, __LINE__)

/* A non-NULL handle value that is never a real tensor: put it in an `out` variable before a call
 * that must fail, then check that the failure set it to NULL. Never pass it to the library. */
static inline bc_tensor *check_sentinel(void) {
    static char byte;
    return (bc_tensor *)(void *)&byte;
}
#define SENTINEL (check_sentinel())

/* Read a float32 tensor into `buf` (n elements); false when that fails. */
/* Make a tensor of any dtype from row-major raw data (reported, and NULL, on failure). */
static inline bc_tensor *make_raw(int32_t dtype, const int64_t *shape, size_t ndim, const void *data,
                                  size_t nbytes) {
    bc_tensor *t = NULL;
    int32_t s = bc_tensor_from_data(dtype, shape, ndim, data, nbytes, &t);
    if (s != BC_OK) {
        CHECK_OK(s);
        printf("        (making a %s tensor)\n", bc_dtype_name(dtype));
    }
    return t;
}

/* Read a tensor's row-major raw bytes; returns false (and reports) on failure. */
static inline bool read_raw(const bc_tensor *t, void *buf, size_t nbytes) {
    int32_t s = bc_tensor_copy_to(t, buf, nbytes);
    if (s != BC_OK) CHECK_OK(s);
    return s == BC_OK;
}

static inline bool read_f32(const bc_tensor *t, float *buf, size_t n) {
    return bc_tensor_copy_to(t, buf, n * sizeof(float)) == BC_OK;
}

/* Fill buf[0..n) with start, start+step, ... */
static inline void fill_arange(float *buf, size_t n, float start, float step) {
    for (size_t i = 0; i < n; i++) buf[i] = start + step * (float)i;
}

/* ------------------------------------------------------------------------------------------------
 * The exact texts of docs/semantics.md (sections 3, 5, 6 and 8)
 * --------------------------------------------------------------------------------------------- */

#define SPEC_WARN_BROADCAST                                                                        \
    "self and other do not have the same shape, but are broadcastable, and have the same number "  \
    "of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather "    \
    "than viewing as 1-dimensional."
#define SPEC_WARN_FALLBACK                                                                         \
    "self and other not broadcastable, but have the same number of elements.  Falling back to "    \
    "deprecated pointwise behavior."
#define SPEC_WARN_FALLBACK_INPLACE                                                                 \
    "other is not broadcastable to self, but they have the same number of elements.  Falling "     \
    "back to deprecated pointwise behavior."
#define SPEC_MSG_INTERNAL_OVERLAP                                                                  \
    "unsupported operation: more than one element of the written-to tensor refers to a single "    \
    "memory location. Please clone() the tensor before performing the operation."
#define SPEC_MSG_PARTIAL_OVERLAP                                                                   \
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to " \
    "a single memory location. Please clone() the tensor before performing the operation."
#define SPEC_MSG_CAST_FLOAT_TO_INT "result type Float can't be cast to the desired output type Int"
#define SPEC_MSG_BOOL_SUB                                                                          \
    "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "       \
    "`logical_xor()` operator instead."

/* ------------------------------------------------------------------------------------------------
 * Warning capture
 * --------------------------------------------------------------------------------------------- */

typedef struct {
    int count;
    char first[1024];
    char last[1024];
} check_warnings;

static inline void check_warning_handler(void *user_data, const char *message) {
    check_warnings *w = (check_warnings *)user_data;
    if (!w) return;
    char *dst = w->count == 0 ? w->first : w->last;
    snprintf(dst, sizeof w->first, "%s", message ? message : "(NULL message)");
    if (w->count == 0) snprintf(w->last, sizeof w->last, "%s", w->first);
    w->count++;
}

/* Start capturing warnings into *w (cleared). */
static inline void capture_warnings(check_warnings *w) {
    memset(w, 0, sizeof *w);
    int32_t s = bc_set_warning_handler(check_warning_handler, w);
    if (s != BC_OK) {
        check_fail_header(__FILE__, __LINE__, "bc_set_warning_handler succeeds");
    }
}

/* Put the process-wide settings back to their defaults. */
static inline void check_restore_settings(void) {
    int32_t s = bc_set_broadcast_warning(false) | bc_set_legacy_fallback(false) |
                bc_set_warning_handler(NULL, NULL);
    if (s != BC_OK) {
        check_fail_header(__FILE__, __LINE__, "the default settings are restored");
    }
    bc_last_error_clear();
}

/* ------------------------------------------------------------------------------------------------
 * Running tests
 * --------------------------------------------------------------------------------------------- */

/* RUN_TEST(name) runs `static void test_name(void)` and reports it as `test name ... ok`. */
#define RUN_TEST(name)                                                                             \
    do {                                                                                           \
        check_current_failures = 0;                                                                \
        check_current_test = #name;                                                                \
        check_restore_settings();                                                                  \
        size_t check_live_before_ = bc_tensor_live_count();                                        \
        test_##name();                                                                             \
        check_restore_settings();                                                                  \
        size_t check_live_after_ = bc_tensor_live_count();                                         \
        if (check_live_after_ != check_live_before_) {                                             \
            check_fail_header(__FILE__, __LINE__, "every handle the test made is freed");           \
            printf("        live handles: %zu before the test, %zu after\n", check_live_before_,    \
                   check_live_after_);                                                             \
        }                                                                                          \
        if (check_current_failures == 0) {                                                         \
            check_tests_passed++;                                                                  \
            printf("test %s ... ok\n", #name);                                                       \
        } else {                                                                                   \
            check_tests_failed++;                                                                  \
            printf("test %s ... FAILED (%d failed checks)\n", #name, check_current_failures);        \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_tests_passed, check_tests_failed);
    fflush(stdout);
    return (check_tests_failed == 0 && check_total_failures == 0) ? 0 : 1;
}

#endif /* BC_C_TESTS_CHECK_H */
