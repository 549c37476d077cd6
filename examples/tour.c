/*
 * tour.c: the documented broadcasting examples, one by one, through libbroadcast's C API.
 *
 * It follows the table of docs/semantics.md (section 3), which follows PyTorch's
 * "Broadcasting semantics" note: for each example it prints the operation and what the library
 * answers: the result shape and values, or the error message, and any warning.
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

/* A warning handler: prints every warning the library emits, and counts them. */
static void on_warning(void *user_data, const char *message) {
    int *count = user_data;
    (*count)++;
    printf("    warning: %s\n", message);
}

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

static bool last_error_is(const char *text) {
    char msg[512];
    bc_last_error_message(msg, sizeof msg);
    return strcmp(msg, text) == 0;
}

static bool shape_is(const bc_tensor *t, const int64_t *dims, size_t ndim) {
    int64_t got[16];
    size_t n = 0;
    if (bc_tensor_ndim(t, &n) != BC_OK || n != ndim || bc_tensor_shape(t, got, 16) != BC_OK) return false;
    return memcmp(got, dims, ndim * sizeof(int64_t)) == 0;
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
/* Examples 1-4: are two shapes broadcastable? (shapes only, no tensors)                           */
/* ---------------------------------------------------------------------------------------------- */

static void shapes_example(int number, const int64_t *a, size_t an, const int64_t *b, size_t bn,
                           bool documented, const char *note) {
    printf("%2d. ", number);
    print_dims(a, an);
    printf(" with ");
    print_dims(b, bn);
    printf("\n");
    bool yes = false;
    succeeded(bc_shape_is_broadcastable(a, an, b, bn, &yes), "bc_shape_is_broadcastable");
    printf("    broadcastable: %s (%s)\n", yes ? "yes" : "no", note);
    expect(yes == documented, "broadcastable?");
    int64_t out[16];
    size_t nd = 0;
    int32_t st = bc_shape_broadcast(a, an, b, bn, out, 16, &nd);
    if (st == BC_OK) {
        printf("    result shape ");
        print_dims(out, nd);
        printf("\n");
    } else {
        print_error(st);
    }
    printf("\n");
}

/* ---------------------------------------------------------------------------------------------- */
/* Examples 5-12: operations on tensors                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* out-of-place a + b on tensors of ones; prints and returns the result (caller frees) or NULL. */
static bc_tensor *add_ones(const int64_t *a, size_t an, const int64_t *b, size_t bn) {
    bc_tensor *ta = NULL, *tb = NULL, *r = NULL;
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, a, an, &ta), "bc_tensor_ones");
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, b, bn, &tb), "bc_tensor_ones");
    int32_t st = bc_add(ta, tb, &r);
    if (st == BC_OK) {
        printf("    result shape ");
        print_shape(r);
        printf("\n");
    } else {
        print_error(st);
    }
    bc_tensor_free(ta);
    bc_tensor_free(tb);
    return r;
}

int main(void) {
    int warnings = 0;
    succeeded(bc_set_warning_handler(on_warning, &warnings), "bc_set_warning_handler");

    printf("libbroadcast %s: the documented broadcasting examples\n", bc_version());
    printf("(docs/semantics.md, section 3; PyTorch's \"Broadcasting semantics\")\n\n");

    /* 1-4: shapes */
    const int64_t s573[] = {5, 7, 3};
    shapes_example(1, s573, 3, s573, 3, true, "same shapes always are");
    const int64_t s0[] = {0}, s22[] = {2, 2};
    shapes_example(2, s0, 1, s22, 2, false, "(0,) is 1-d; its only size, 0, meets 2");
    const int64_t s5341[] = {5, 3, 4, 1}, s311[] = {3, 1, 1};
    shapes_example(3, s5341, 4, s311, 3, true, "trailing sizes 1/1, 4/1, 3/3, 5/missing");
    const int64_t s5241[] = {5, 2, 4, 1};
    shapes_example(4, s5241, 4, s311, 3, false, "in the 3rd trailing dimension 2 != 3");

    /* 5 */
    printf(" 5. ones(5,1,4,1) + ones(3,1,1)\n");
    const int64_t s5141[] = {5, 1, 4, 1};
    bc_tensor *r = add_ones(s5141, 4, s311, 3);
    expect(r && shape_is(r, s5341, 4), "result shape (5,3,4,1)");
    bc_tensor_free(r);
    printf("\n");

    /* 6 */
    printf(" 6. ones(1) + ones(3,1,7)\n");
    const int64_t s1[] = {1}, s317[] = {3, 1, 7};
    r = add_ones(s1, 1, s317, 3);
    expect(r && shape_is(r, s317, 3), "result shape (3,1,7)");
    bc_tensor_free(r);
    printf("\n");

    /* 7 */
    printf(" 7. ones(5,2,4,1) + ones(3,1,1)\n");
    r = add_ones(s5241, 4, s311, 3);
    expect(r == NULL && last_error_is("The size of tensor a (2) must match the size of tensor b (3) at "
                                      "non-singleton dimension 1"),
           "the size-mismatch error");
    bc_tensor_free(r);
    printf("\n");

    /* 8 */
    printf(" 8. in place: x = ones(5,3,4,1); x += ones(3,1,1)\n");
    bc_tensor *x = NULL, *y = NULL;
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, s5341, 4, &x), "bc_tensor_ones");
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, s311, 3, &y), "bc_tensor_ones");
    int32_t st = bc_add_inplace(x, y);
    if (st == BC_OK) {
        printf("    allowed; x keeps shape ");
        print_shape(x);
        printf(", every element now 2\n");
    } else {
        print_error(st);
    }
    expect(st == BC_OK && shape_is(x, s5341, 4) && all_equal(x, 2.0f), "in place allowed, shape kept");
    bc_tensor_free(x);
    bc_tensor_free(y);
    printf("\n");

    /* 9 */
    printf(" 9. in place: x = ones(1,3,1); x += ones(3,1,7)\n");
    const int64_t s131[] = {1, 3, 1};
    x = y = NULL;
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, s131, 3, &x), "bc_tensor_ones");
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, s317, 3, &y), "bc_tensor_ones");
    st = bc_add_inplace(x, y);
    if (st == BC_OK) printf("    allowed?!\n");
    else print_error(st);
    expect(st == BC_ERR_SHAPE && last_error_is("The expanded size of the tensor (1) must match the existing "
                                                "size (7) at non-singleton dimension 2."),
           "the in-place expand error");
    printf("    x is untouched: shape ");
    print_shape(x);
    printf(", every element still 1\n");
    expect(shape_is(x, s131, 3) && all_equal(x, 1.0f), "x untouched");
    bc_tensor_free(x);
    bc_tensor_free(y);
    printf("\n");

    /* 10 */
    printf("10. ones(4,1) + randn(4)\n");
    const int64_t s41[] = {4, 1}, s4[] = {4}, s44[] = {4, 4};
    const float randn[4] = {0.4967f, -0.1383f, 0.6477f, 1.5230f}; /* one draw of randn(4) */
    bc_tensor *ones41 = NULL, *rn = NULL;
    succeeded(bc_tensor_ones(BC_DTYPE_FLOAT32, s41, 2, &ones41), "bc_tensor_ones");
    succeeded(bc_tensor_from_data(BC_DTYPE_FLOAT32, s4, 1, randn, sizeof randn, &rn), "bc_tensor_from_data");
    printf("    randn(4) = ");
    print_values(rn, "");
    r = NULL;
    st = bc_add(ones41, rn, &r);
    if (st == BC_OK) {
        printf("    result shape ");
        print_shape(r);
        printf(" (it was (4,1) before broadcasting); each row is 1 + randn(4):\n      ");
        print_values(r, "      ");
    } else {
        print_error(st);
    }
    expect(st == BC_OK && shape_is(r, s44, 2), "result shape (4,4)");
    bc_tensor_free(r);
    bc_tensor_free(rn);
    printf("\n");

    /* 11 */
    printf("11. with the broadcast warning on: ones(4,1) + ones(4)\n");
    succeeded(bc_set_broadcast_warning(true), "bc_set_broadcast_warning");
    warnings = 0;
    r = add_ones(s41, 2, s4, 1);
    if (r) printf("    every element %s 2\n", all_equal(r, 2.0f) ? "is" : "is NOT");
    expect(r && shape_is(r, s44, 2) && all_equal(r, 2.0f), "(4,4) of 2s");
    expect(warnings == 1, "exactly one warning");
    succeeded(bc_set_broadcast_warning(false), "bc_set_broadcast_warning");
    bc_tensor_free(r);
    bc_tensor_free(ones41);
    printf("\n");

    /* 12 */
    printf("12. with the legacy 1-D fallback on: ones(4) + ones(2,2)\n");
    printf("    (fallback off, the default:)\n");
    r = add_ones(s4, 1, s22, 2);
    bc_tensor_free(r);
    printf("    (fallback on:)\n");
    succeeded(bc_set_legacy_fallback(true), "bc_set_legacy_fallback");
    warnings = 0;
    r = add_ones(s4, 1, s22, 2);
    if (r) {
        printf("    values: ");
        print_values(r, "");
    }
    expect(r && shape_is(r, s4, 1) && all_equal(r, 2.0f), "(4,) of 2s");
    expect(warnings == 1, "exactly one warning");
    succeeded(bc_set_legacy_fallback(false), "bc_set_legacy_fallback");
    bc_tensor_free(r);
    printf("\n");

    succeeded(bc_set_warning_handler(NULL, NULL), "bc_set_warning_handler");
    if (surprises == 0) printf("All 12 examples behaved as documented.\n");
    else printf("%d check(s) did not behave as documented.\n", surprises);
    return surprises == 0 ? 0 : 1;
}
