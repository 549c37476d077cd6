/*
 * documented_examples.c: the 12 documented examples of docs/semantics.md, section 3,
 * one named test per row, reproduced through the C API.
 *
 * Each test checks result shapes, element values, status codes, the exact message texts (through
 * bc_last_error_message) and the warnings (through bc_set_warning_handler). RUN_TEST puts the
 * settings back to their defaults (warning off, fallback off, handler NULL) after every test.
 */
#include "check.h"

#define MSG_ROW2 "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1"
#define MSG_ROW4_7 "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"
#define MSG_ROW9                                                                                   \
    "The expanded size of the tensor (1) must match the existing size (7) at non-singleton "       \
    "dimension 2."

/* Shape-only checks shared by the broadcastable rows: is_broadcastable says yes and
 * bc_shape_broadcast gives `expected` (in both argument orders). */
static void shapes_broadcast_to(const int64_t *a, size_t an, const int64_t *b, size_t bn,
                                const int64_t *expected, size_t en) {
    bool yes = false;
    CHECK_OK(bc_shape_is_broadcastable(a, an, b, bn, &yes));
    CHECK(yes);
    yes = false;
    CHECK_OK(bc_shape_is_broadcastable(b, bn, a, an, &yes));
    CHECK(yes);

    int64_t out[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    size_t nd = 99;
    CHECK_OK(bc_shape_broadcast(a, an, b, bn, out, COUNT_OF(out), &nd));
    check_dims_impl(out, nd, expected, en, __FILE__, __LINE__, "bc_shape_broadcast(a, b)");
    nd = 99;
    CHECK_OK(bc_shape_broadcast(b, bn, a, an, out, COUNT_OF(out), &nd));
    check_dims_impl(out, nd, expected, en, __FILE__, __LINE__, "bc_shape_broadcast(b, a)");
}

/* Shape-only checks for the rows that are not broadcastable: is_broadcastable says no (a success),
 * and bc_shape_broadcast fails with BC_ERR_SHAPE and the exact message. */
static void shapes_not_broadcastable(const int64_t *a, size_t an, const int64_t *b, size_t bn,
                                     const char *message) {
    bool yes = true;
    CHECK_OK(bc_shape_is_broadcastable(a, an, b, bn, &yes));
    CHECK(!yes);
    yes = true;
    CHECK_OK(bc_shape_is_broadcastable(b, bn, a, an, &yes));
    CHECK(!yes);

    int64_t out[8] = {0};
    size_t nd = 0;
    CHECK_STATUS(bc_shape_broadcast(a, an, b, bn, out, COUNT_OF(out), &nd), BC_ERR_SHAPE);
    CHECK_LAST_ERROR(message);
    CHECK_LAST_STATUS(BC_ERR_SHAPE);
}

/* Row 1: (5,7,3) with (5,7,3): broadcastable, result (5,7,3). */
static void test_row01_same_shapes(void) {
    const int64_t s[] = {5, 7, 3};
    shapes_broadcast_to(s, 3, s, 3, s, 3);

    check_warnings w;
    capture_warnings(&w);
    float da[105], db[105], want[105];
    fill_arange(da, 105, 0.0f, 1.0f);
    fill_arange(db, 105, 0.5f, -2.0f);
    for (size_t i = 0; i < 105; i++) want[i] = da[i] + db[i];
    bc_tensor *a = MAKE_F32(s, 3, da, 105);
    bc_tensor *b = MAKE_F32(s, 3, db, 105);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 5, 7, 3);
    CHECK_F32_ARRAY(r, want, 105);
    CHECK_EQ_INT(w.count, 0);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 2: (0,) with (2,2): not broadcastable; the 1-d tensor's only size, 0, meets 2. */
static void test_row02_empty_1d_vs_2x2(void) {
    const int64_t a_shape[] = {0};
    const int64_t b_shape[] = {2, 2};
    shapes_not_broadcastable(a_shape, 1, b_shape, 2, MSG_ROW2);

    bc_tensor *a = NULL, *b = NULL;
    CHECK_OK(bc_tensor_empty(BC_DTYPE_FLOAT32, a_shape, 1, &a));
    CHECK_OK(bc_tensor_empty(BC_DTYPE_FLOAT32, b_shape, 2, &b));
    bc_tensor *r = SENTINEL; /* a failure must set it to NULL */
    bc_last_error_clear();
    CHECK_STATUS(bc_add(a, b, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR(MSG_ROW2);
    CHECK_LAST_STATUS(BC_ERR_SHAPE);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 3: (5,3,4,1) with (3,1,1): broadcastable (trailing sizes 1/1, 4/1, 3/3, 5/missing). */
static void test_row03_broadcastable_4d_3d(void) {
    const int64_t a_shape[] = {5, 3, 4, 1};
    const int64_t b_shape[] = {3, 1, 1};
    shapes_broadcast_to(a_shape, 4, b_shape, 3, a_shape, 4);

    bc_tensor *a = MAKE_FULL(BC_DTYPE_FLOAT32, a_shape, 4, 1.5);
    bc_tensor *b = MAKE_FULL(BC_DTYPE_FLOAT32, b_shape, 3, 0.25);
    bc_tensor *r = NULL;
    CHECK_OK(bc_mul(a, b, &r));
    CHECK_SHAPE(r, 5, 3, 4, 1);
    CHECK_F32_ALL(r, 0.375f);
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_add(b, a, &r)); /* operand order does not matter for the shape */
    CHECK_SHAPE(r, 5, 3, 4, 1);
    CHECK_F32_ALL(r, 1.75f);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 4: (5,2,4,1) with (3,1,1): not broadcastable, in the 3rd trailing dimension 2 != 3. */
static void test_row04_not_broadcastable_4d_3d(void) {
    const int64_t a_shape[] = {5, 2, 4, 1};
    const int64_t b_shape[] = {3, 1, 1};
    bool yes = true;
    CHECK_OK(bc_shape_is_broadcastable(a_shape, 4, b_shape, 3, &yes));
    CHECK(!yes);
    int64_t out[8] = {0};
    size_t nd = 0;
    CHECK_STATUS(bc_shape_broadcast(a_shape, 4, b_shape, 3, out, COUNT_OF(out), &nd), BC_ERR_SHAPE);
    CHECK_LAST_ERROR(MSG_ROW4_7);

    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 4, &a));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, b_shape, 3, &b));
    bool ok = true;
    CHECK_OK(bc_shape_is_broadcastable(a_shape, 4, b_shape, 3, &ok));
    CHECK(!ok);
    CHECK_STATUS(bc_sub(a, b, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR(MSG_ROW4_7);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 5: (5,1,4,1) + (3,1,1) -> (5,3,4,1). */
static void test_row05_add_5x1x4x1_3x1x1(void) {
    const int64_t a_shape[] = {5, 1, 4, 1};
    const int64_t b_shape[] = {3, 1, 1};
    const int64_t r_shape[] = {5, 3, 4, 1};
    shapes_broadcast_to(a_shape, 4, b_shape, 3, r_shape, 4);

    float da[20], db[3] = {100.0f, 200.0f, 300.0f}, want[60];
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 4; k++) da[i * 4 + k] = (float)(i * 10 + k);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) want[(i * 3 + j) * 4 + k] = da[i * 4 + k] + db[j];

    check_warnings w;
    capture_warnings(&w);
    bc_tensor *a = MAKE_F32(a_shape, 4, da, 20);
    bc_tensor *b = MAKE_F32(b_shape, 3, db, 3);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 5, 3, 4, 1);
    CHECK_F32_ARRAY(r, want, 60);
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_binary(BC_OP_ADD, a, b, &r));
    CHECK_SHAPE(r, 5, 3, 4, 1);
    CHECK_F32_ARRAY(r, want, 60);
    CHECK_EQ_INT(w.count, 0);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 6: (1,) + (3,1,7) -> (3,1,7). */
static void test_row06_add_1_3x1x7(void) {
    const int64_t a_shape[] = {1};
    const int64_t b_shape[] = {3, 1, 7};
    shapes_broadcast_to(a_shape, 1, b_shape, 3, b_shape, 3);

    float da[1] = {0.5f}, db[21], want[21];
    fill_arange(db, 21, -10.0f, 1.0f);
    for (int i = 0; i < 21; i++) want[i] = 0.5f + db[i];
    bc_tensor *a = MAKE_F32(a_shape, 1, da, 1);
    bc_tensor *b = MAKE_F32(b_shape, 3, db, 21);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 3, 1, 7);
    CHECK_F32_ARRAY(r, want, 21);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 7: (5,2,4,1) + (3,1,1) is an error with the exact text. */
static void test_row07_add_error_message(void) {
    const int64_t a_shape[] = {5, 2, 4, 1};
    const int64_t b_shape[] = {3, 1, 1};
    shapes_not_broadcastable(a_shape, 4, b_shape, 3, MSG_ROW4_7);

    bc_tensor *a = NULL, *b = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 4, &a));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, b_shape, 3, &b));
    const int32_t ops[] = {BC_OP_ADD, BC_OP_SUB, BC_OP_MUL, BC_OP_DIV};
    for (size_t i = 0; i < COUNT_OF(ops); i++) {
        bc_tensor *r = SENTINEL;
        bc_last_error_clear();
        CHECK_STATUS(bc_binary(ops[i], a, b, &r), BC_ERR_SHAPE);
        CHECK(r == NULL);
        CHECK_LAST_ERROR(MSG_ROW4_7);
        CHECK_LAST_STATUS(BC_ERR_SHAPE);
    }
    /* the error survives a later successful call (errno-like) */
    size_t nd = 0;
    CHECK_OK(bc_tensor_ndim(a, &nd));
    CHECK_LAST_ERROR(MSG_ROW4_7);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 8: in place (5,3,4,1) += (3,1,1) is allowed; self keeps shape (5,3,4,1). */
static void test_row08_inplace_allowed(void) {
    const int64_t s_shape[] = {5, 3, 4, 1};
    const int64_t o_shape[] = {3, 1, 1};
    float buf[60], want[60], od[3] = {1000.0f, 2000.0f, 3000.0f};
    fill_arange(buf, 60, 0.0f, 1.0f);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                int idx = (i * 3 + j) * 4 + k;
                want[idx] = buf[idx] + od[j];
            }

    /* self wraps our buffer, so the write can be seen there directly */
    bc_tensor *self = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, s_shape, NULL, 4, 0, NULL, NULL, &self));
    bc_tensor *other = MAKE_F32(o_shape, 3, od, 3);
    CHECK_OK(bc_add_inplace(self, other));
    CHECK_SHAPE(self, 5, 3, 4, 1);
    CHECK_F32_ARRAY(self, want, 60);
    for (int i = 0; i < 60; i++) {
        if (buf[i] != want[i]) {
            CHECK(buf[i] == want[i]);
            printf("        at %d: %g vs %g\n", i, (double)buf[i], (double)want[i]);
            break;
        }
    }

    /* the same through bc_binary_inplace with subtraction undoes it */
    CHECK_OK(bc_binary_inplace(BC_OP_SUB, self, other));
    CHECK_SHAPE(self, 5, 3, 4, 1);
    for (int i = 0; i < 60; i++) want[i] = (float)i;
    CHECK_F32_ARRAY(self, want, 60);
    bc_tensor_free(self);
    bc_tensor_free(other);
}

/* Row 9: in place (1,3,1) += (3,1,7) is an error; self's data is unchanged. */
static void test_row09_inplace_refused(void) {
    const int64_t s_shape[] = {1, 3, 1};
    const int64_t o_shape[] = {3, 1, 7};
    float buf[3] = {1.25f, -2.5f, 3.75f};
    float od[21];
    fill_arange(od, 21, 1.0f, 1.0f);

    check_warnings w;
    capture_warnings(&w);
    bc_tensor *self = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, s_shape, NULL, 3, 0, NULL, NULL, &self));
    bc_tensor *other = MAKE_F32(o_shape, 3, od, 21);

    bc_last_error_clear();
    CHECK_STATUS(bc_add_inplace(self, other), BC_ERR_SHAPE);
    CHECK_LAST_ERROR(MSG_ROW9);
    CHECK_LAST_STATUS(BC_ERR_SHAPE);

    const int32_t ops[] = {BC_OP_ADD, BC_OP_SUB, BC_OP_MUL, BC_OP_DIV};
    for (size_t i = 0; i < COUNT_OF(ops); i++) {
        bc_last_error_clear();
        CHECK_STATUS(bc_binary_inplace(ops[i], self, other), BC_ERR_SHAPE);
        CHECK_LAST_ERROR(MSG_ROW9);
    }
    CHECK_STATUS(bc_mul_inplace(self, other), BC_ERR_SHAPE);
    CHECK_STATUS(bc_div_inplace(self, other), BC_ERR_SHAPE);
    CHECK_STATUS(bc_sub_inplace(self, other), BC_ERR_SHAPE);

    /* self is untouched: same shape, same data (seen through the library and in our buffer) */
    CHECK_SHAPE(self, 1, 3, 1);
    CHECK_F32(self, 1.25f, -2.5f, 3.75f);
    CHECK_EQ_DBL(buf[0], 1.25);
    CHECK_EQ_DBL(buf[1], -2.5);
    CHECK_EQ_DBL(buf[2], 3.75);
    CHECK_EQ_INT(w.count, 0);

    /* the out-of-place form is fine: (1,3,1) + (3,1,7) -> (3,3,7) */
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(self, other, &r));
    CHECK_SHAPE(r, 3, 3, 7);
    bc_tensor_free(r);
    bc_tensor_free(self);
    bc_tensor_free(other);
}

/* Row 10: ones(4,1) + randn(4) -> (4,4), each row is 1 + randn(4) (once it was (4,1)). */
static void test_row10_ones_plus_randn(void) {
    const int64_t a_shape[] = {4, 1};
    const int64_t b_shape[] = {4};
    /* "random" values, chosen exactly representable so that 1 + v is exact */
    const float randn[4] = {-0.6875f, 1.4375f, 0.1875f, -2.125f};

    check_warnings w;
    capture_warnings(&w);
    CHECK(!bc_get_broadcast_warning()); /* off by default */
    CHECK(!bc_get_legacy_fallback());

    bc_tensor *a = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a));
    bc_tensor *b = MAKE_F32(b_shape, 1, randn, 4);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 4, 4);
    float got[16] = {0};
    CHECK(read_f32(r, got, 16));
    for (int row = 0; row < 4; row++)
        for (int col = 0; col < 4; col++) CHECK_EQ_DBL(got[row * 4 + col], 1.0f + randn[col]);
    /* same numel, different shapes: no warning while the warning switch is off */
    CHECK_EQ_INT(w.count, 0);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 11: with the broadcast warning on, ones(4,1) + ones(4) -> (4,4) of 2s, and the warning. */
static void test_row11_broadcast_warning(void) {
    const int64_t a_shape[] = {4, 1};
    const int64_t b_shape[] = {4};
    check_warnings w;
    capture_warnings(&w);
    CHECK_OK(bc_set_broadcast_warning(true));
    CHECK(bc_get_broadcast_warning());

    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, b_shape, 1, &b));
    CHECK_EQ_INT(w.count, 0); /* creating tensors warns about nothing */
    bc_last_error_clear();
    CHECK_OK(bc_add(a, b, &r)); /* a warning never changes the status */
    CHECK_EQ_INT(bc_last_error_status(), BC_OK);
    CHECK_SHAPE(r, 4, 4);
    CHECK_F32_ALL(r, 2.0f);
    CHECK_EQ_INT(w.count, 1);
    CHECK_STR_EQ(w.first, SPEC_WARN_BROADCAST);

    /* equal shapes never warn, nor do broadcastable shapes whose numel differ */
    bc_tensor *r2 = NULL;
    CHECK_OK(bc_add(a, a, &r2));
    bc_tensor_free(r2);
    r2 = NULL;
    const int64_t c_shape[] = {3};
    bc_tensor *c = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, c_shape, 1, &c));
    CHECK_OK(bc_add(a, c, &r2));
    CHECK_EQ_INT(w.count, 1);

    CHECK_OK(bc_set_broadcast_warning(false));
    CHECK(!bc_get_broadcast_warning());
    bc_tensor *r3 = NULL;
    CHECK_OK(bc_add(a, b, &r3));
    CHECK_EQ_INT(w.count, 1);
    bc_tensor_free(r3);
    bc_tensor_free(r2);
    bc_tensor_free(c);
    bc_tensor_free(r);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

/* Row 12: with the legacy 1-D fallback on, ones(4) + ones(2,2) -> (4,) of 2s, and the warning. */
static void test_row12_legacy_fallback(void) {
    const int64_t a_shape[] = {4};
    const int64_t b_shape[] = {2, 2};
    check_warnings w;
    capture_warnings(&w);

    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 1, &a));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, b_shape, 2, &b));

    /* off by default: an error, no warning */
    CHECK_STATUS(bc_add(a, b, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1");
    CHECK_EQ_INT(w.count, 0);

    CHECK_OK(bc_set_legacy_fallback(true));
    CHECK(bc_get_legacy_fallback());
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 4);
    CHECK_F32(r, 2.0f, 2.0f, 2.0f, 2.0f);
    CHECK_EQ_INT(w.count, 1);
    CHECK_STR_EQ(w.first, SPEC_WARN_FALLBACK);
    bc_tensor_free(r);
    r = NULL;

    /* element by element, in the order of the flattened operands; shape of self */
    const float da[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const float db[4] = {10.0f, 20.0f, 30.0f, 40.0f};
    bc_tensor *a2 = MAKE_F32(a_shape, 1, da, 4);
    bc_tensor *b2 = MAKE_F32(b_shape, 2, db, 4);
    CHECK_OK(bc_add(a2, b2, &r));
    CHECK_SHAPE(r, 4);
    CHECK_F32(r, 11.0f, 22.0f, 33.0f, 44.0f);
    CHECK_EQ_INT(w.count, 2);
    CHECK_STR_EQ(w.last, SPEC_WARN_FALLBACK);
    bc_tensor_free(r);
    r = NULL;

    /* and the other way round: the result takes the first operand's shape */
    CHECK_OK(bc_add(b2, a2, &r));
    CHECK_SHAPE(r, 2, 2);
    CHECK_F32(r, 11.0f, 22.0f, 33.0f, 44.0f);
    CHECK_EQ_INT(w.count, 3);
    bc_tensor_free(r);
    r = NULL;

    bc_tensor_free(a2);
    bc_tensor_free(b2);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

int main(void) {
    RUN_TEST(row01_same_shapes);
    RUN_TEST(row02_empty_1d_vs_2x2);
    RUN_TEST(row03_broadcastable_4d_3d);
    RUN_TEST(row04_not_broadcastable_4d_3d);
    RUN_TEST(row05_add_5x1x4x1_3x1x1);
    RUN_TEST(row06_add_1_3x1x7);
    RUN_TEST(row07_add_error_message);
    RUN_TEST(row08_inplace_allowed);
    RUN_TEST(row09_inplace_refused);
    RUN_TEST(row10_ones_plus_randn);
    RUN_TEST(row11_broadcast_warning);
    RUN_TEST(row12_legacy_fallback);
    return check_summary();
}
