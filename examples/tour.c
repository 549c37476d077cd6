/*
 * tour.c: the documented broadcasting examples, one by one, through libbroadcast's C API.
 *
 * It follows the table of docs/semantics.md (section 3), which follows PyTorch's
 * "Broadcasting semantics" note: for each example it prints the operation and what the library
 * answers: the result shape and values, or the error message, and any warning. It is also the
 * test suite's one check of these examples (tests/c_suite.rs runs it, under the sanitizers too):
 * every result's shape and elements, both argument orders of the shape functions, every status,
 * the exact message texts and the last error's status, the warnings and their texts, and that a
 * refused call leaves its out-handle NULL and its target untouched.
 *
 * Build and run (from the repository root):
 *
 *     cargo build --release
 *     cc -std=c11 -Wall -Wextra -Iinclude examples/tour.c -Ltarget/release -lbroadcast \
 *        -Wl,-rpath,"$PWD/target/release" -o target/tour && ./target/tour
 *
 * Exit status: 0 when every example behaved as documented, 1 otherwise.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"

static int surprises = 0; /* examples that did not behave as documented */

/* ---------------------------------------------------------------------------------------------- */
/* Printing helpers                                                                                */
/* ---------------------------------------------------------------------------------------------- */

static void print_dims(const int64_t *dims, size_t ndim) {
    printf("(");
    for (size_t i = 0; i < ndim; i++) printf("%s%lld", i ? "," : "", (long long)dims[i]);
    printf(ndim == 1 ? ",)" : ")");
}

static void print_shape(const bc_tensor *t) {
    int64_t dims[16];
    size_t ndim = 0;
    if (bc_tensor_ndim(t, &ndim) != BC_OK || ndim > 16 || bc_tensor_shape(t, dims, 16) != BC_OK) {
        printf("(?)");
        return;
    }
    print_dims(dims, ndim);
}

/* Print a tensor as PyTorch's str(tensor) shows it (bc_tensor_format), every line after the first
 * indented by `indent`. */
static void print_values(const bc_tensor *t, const char *indent) {
    size_t len = 0;
    if (bc_tensor_format(t, NULL, 0, &len) != BC_OK) return;
    char *text = malloc(len + 1);
    if (!text || bc_tensor_format(t, text, len + 1, &len) != BC_OK) {
        free(text);
        return;
    }
    for (const char *line = text; line;) {
        const char *next = strchr(line, '\n');
        printf("%s%.*s\n", line == text ? "" : indent, (int)(next ? next - line : (long)strlen(line)), line);
        line = next ? next + 1 : NULL;
    }
    free(text);
}

/* The last error of this thread, as "[BC_ERR_SHAPE] message". */
static void print_error(int32_t status) {
    char msg[512];
    bc_last_error_message(msg, sizeof msg);
    printf("    error (%s): %s\n", bc_status_str(status), msg);
}

/* The warnings seen: how many, and the first and the last text. */
typedef struct {
    int count;
    char first[512], last[512];
} warnings_seen;

/* A warning handler: prints every warning the library emits, and keeps it. */
static void on_warning(void *user_data, const char *message) {
    warnings_seen *w = user_data;
    snprintf(w->count == 0 ? w->first : w->last, sizeof w->first, "%s", message);
    w->count++;
    printf("    warning: %s\n", message);
}

#define WARN_BROADCAST                                                                              \
    "self and other do not have the same shape, but are broadcastable, and have the same number "  \
    "of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather "    \
    "than viewing as 1-dimensional."
#define WARN_FALLBACK                                                                              \
    "self and other not broadcastable, but have the same number of elements.  Falling back to "    \
    "deprecated pointwise behavior."

/* A call the tour needs to succeed: a failure is printed and counted as a surprise. */
static bool succeeded(int32_t status, const char *call) {
    if (status != BC_OK) {
        surprises++;
        printf("    !!! %s failed:\n", call);
        print_error(status);
    }
    return status == BC_OK;
}

static void expect(bool ok, const char *what) {
    if (!ok) {
        surprises++;
        printf("    !!! not as documented: %s\n", what);
    }
}

/* The thread's last error is `text`, with status `status`. */
static bool last_error_is(const char *text, int32_t status) {
    char msg[512];
    bc_last_error_message(msg, sizeof msg);
    return strcmp(msg, text) == 0 && bc_last_error_status() == status;
}

static bool shape_is(const bc_tensor *t, const int64_t *dims, size_t ndim) {
    int64_t got[16];
    size_t n = 0;
    if (bc_tensor_ndim(t, &n) != BC_OK || n != ndim || bc_tensor_shape(t, got, 16) != BC_OK) return false;
    return memcmp(got, dims, ndim * sizeof(int64_t)) == 0;
}

/* The elements of float32 `t` are `want[0..n]`, exactly (in row-major order). */
static bool values_are(const bc_tensor *t, const float *want, size_t n) {
    int64_t numel = 0;
    if (bc_tensor_numel(t, &numel) != BC_OK || (size_t)numel != n) return false;
    float *v = malloc((n ? n : 1) * sizeof(float));
    bool ok = v && bc_tensor_copy_to(t, v, n * sizeof(float)) == BC_OK;
    for (size_t i = 0; ok && i < n; i++) ok = v[i] == want[i];
    free(v);
    return ok;
}

static bool all_equal(const bc_tensor *t, float value) {
    int64_t numel = 0;
    if (bc_tensor_numel(t, &numel) != BC_OK) return false;
    float *v = malloc((size_t)(numel ? numel : 1) * sizeof(float));
    bool ok = v && bc_tensor_copy_to(t, v, (size_t)numel * sizeof(float)) == BC_OK;
    for (int64_t i = 0; ok && i < numel; i++) ok = v[i] == value;
    free(v);
    return ok;
}

/* ---------------------------------------------------------------------------------------------- */
/* Examples 1-4: are two shapes broadcastable? (shapes only)                                       */
/* ---------------------------------------------------------------------------------------------- */

/* Prints the example (unless `number` is 0) and checks the shape functions in both argument
 * orders: broadcastable with result `want` (when `message` is NULL), or not, refused with
 * `message`. */
static void shapes_example(int number, const int64_t *a, size_t an, const int64_t *b, size_t bn,
                           const int64_t *want, size_t wn, const char *message, const char *note) {
    if (number) {
        printf("%2d. ", number);
        print_dims(a, an);
        printf(" with ");
        print_dims(b, bn);
        printf("\n");
    }
    for (int order = 0; order < 2; order++) {
        const int64_t *x = order ? b : a, *y = order ? a : b;
        size_t xn = order ? bn : an, yn = order ? an : bn;
        bool yes = !message;
        succeeded(bc_shape_is_broadcastable(x, xn, y, yn, &yes), "bc_shape_is_broadcastable");
        int64_t out[16];
        size_t nd = 99;
        int32_t st = bc_shape_broadcast(x, xn, y, yn, out, 16, &nd);
        if (order == 0 && number) {
            printf("    broadcastable: %s (%s)\n", yes ? "yes" : "no", note);
            if (st == BC_OK) {
                printf("    result shape ");
                print_dims(out, nd);
                printf("\n");
            } else {
                print_error(st);
            }
        }
        expect(yes == !message, "broadcastable?");
        if (message) {
            /* the message names the operands as given: it is checked in the documented order */
            expect(st == BC_ERR_SHAPE && (order == 1 || last_error_is(message, BC_ERR_SHAPE)),
                   "the shapes' error");
        } else {
            expect(st == BC_OK && nd == wn && memcmp(out, want, wn * sizeof *want) == 0,
                   "the broadcast shape");
        }
    }
}

/* A float32 tensor of `shape` holding `values`. */
static bc_tensor *tensor(const int64_t *shape, size_t ndim, const float *values, size_t n) {
    bc_tensor *t = NULL;
    succeeded(bc_tensor_from_data(BC_DTYPE_FLOAT32, shape, ndim, values, n * sizeof(float), &t),
              "bc_tensor_from_data");
    return t;
}

/* A float32 tensor of `shape` whose every element is `value`. */
static bc_tensor *full(const int64_t *shape, size_t ndim, double value) {
    bc_tensor *t = NULL;
    succeeded(bc_tensor_full(BC_DTYPE_FLOAT32, shape, ndim, value, &t), "bc_tensor_full");
    return t;
}

/* ---------------------------------------------------------------------------------------------- */
/* Examples 5-12: operations on tensors                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* out-of-place a + b; prints and returns the result (caller frees) or NULL (the out-handle a
 * failed call must leave NULL). */
static bc_tensor *add(const bc_tensor *a, const bc_tensor *b) {
    bc_tensor *r = (bc_tensor *)&surprises; /* not NULL: a refusal must set it to NULL */
    int32_t st = bc_add(a, b, &r);
    if (st == BC_OK) {
        printf("    result shape ");
        print_shape(r);
        printf("\n");
    } else {
        print_error(st);
        expect(r == NULL, "the out-handle of a refused call is NULL");
        r = NULL;
    }
    return r;
}

/* out-of-place a + b on tensors of ones. */
static bc_tensor *add_ones(const int64_t *a, size_t an, const int64_t *b, size_t bn) {
    bc_tensor *ta = full(a, an, 1.0), *tb = full(b, bn, 1.0);
    bc_tensor *r = add(ta, tb);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
    return r;
}

static const int32_t ARITHMETIC[] = {BC_OP_ADD, BC_OP_SUB, BC_OP_MUL, BC_OP_DIV};
#define MSG_2_AGAINST_3 "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"

int main(void) {
    warnings_seen w = {0};
    succeeded(bc_set_warning_handler(on_warning, &w), "bc_set_warning_handler");
    expect(!bc_get_broadcast_warning() && !bc_get_legacy_fallback(), "both switches off by default");

    printf("libbroadcast %s: the documented broadcasting examples\n", bc_version());
    printf("(docs/semantics.md, section 3; PyTorch's \"Broadcasting semantics\")\n\n");

    /* 1 */
    const int64_t s573[] = {5, 7, 3};
    shapes_example(1, s573, 3, s573, 3, s573, 3, NULL, "same shapes always are");
    float a105[105], b105[105], want[105];
    for (int i = 0; i < 105; i++) {
        a105[i] = (float)i;
        b105[i] = 0.5f - 2.0f * (float)i;
        want[i] = a105[i] + b105[i];
    }
    bc_tensor *a = tensor(s573, 3, a105, 105), *b = tensor(s573, 3, b105, 105);
    printf("    as tensors, a + b:\n");
    w.count = 0;
    bc_tensor *r = add(a, b);
    expect(r && shape_is(r, s573, 3) && values_are(r, want, 105), "a + b, element by element");
    expect(w.count == 0, "no warning");
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 2 */
    const int64_t s0[] = {0}, s22[] = {2, 2};
    const char *msg2 = "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1";
    shapes_example(2, s0, 1, s22, 2, NULL, 0, msg2, "(0,) is 1-d; its only size, 0, meets 2");
    a = b = NULL;
    succeeded(bc_tensor_empty(BC_DTYPE_FLOAT32, s0, 1, &a), "bc_tensor_empty");
    succeeded(bc_tensor_empty(BC_DTYPE_FLOAT32, s22, 2, &b), "bc_tensor_empty");
    bc_last_error_clear();
    printf("    as tensors, a + b:\n");
    r = add(a, b);
    expect(r == NULL && last_error_is(msg2, BC_ERR_SHAPE), "the tensors' error");
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 3 */
    const int64_t s5341[] = {5, 3, 4, 1}, s311[] = {3, 1, 1};
    shapes_example(3, s5341, 4, s311, 3, s5341, 4, NULL, "trailing sizes 1/1, 4/1, 3/3, 5/missing");
    a = full(s5341, 4, 1.5);
    b = full(s311, 3, 0.25);
    r = NULL;
    printf("    as tensors, 1.5 * 0.25 and 0.25 + 1.5:\n");
    succeeded(bc_mul(a, b, &r), "bc_mul");
    expect(r && shape_is(r, s5341, 4) && all_equal(r, 0.375f), "1.5 * 0.25 everywhere");
    bc_tensor_free(r);
    r = add(b, a); /* the operands' order does not change the shape */
    expect(r && shape_is(r, s5341, 4) && all_equal(r, 1.75f), "0.25 + 1.5 everywhere");
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 4 */
    const int64_t s5241[] = {5, 2, 4, 1};
    shapes_example(4, s5241, 4, s311, 3, NULL, 0, MSG_2_AGAINST_3, "in the 3rd trailing dimension 2 != 3");
    printf("\n");

    /* 5 */
    printf(" 5. (5,1,4,1) + (3,1,1)\n");
    const int64_t s5141[] = {5, 1, 4, 1};
    shapes_example(0, s5141, 4, s311, 3, s5341, 4, NULL, "");
    float a20[20], b3[3] = {100.0f, 200.0f, 300.0f}, want60[60];
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 4; k++) a20[i * 4 + k] = (float)(i * 10 + k);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) want60[(i * 3 + j) * 4 + k] = a20[i * 4 + k] + b3[j];
    a = tensor(s5141, 4, a20, 20);
    b = tensor(s311, 3, b3, 3);
    w.count = 0;
    r = add(a, b);
    expect(r && shape_is(r, s5341, 4) && values_are(r, want60, 60), "a + b, element by element");
    bc_tensor_free(r);
    r = NULL;
    succeeded(bc_binary(BC_OP_ADD, a, b, &r), "bc_binary");
    expect(r && shape_is(r, s5341, 4) && values_are(r, want60, 60), "bc_binary(BC_OP_ADD) the same");
    expect(w.count == 0, "no warning");
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 6 */
    printf(" 6. (1,) + (3,1,7)\n");
    const int64_t s1[] = {1}, s317[] = {3, 1, 7};
    shapes_example(0, s1, 1, s317, 3, s317, 3, NULL, "");
    float half[1] = {0.5f}, b21[21], want21[21];
    for (int i = 0; i < 21; i++) {
        b21[i] = (float)(i - 10);
        want21[i] = 0.5f + b21[i];
    }
    a = tensor(s1, 1, half, 1);
    b = tensor(s317, 3, b21, 21);
    r = add(a, b);
    expect(r && shape_is(r, s317, 3) && values_are(r, want21, 21), "0.5 + b, element by element");
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 7 */
    printf(" 7. ones(5,2,4,1) + ones(3,1,1)\n");
    r = add_ones(s5241, 4, s311, 3);
    expect(r == NULL && last_error_is(MSG_2_AGAINST_3, BC_ERR_SHAPE), "the size-mismatch error");
    a = full(s5241, 4, 1.0);
    b = full(s311, 3, 1.0);
    for (size_t i = 0; i < sizeof ARITHMETIC / sizeof *ARITHMETIC; i++) {
        bc_tensor *ri = (bc_tensor *)&surprises;
        bc_last_error_clear();
        expect(bc_binary(ARITHMETIC[i], a, b, &ri) == BC_ERR_SHAPE && ri == NULL &&
                   last_error_is(MSG_2_AGAINST_3, BC_ERR_SHAPE),
               "the same error from sub, mul and div");
    }
    size_t nd = 0;
    succeeded(bc_tensor_ndim(a, &nd), "bc_tensor_ndim");
    expect(last_error_is(MSG_2_AGAINST_3, BC_ERR_SHAPE), "the error kept after a call that succeeds");
    bc_tensor_free(a);
    bc_tensor_free(b);
    printf("\n");

    /* 8 */
    printf(" 8. in place: x (5,3,4,1) += (3,1,1)\n");
    float xbuf[60], other3[3] = {1000.0f, 2000.0f, 3000.0f};
    for (int i = 0; i < 60; i++) xbuf[i] = (float)i;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) want60[(i * 3 + j) * 4 + k] = xbuf[(i * 3 + j) * 4 + k] + other3[j];
    /* x wraps xbuf, so the write is seen there directly */
    bc_tensor *x = NULL, *y = tensor(s311, 3, other3, 3);
    succeeded(bc_tensor_wrap(BC_DTYPE_FLOAT32, xbuf, sizeof xbuf, s5341, NULL, 4, 0, NULL, NULL, &x),
              "bc_tensor_wrap");
    int32_t st = bc_add_inplace(x, y);
    if (st == BC_OK) {
        printf("    allowed; x keeps shape ");
        print_shape(x);
        printf("\n");
    } else {
        print_error(st);
    }
    expect(st == BC_OK && shape_is(x, s5341, 4) && values_are(x, want60, 60) &&
               memcmp(xbuf, want60, sizeof xbuf) == 0,
           "in place allowed, shape kept, written in the caller's memory");
    succeeded(bc_binary_inplace(BC_OP_SUB, x, y), "bc_binary_inplace"); /* and undone */
    for (int i = 0; i < 60; i++) want60[i] = (float)i;
    expect(shape_is(x, s5341, 4) && values_are(x, want60, 60), "x -= the same gives x back");
    bc_tensor_free(x);
    bc_tensor_free(y);
    printf("\n");

    /* 9 */
    printf(" 9. in place: x (1,3,1) += (3,1,7)\n");
    const char *msg9 = "The expanded size of the tensor (1) must match the existing size (7) at non-singleton "
                       "dimension 2.";
    const int64_t s131[] = {1, 3, 1};
    float x3[3] = {1.25f, -2.5f, 3.75f}, x3_before[3] = {1.25f, -2.5f, 3.75f};
    x = NULL;
    succeeded(bc_tensor_wrap(BC_DTYPE_FLOAT32, x3, sizeof x3, s131, NULL, 3, 0, NULL, NULL, &x),
              "bc_tensor_wrap");
    y = tensor(s317, 3, b21, 21);
    w.count = 0;
    bc_last_error_clear();
    st = bc_add_inplace(x, y);
    if (st == BC_OK) printf("    allowed?!\n");
    else print_error(st);
    expect(st == BC_ERR_SHAPE && last_error_is(msg9, BC_ERR_SHAPE), "the in-place expand error");
    for (size_t i = 0; i < sizeof ARITHMETIC / sizeof *ARITHMETIC; i++) {
        bc_last_error_clear();
        expect(bc_binary_inplace(ARITHMETIC[i], x, y) == BC_ERR_SHAPE && last_error_is(msg9, BC_ERR_SHAPE),
               "the same error from every operation");
    }
    expect(bc_sub_inplace(x, y) == BC_ERR_SHAPE && bc_mul_inplace(x, y) == BC_ERR_SHAPE &&
               bc_div_inplace(x, y) == BC_ERR_SHAPE,
           "the named in-place forms refuse too");
    printf("    x is untouched: shape ");
    print_shape(x);
    printf("\n");
    expect(shape_is(x, s131, 3) && values_are(x, x3_before, 3) && memcmp(x3, x3_before, sizeof x3) == 0,
           "x untouched");
    expect(w.count == 0, "no warning");
    r = add(x, y); /* out of place it broadcasts: (3,3,7) */
    const int64_t s337[] = {3, 3, 7};
    expect(r && shape_is(r, s337, 3), "x + y out of place has shape (3,3,7)");
    bc_tensor_free(r);
    bc_tensor_free(x);
    bc_tensor_free(y);
    printf("\n");

    /* 10 */
    printf("10. ones(4,1) + randn(4)\n");
    const int64_t s41[] = {4, 1}, s4[] = {4}, s44[] = {4, 4};
    /* a draw of randn(4), rounded to values that 1 + v holds exactly */
    const float randn[4] = {-0.6875f, 1.4375f, 0.1875f, -2.125f};
    float want16[16];
    for (int row = 0; row < 4; row++)
        for (int col = 0; col < 4; col++) want16[row * 4 + col] = 1.0f + randn[col];
    bc_tensor *ones41 = full(s41, 2, 1.0), *rn = tensor(s4, 1, randn, 4);
    printf("    randn(4) = ");
    print_values(rn, "");
    w.count = 0;
    r = add(ones41, rn);
    if (r) {
        printf("    (it was (4,1) before broadcasting); each row is 1 + randn(4):\n      ");
        print_values(r, "      ");
    }
    expect(r && shape_is(r, s44, 2) && values_are(r, want16, 16), "(4,4), each row 1 + randn(4)");
    expect(w.count == 0, "no warning while the warning switch is off");
    bc_tensor_free(r);
    bc_tensor_free(rn);
    printf("\n");

    /* 11 */
    printf("11. with the broadcast warning on: ones(4,1) + ones(4)\n");
    succeeded(bc_set_broadcast_warning(true), "bc_set_broadcast_warning");
    expect(bc_get_broadcast_warning(), "the warning switch reads back on");
    w.count = 0;
    bc_tensor *ones4 = full(s4, 1, 1.0); /* making a tensor warns about nothing */
    bc_last_error_clear();
    r = add(ones41, ones4);
    if (r) printf("    every element %s 2\n", all_equal(r, 2.0f) ? "is" : "is NOT");
    expect(r && shape_is(r, s44, 2) && all_equal(r, 2.0f), "(4,4) of 2s");
    expect(bc_last_error_status() == BC_OK, "a warning is not an error");
    expect(w.count == 1 && strcmp(w.first, WARN_BROADCAST) == 0, "exactly one warning, PyTorch's text");
    bc_tensor_free(r);
    /* equal shapes never warn, nor do broadcastable shapes whose numbers of elements differ */
    const int64_t s3[] = {3};
    bc_tensor *ones3 = full(s3, 1, 1.0);
    r = NULL;
    succeeded(bc_add(ones41, ones41, &r), "bc_add");
    bc_tensor_free(r);
    r = NULL;
    succeeded(bc_add(ones41, ones3, &r), "bc_add");
    bc_tensor_free(r);
    expect(w.count == 1, "no warning for equal shapes or different numbers of elements");
    succeeded(bc_set_broadcast_warning(false), "bc_set_broadcast_warning");
    expect(!bc_get_broadcast_warning(), "the warning switch reads back off");
    r = NULL;
    succeeded(bc_add(ones41, ones4, &r), "bc_add");
    expect(w.count == 1, "no warning once the switch is off");
    bc_tensor_free(r);
    bc_tensor_free(ones3);
    bc_tensor_free(ones4);
    bc_tensor_free(ones41);
    printf("\n");

    /* 12 */
    printf("12. with the legacy 1-D fallback on: ones(4) + ones(2,2)\n");
    printf("    (fallback off, the default:)\n");
    w.count = 0;
    r = add_ones(s4, 1, s22, 2);
    expect(r == NULL &&
               last_error_is("The size of tensor a (4) must match the size of tensor b (2) at non-singleton "
                             "dimension 1",
                             BC_ERR_SHAPE) &&
               w.count == 0,
           "refused, without a warning");
    printf("    (fallback on:)\n");
    succeeded(bc_set_legacy_fallback(true), "bc_set_legacy_fallback");
    expect(bc_get_legacy_fallback(), "the fallback switch reads back on");
    r = add_ones(s4, 1, s22, 2);
    if (r) {
        printf("    values: ");
        print_values(r, "");
    }
    expect(r && shape_is(r, s4, 1) && all_equal(r, 2.0f), "(4,) of 2s");
    expect(w.count == 1 && strcmp(w.first, WARN_FALLBACK) == 0, "exactly one warning, PyTorch's text");
    bc_tensor_free(r);
    /* element by element in the order of the flattened operands, in the first operand's shape */
    const float v4[4] = {1.0f, 2.0f, 3.0f, 4.0f}, v22[4] = {10.0f, 20.0f, 30.0f, 40.0f};
    const float sums[4] = {11.0f, 22.0f, 33.0f, 44.0f};
    a = tensor(s4, 1, v4, 4);
    b = tensor(s22, 2, v22, 4);
    r = add(a, b);
    expect(r && shape_is(r, s4, 1) && values_are(r, sums, 4), "(4,): 11, 22, 33, 44");
    expect(w.count == 2 && strcmp(w.last, WARN_FALLBACK) == 0, "a warning each time");
    bc_tensor_free(r);
    r = add(b, a);
    expect(r && shape_is(r, s22, 2) && values_are(r, sums, 4), "(2,2): 11, 22, 33, 44");
    expect(w.count == 3, "a warning each time");
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
    succeeded(bc_set_legacy_fallback(false), "bc_set_legacy_fallback");
    printf("\n");

    succeeded(bc_set_warning_handler(NULL, NULL), "bc_set_warning_handler");
    if (surprises == 0) printf("All 12 examples behaved as documented.\n");
    else printf("%d check(s) did not behave as documented.\n", surprises);
    return surprises == 0 ? 0 : 1;
}
