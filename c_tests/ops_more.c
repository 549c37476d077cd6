/*
 * ops_more.c: the elementwise operations beyond + - * / (comparisons, maximum/minimum, pow,
 * remainder/fmod/floor_divide, logical, bitwise and shifts, atan2/hypot) through their named
 * functions and BC_OP_* codes, out of place, in place and into out=; integer division by zero;
 * refused types; and where / where_out.
 *
 * Expected values are worked out by hand here (Python's and C's rules, as PyTorch follows them);
 * PyTorch's texts are those of the conformance data (tests/data/pytorch).
 */
#include "check.h"

/* Check a tensor's dtype and its row-major values, read as `ctype` (bools as 0/1 bytes). */
#define CHECK_VALUES(t, dtype, ctype, ...)                                                         \
    do {                                                                                           \
        const ctype want_[] = {__VA_ARGS__};                                                       \
        ctype got_[COUNT_OF(want_)];                                                               \
        CHECK_DTYPE((t), (dtype));                                                                 \
        if (read_raw((t), got_, sizeof got_)) {                                                    \
            for (size_t k_ = 0; k_ < COUNT_OF(want_); k_++) CHECK_EQ_INT(got_[k_], want_[k_]);     \
        }                                                                                          \
    } while (0)
#define CHECK_BOOLS(t, ...) CHECK_VALUES(t, BC_DTYPE_BOOL, uint8_t, __VA_ARGS__)
#define CHECK_I32(t, ...) CHECK_VALUES(t, BC_DTYPE_INT32, int32_t, __VA_ARGS__)
#define CHECK_I8(t, ...) CHECK_VALUES(t, BC_DTYPE_INT8, int8_t, __VA_ARGS__)

/* The last error's info record. */
static bc_error_info last_info(void) {
    bc_error_info info;
    memset(&info, 0, sizeof info);
    CHECK_OK(bc_last_error_info(&info));
    return info;
}

/* ============================================================================================== */
/* Comparisons and logical operations: bool out of place, 0/1 in the target's type in place        */
/* ============================================================================================== */

static void test_comparisons_give_bool(void) {
    const int64_t shape[] = {4};
    const float a[4] = {1.0f, NAN, -0.0f, 3.0f};
    bc_tensor *ta = make_raw(BC_DTYPE_FLOAT32, shape, 1, a, sizeof a);
    bc_tensor *zero = MAKE_FULL(BC_DTYPE_INT64, NULL, 0, 0.0); /* 0-d: compared as float32 */
    bc_tensor *r = NULL;

    CHECK_OK(bc_eq(ta, zero, &r));
    CHECK_BOOLS(r, 0, 0, 1, 0); /* -0.0 == 0; NaN equals nothing */
    bc_tensor_free(r);
    CHECK_OK(bc_ne(ta, zero, &r));
    CHECK_BOOLS(r, 1, 1, 0, 1); /* NaN != anything */
    bc_tensor_free(r);
    CHECK_OK(bc_lt(ta, zero, &r));
    CHECK_BOOLS(r, 0, 0, 0, 0);
    bc_tensor_free(r);
    CHECK_OK(bc_le(ta, zero, &r));
    CHECK_BOOLS(r, 0, 0, 1, 0);
    bc_tensor_free(r);
    CHECK_OK(bc_gt(ta, zero, &r));
    CHECK_BOOLS(r, 1, 0, 0, 1);
    bc_tensor_free(r);
    CHECK_OK(bc_binary(BC_OP_GE, ta, zero, &r));
    CHECK_BOOLS(r, 1, 0, 1, 1);
    bc_tensor_free(r);

    /* In place writes 0/1 in the target's own type. */
    CHECK_OK(bc_gt_inplace(ta, zero));
    CHECK_DTYPE(ta, BC_DTYPE_FLOAT32);
    CHECK_F32(ta, 1.0f, 0.0f, 0.0f, 1.0f);

    /* Into an int32 out (a bool result can be cast to anything). */
    bc_tensor *out = MAKE_FULL(BC_DTYPE_INT32, shape, 1, 7.0);
    CHECK_OK(bc_eq_out(ta, zero, out));
    CHECK_I32(out, 0, 1, 1, 0);

    bc_tensor_free(out);
    bc_tensor_free(zero);
    bc_tensor_free(ta);
}

static void test_int_against_float_compares_in_float(void) {
    /* int32 16777217 against float32 16777216: compared as float32, where they are equal. */
    const int64_t shape[] = {1};
    const int32_t a[1] = {16777217};
    const float b[1] = {16777216.0f};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_FLOAT32, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    CHECK_OK(bc_eq(ta, tb, &r));
    CHECK_BOOLS(r, 1);
    bc_tensor_free(r);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_logical_operations(void) {
    const int64_t shape[] = {4};
    const float a[4] = {0.0f, NAN, -0.0f, 2.0f};
    const int8_t b[4] = {1, 1, 1, 0};
    bc_tensor *ta = make_raw(BC_DTYPE_FLOAT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT8, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;

    CHECK_OK(bc_logical_and(ta, tb, &r));
    CHECK_BOOLS(r, 0, 1, 0, 0); /* NaN is true, -0.0 false */
    bc_tensor_free(r);
    CHECK_OK(bc_logical_or(ta, tb, &r));
    CHECK_BOOLS(r, 1, 1, 1, 1);
    bc_tensor_free(r);
    CHECK_OK(bc_logical_xor(ta, tb, &r));
    CHECK_BOOLS(r, 1, 0, 1, 1);
    bc_tensor_free(r);

    CHECK_OK(bc_logical_and_inplace(tb, ta));
    CHECK_I8(tb, 0, 1, 0, 0);

    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

/* ============================================================================================== */
/* maximum / minimum                                                                               */
/* ============================================================================================== */

static void test_maximum_minimum_propagate_nan(void) {
    const int64_t shape[] = {3};
    const float a[3] = {1.0f, NAN, -5.0f};
    const float b[3] = {NAN, 2.0f, 4.0f};
    bc_tensor *ta = make_raw(BC_DTYPE_FLOAT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_FLOAT32, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    float got[3];

    CHECK_OK(bc_maximum(ta, tb, &r));
    if (read_f32(r, got, 3)) {
        CHECK(isnan(got[0]));
        CHECK(isnan(got[1]));
        CHECK_EQ_DBL(got[2], 4.0);
    }
    bc_tensor_free(r);
    CHECK_OK(bc_minimum(ta, tb, &r));
    if (read_f32(r, got, 3)) {
        CHECK(isnan(got[0]));
        CHECK(isnan(got[1]));
        CHECK_EQ_DBL(got[2], -5.0);
    }
    bc_tensor_free(r);

    /* In place is torch.maximum(a, b, out=a); an int target refuses a float result. */
    CHECK_OK(bc_minimum_inplace(ta, tb));
    if (read_f32(ta, got, 3)) CHECK_EQ_DBL(got[2], -5.0);
    bc_tensor *ti = MAKE_FULL(BC_DTYPE_INT32, shape, 1, 1.0);
    CHECK_STATUS(bc_maximum_inplace(ti, tb), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    CHECK_I32(ti, 1, 1, 1);

    bc_tensor_free(ti);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_maximum_of_bools_is_or(void) {
    const int64_t shape[] = {4};
    const uint8_t a[4] = {0, 0, 1, 1};
    const uint8_t b[4] = {0, 1, 0, 1};
    bc_tensor *ta = make_raw(BC_DTYPE_BOOL, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_BOOL, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    CHECK_OK(bc_maximum(ta, tb, &r));
    CHECK_BOOLS(r, 0, 1, 1, 1);
    bc_tensor_free(r);
    CHECK_OK(bc_minimum(ta, tb, &r));
    CHECK_BOOLS(r, 0, 0, 0, 1);
    bc_tensor_free(r);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

/* ============================================================================================== */
/* pow, remainder, fmod, floor_divide                                                              */
/* ============================================================================================== */

static void test_integer_pow(void) {
    const int64_t shape[] = {6};
    const int32_t base[6] = {1, -1, -1, 2, 3, 2};
    const int32_t expo[6] = {-3, -3, -2, -2, 4, 31};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, base, sizeof base);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, shape, 1, expo, sizeof expo);
    bc_tensor *r = NULL;
    /* Negative exponents: 1 for 1, +-1 for -1 by parity, else 0 (no error between tensors);
       2**31 wraps to INT32_MIN. */
    CHECK_OK(bc_pow(ta, tb, &r));
    CHECK_I32(r, 1, -1, 1, 0, 81, INT32_MIN);
    bc_tensor_free(r);
    CHECK_OK(bc_pow_inplace(ta, tb));
    CHECK_I32(ta, 1, -1, 1, 0, 81, INT32_MIN);

    /* pow refuses bool. */
    bc_tensor *t = MAKE_FULL(BC_DTYPE_BOOL, shape, 1, 1.0);
    CHECK_STATUS(bc_pow(t, t, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"pow\" not implemented for 'Bool'");
    CHECK(r == NULL);
    bc_tensor_free(t);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_division_signs(void) {
    const int64_t shape[] = {4};
    const int32_t a[4] = {7, -7, 7, -7};
    const int32_t b[4] = {2, 2, -2, -2};
    const float af[4] = {7.0f, -7.0f, 7.0f, -7.0f};
    const float bf[4] = {2.0f, 2.0f, -2.0f, -2.0f};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, shape, 1, b, sizeof b);
    bc_tensor *fa = make_raw(BC_DTYPE_FLOAT32, shape, 1, af, sizeof af);
    bc_tensor *fb = make_raw(BC_DTYPE_FLOAT32, shape, 1, bf, sizeof bf);
    bc_tensor *r = NULL;

    CHECK_OK(bc_remainder(ta, tb, &r)); /* Python: the divisor's sign */
    CHECK_I32(r, 1, 1, -1, -1);
    bc_tensor_free(r);
    CHECK_OK(bc_fmod(ta, tb, &r)); /* C: the dividend's sign */
    CHECK_I32(r, 1, -1, 1, -1);
    bc_tensor_free(r);
    CHECK_OK(bc_floor_divide(ta, tb, &r)); /* rounded down */
    CHECK_I32(r, 3, -4, -4, 3);
    bc_tensor_free(r);

    CHECK_OK(bc_remainder(fa, fb, &r));
    CHECK_F32(r, 1.0f, 1.0f, -1.0f, -1.0f);
    bc_tensor_free(r);
    CHECK_OK(bc_fmod(fa, fb, &r));
    CHECK_F32(r, 1.0f, -1.0f, 1.0f, -1.0f);
    bc_tensor_free(r);
    CHECK_OK(bc_floor_divide(fa, fb, &r));
    CHECK_F32(r, 3.0f, -4.0f, -4.0f, 3.0f);
    bc_tensor_free(r);

    /* INT32_MIN // -1 wraps (PyTorch itself traps there); % gives 0. */
    const int64_t one[] = {1};
    const int32_t mn[1] = {INT32_MIN}, m1[1] = {-1};
    bc_tensor *tmin = make_raw(BC_DTYPE_INT32, one, 1, mn, sizeof mn);
    bc_tensor *tm1 = make_raw(BC_DTYPE_INT32, one, 1, m1, sizeof m1);
    CHECK_OK(bc_floor_divide(tmin, tm1, &r));
    CHECK_I32(r, INT32_MIN);
    bc_tensor_free(r);
    CHECK_OK(bc_remainder(tmin, tm1, &r));
    CHECK_I32(r, 0);
    bc_tensor_free(r);

    bc_tensor_free(tm1);
    bc_tensor_free(tmin);
    bc_tensor_free(fb);
    bc_tensor_free(fa);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_integer_division_by_zero_changes_nothing(void) {
    const int64_t shape[] = {2, 3};
    const int64_t row[] = {3};
    const int32_t a[6] = {1, 2, 3, 4, 5, 6};
    const int32_t b[3] = {2, 0, 1};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 2, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, row, 1, b, sizeof b);
    bc_tensor *out = MAKE_FULL(BC_DTYPE_INT32, shape, 2, 9.0);
    bc_tensor *r = SENTINEL;

    CHECK_STATUS(bc_remainder(ta, tb, &r), BC_ERR_VALUE);
    CHECK_LAST_ERROR("ZeroDivisionError");
    CHECK(r == NULL);
    bc_error_info info = last_info();
    CHECK_EQ_INT(info.status, BC_ERR_VALUE);
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_ZERO_DIVISION);

    CHECK_STATUS(bc_fmod_out(ta, tb, out), BC_ERR_VALUE);
    CHECK_I32(out, 9, 9, 9, 9, 9, 9);
    CHECK_STATUS(bc_floor_divide_inplace(ta, tb), BC_ERR_VALUE);
    CHECK_I32(ta, 1, 2, 3, 4, 5, 6);
    CHECK_STATUS(bc_binary(BC_OP_FLOOR_DIVIDE, ta, tb, &r), BC_ERR_VALUE);
    CHECK_STR_EQ(bc_status_str(BC_ERR_VALUE), "BC_ERR_VALUE: values refused");

    /* An int64 0-d divisor of 2**32 is read as int32 (the computation type): zero. */
    bc_tensor *big = MAKE_FULL(BC_DTYPE_INT64, NULL, 0, 4294967296.0);
    CHECK_STATUS(bc_remainder(ta, big, &r), BC_ERR_VALUE);
    bc_tensor_free(big);

    /* Floats divide by zero as IEEE says; an empty result reads no divisor. */
    bc_tensor *fa = MAKE_FULL(BC_DTYPE_FLOAT32, row, 1, 1.0);
    bc_tensor *fz = MAKE_FULL(BC_DTYPE_FLOAT32, row, 1, 0.0);
    CHECK_OK(bc_floor_divide(fa, fz, &r));
    CHECK_F32(r, INFINITY, INFINITY, INFINITY);
    bc_tensor_free(r);
    const int64_t empty[] = {0, 3};
    bc_tensor *te = MAKE_FULL(BC_DTYPE_INT32, empty, 2, 1.0);
    CHECK_OK(bc_remainder(te, tb, &r));
    CHECK_SHAPE(r, 0, 3);
    bc_tensor_free(r);

    bc_tensor_free(te);
    bc_tensor_free(fz);
    bc_tensor_free(fa);
    bc_tensor_free(out);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

/* ============================================================================================== */
/* Bitwise operations and shifts                                                                   */
/* ============================================================================================== */

static void test_bitwise_and_refusals(void) {
    const int64_t shape[] = {3};
    const int32_t a[3] = {12, -1, 5};
    const int32_t b[3] = {10, 7, 0};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    CHECK_OK(bc_bitwise_and(ta, tb, &r));
    CHECK_I32(r, 8, 7, 0);
    bc_tensor_free(r);
    CHECK_OK(bc_bitwise_or(ta, tb, &r));
    CHECK_I32(r, 14, -1, 5);
    bc_tensor_free(r);
    CHECK_OK(bc_bitwise_xor(ta, tb, &r));
    CHECK_I32(r, 6, -8, 5);
    bc_tensor_free(r);

    /* Floats are refused with PyTorch's text, naming the computation type. */
    bc_tensor *f = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 1, 1.0);
    CHECK_STATUS(bc_bitwise_and(ta, f, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"bitwise_and_cpu\" not implemented for 'Float'");
    bc_error_info info = last_info();
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_NOT_IMPLEMENTED);
    CHECK_EQ_INT(info.dtype_a, BC_DTYPE_FLOAT32);
    /* In place, the cast check comes first. */
    CHECK_STATUS(bc_bitwise_or_inplace(ta, f), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    CHECK_STATUS(bc_bitwise_xor_inplace(f, ta), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"bitwise_xor_cpu\" not implemented for 'Float'");
    CHECK_F32(f, 1.0f, 1.0f, 1.0f);

    bc_tensor_free(f);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_shifts_out_of_range(void) {
    const int64_t shape[] = {6};
    const int8_t a[6] = {1, 1, -128, -128, 64, 3};
    const int8_t b[6] = {7, 8, -1, 9, -1, 1};
    bc_tensor *ta = make_raw(BC_DTYPE_INT8, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT8, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    /* Shifts by a negative amount or by the width or more: 0 left, the sign right. */
    CHECK_OK(bc_bitwise_left_shift(ta, tb, &r));
    CHECK_I8(r, -128, 0, 0, 0, 0, 6);
    bc_tensor_free(r);
    CHECK_OK(bc_bitwise_right_shift(ta, tb, &r));
    CHECK_I8(r, 0, 0, -1, -1, 0, 1);
    bc_tensor_free(r);

    const int64_t one[] = {2};
    const uint8_t u[2] = {200, 200};
    const uint8_t n[2] = {8, 3};
    bc_tensor *tu = make_raw(BC_DTYPE_UINT8, one, 1, u, sizeof u);
    bc_tensor *tn = make_raw(BC_DTYPE_UINT8, one, 1, n, sizeof n);
    CHECK_OK(bc_bitwise_right_shift_inplace(tu, tn));
    uint8_t got[2];
    if (read_raw(tu, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 0);
        CHECK_EQ_INT(got[1], 25);
    }
    /* Bools have no shifts. */
    bc_tensor *tbool = MAKE_FULL(BC_DTYPE_BOOL, one, 1, 1.0);
    CHECK_STATUS(bc_bitwise_left_shift(tbool, tbool, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"lshift_cpu\" not implemented for 'Bool'");

    bc_tensor_free(tbool);
    bc_tensor_free(tn);
    bc_tensor_free(tu);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

/* ============================================================================================== */
/* atan2, hypot, and the op codes                                                                  */
/* ============================================================================================== */

static void test_atan2_promotes_integers_hypot_refuses_them(void) {
    const int64_t shape[] = {2};
    const int32_t a[2] = {1, -1};
    const int32_t b[2] = {1, 0};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    float got[2];
    CHECK_OK(bc_atan2(ta, tb, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    if (read_f32(r, got, 2)) {
        CHECK_NEAR(got[0], 0.78539816, 1e-6);
        CHECK_NEAR(got[1], -1.57079633, 1e-6);
    }
    bc_tensor_free(r);
    CHECK_STATUS(bc_atan2_inplace(ta, tb), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);

    CHECK_STATUS(bc_hypot(ta, tb, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"hypot_cpu\" not implemented for 'Int'");
    bc_tensor *f = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 1, 3.0);
    bc_tensor *g = MAKE_FULL(BC_DTYPE_FLOAT64, NULL, 0, 4.0);
    CHECK_OK(bc_hypot(f, g, &r));
    CHECK_F32(r, 5.0f, 5.0f);
    bc_tensor_free(r);
    CHECK_OK(bc_hypot_out(f, g, f));
    CHECK_F32(f, 5.0f, 5.0f);

    bc_tensor_free(g);
    bc_tensor_free(f);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
}

static void test_op_codes(void) {
    const int64_t shape[] = {2};
    bc_tensor *a = MAKE_FULL(BC_DTYPE_INT16, shape, 1, 6.0);
    bc_tensor *b = MAKE_FULL(BC_DTYPE_INT16, shape, 1, 4.0);
    bc_tensor *r = NULL;
    /* Each named function is bc_binary with its code. */
    const int32_t codes[] = {BC_OP_MAXIMUM, BC_OP_MINIMUM, BC_OP_REMAINDER, BC_OP_BITWISE_AND};
    const double want[] = {6.0, 4.0, 2.0, 4.0};
    for (size_t k = 0; k < COUNT_OF(codes); k++) {
        CHECK_OK(bc_binary(codes[k], a, b, &r));
        float got[2];
        bc_tensor *f = NULL;
        CHECK_OK(bc_tensor_to_dtype(r, BC_DTYPE_FLOAT32, &f));
        if (f && read_f32(f, got, 2)) CHECK_EQ_DBL(got[1], want[k]);
        bc_tensor_free(f);
        bc_tensor_free(r);
        r = NULL;
    }
    CHECK_STATUS(bc_binary(BC_OP_COUNT, a, b, &r), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_binary_inplace(-1, a, b), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_eq(a, NULL, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_eq(a, b, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_where(NULL, a, b, &r), BC_ERR_NULL_ARG);
    CHECK_LAST_ERROR("argument `cond` is NULL");
    CHECK_STATUS(bc_where_out(a, a, b, NULL), BC_ERR_NULL_ARG);
    CHECK_LAST_ERROR("argument `out` is NULL");
    CHECK(r == NULL);
    bc_tensor_free(b);
    bc_tensor_free(a);
}

/* ============================================================================================== */
/* where                                                                                           */
/* ============================================================================================== */

static void test_where_broadcasts_and_promotes(void) {
    const int64_t cshape[] = {3, 1};
    const int64_t ashape[] = {2};
    const uint8_t c[3] = {1, 0, 1};
    const float a[2] = {1.5f, 2.5f};
    bc_tensor *tc = make_raw(BC_DTYPE_BOOL, cshape, 2, c, sizeof c);
    bc_tensor *ta = make_raw(BC_DTYPE_FLOAT32, ashape, 1, a, sizeof a);
    bc_tensor *tb = MAKE_FULL(BC_DTYPE_INT64, NULL, 0, -7.0); /* 0-d: float32 wins */
    bc_tensor *r = NULL;

    CHECK_OK(bc_where(tc, ta, tb, &r));
    CHECK_SHAPE(r, 3, 2);
    CHECK_F32(r, 1.5f, 2.5f, -7.0f, -7.0f, 1.5f, 2.5f);
    bc_tensor_free(r);

    /* out= needs the result type exactly, and the broadcast shape. */
    const int64_t oshape[] = {3, 2};
    bc_tensor *oi = MAKE_FULL(BC_DTYPE_INT32, oshape, 2, 0.0);
    CHECK_STATUS(bc_where_out(tc, ta, tb, oi), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("Expected out type to be Float but got Int");
    bc_error_info info = last_info();
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_OUT_DTYPE);
    CHECK_EQ_INT(info.dtype_a, BC_DTYPE_FLOAT32);
    CHECK_EQ_INT(info.dtype_b, BC_DTYPE_INT32);
    CHECK_I32(oi, 0, 0, 0, 0, 0, 0);
    bc_tensor *o = MAKE_FULL(BC_DTYPE_FLOAT32, oshape, 2, 0.0);
    CHECK_OK(bc_where_out(tc, ta, tb, o));
    CHECK_F32(o, 1.5f, 2.5f, -7.0f, -7.0f, 1.5f, 2.5f);
    bc_tensor *small = MAKE_FULL(BC_DTYPE_FLOAT32, ashape, 1, 0.0);
    CHECK_STATUS(bc_where_out(tc, ta, tb, small), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("output with shape [2] doesn't match the broadcast shape [3, 2]");

    /* "tensor a" is the broadcast of the operands so far. */
    const int64_t bad[] = {4};
    bc_tensor *tbad = MAKE_FULL(BC_DTYPE_FLOAT32, bad, 1, 0.0);
    CHECK_STATUS(bc_where(tc, ta, tbad, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1");

    /* A float condition is refused. */
    CHECK_STATUS(bc_where(ta, ta, ta, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("where expected condition to be a boolean tensor, but got a tensor with dtype Float");
    info = last_info();
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_WHERE_CONDITION);
    CHECK_EQ_INT(info.dtype_a, BC_DTYPE_FLOAT32);
    CHECK(r == NULL);

    bc_tensor_free(tbad);
    bc_tensor_free(small);
    bc_tensor_free(o);
    bc_tensor_free(oi);
    bc_tensor_free(tb);
    bc_tensor_free(ta);
    bc_tensor_free(tc);
}

static void test_where_uint8_condition_warns_once(void) {
    /* The first uint8 condition of this process: PyTorch warns once per process. */
    const int64_t shape[] = {3};
    const uint8_t c[3] = {0, 2, 255}; /* any non-zero byte is true */
    bc_tensor *tc = make_raw(BC_DTYPE_UINT8, shape, 1, c, sizeof c);
    bc_tensor *ta = MAKE_FULL(BC_DTYPE_INT16, shape, 1, 1.0);
    bc_tensor *tb = MAKE_FULL(BC_DTYPE_INT16, shape, 1, 2.0);
    bc_tensor *r = NULL;
    check_warnings w;
    capture_warnings(&w);

    CHECK_OK(bc_where(tc, ta, tb, &r));
    CHECK_EQ_INT(w.count, 1);
    CHECK_STR_EQ(w.first, "where received a uint8 condition tensor. This behavior is deprecated and will be "
                          "removed in a future version of PyTorch. Use a boolean condition instead.");
    int16_t got[3];
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 2);
        CHECK_EQ_INT(got[1], 1);
        CHECK_EQ_INT(got[2], 1);
    }
    bc_tensor_free(r);
    CHECK_OK(bc_where_out(tc, ta, tb, ta));
    CHECK_EQ_INT(w.count, 1); /* once */

    bc_tensor_free(tb);
    bc_tensor_free(ta);
    bc_tensor_free(tc);
}

static void test_where_overlap(void) {
    const int64_t shape[] = {4};
    float buf[4] = {0.0f, 1.0f, 2.0f, 3.0f};
    const uint8_t c[3] = {1, 0, 1};
    const int64_t three[] = {3};
    bc_tensor *base = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, shape, NULL, 1, 0, NULL, NULL, &base));
    bc_tensor *lo = NULL, *hi = NULL;
    CHECK_OK(bc_tensor_slice(base, 0, 0, 3, 1, &lo));
    CHECK_OK(bc_tensor_slice(base, 0, 1, 4, 1, &hi));
    bc_tensor *tc = make_raw(BC_DTYPE_BOOL, three, 1, c, sizeof c);
    bc_tensor *zero = MAKE_FULL(BC_DTYPE_FLOAT32, NULL, 0, 0.0);
    CHECK_STATUS(bc_where_out(tc, lo, zero, hi), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_PARTIAL_OVERLAP);
    CHECK_EQ_DBL(buf[2], 2.0);
    CHECK_OK(bc_where_out(tc, hi, zero, hi)); /* exactly an input: fine */
    CHECK_EQ_DBL(buf[1], 1.0);
    CHECK_EQ_DBL(buf[2], 0.0);
    CHECK_EQ_DBL(buf[3], 3.0);
    bc_tensor_free(zero);
    bc_tensor_free(tc);
    bc_tensor_free(hi);
    bc_tensor_free(lo);
    bc_tensor_free(base);
}

int main(void) {
    RUN_TEST(comparisons_give_bool);
    RUN_TEST(int_against_float_compares_in_float);
    RUN_TEST(logical_operations);
    RUN_TEST(maximum_minimum_propagate_nan);
    RUN_TEST(maximum_of_bools_is_or);
    RUN_TEST(integer_pow);
    RUN_TEST(division_signs);
    RUN_TEST(integer_division_by_zero_changes_nothing);
    RUN_TEST(bitwise_and_refusals);
    RUN_TEST(shifts_out_of_range);
    RUN_TEST(atan2_promotes_integers_hypot_refuses_them);
    RUN_TEST(op_codes);
    RUN_TEST(where_uint8_condition_warns_once);
    RUN_TEST(where_broadcasts_and_promotes);
    RUN_TEST(where_overlap);
    return check_summary();
}
