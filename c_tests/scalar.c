/*
 * scalar.c: operations with a number (bc_binary_scalar, bc_binary_rscalar,
 * bc_binary_scalar_inplace, the named forms, bc_scalar_*) through the C ABI: PyTorch's promotion
 * of Python numbers by category, the wrap of an integer that does not fit, both orders, in place
 * with its refusals, the layout of the result, and the argument checks.
 *
 * Expected values are worked out by hand, except where a comment gives the PyTorch 2.15
 * expression they come from. tests/scalar.rs checks every row of scalar.jsonl.
 */
#include "check.h"

static uint16_t f32_to_f16(float f) {
    /* Exact for the values used here (small integers and halves). */
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000, exp = (b >> 23) & 0xff, man = b & 0x7fffff;
    if (exp == 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((exp - 112) << 10) | (man >> 13));
}

static void test_promotion_by_category(void) {
    const int64_t shape[] = {3};
    int32_t iv[] = {1, 2, 3};
    bc_tensor *i = NULL, *r = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT32, shape, 1, iv, sizeof iv, &i));
    /* int32 + 2.5 is float32 (a Python float counts as the default float type). */
    CHECK_OK(bc_add_scalar(i, bc_scalar_float(2.5), &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    CHECK_F32(r, 3.5f, 4.5f, 5.5f);
    bc_tensor_free(r);
    /* int32 + 7 stays int32; int32 / 2 is float32. */
    CHECK_OK(bc_binary_scalar(BC_OP_ADD, i, bc_scalar_int(7), &r));
    CHECK_DTYPE(r, BC_DTYPE_INT32);
    bc_tensor_free(r);
    CHECK_OK(bc_div_scalar(i, bc_scalar_int(2), &r));
    CHECK_F32(r, 0.5f, 1.0f, 1.5f);
    bc_tensor_free(r);
    /* 6 / t and 6 - t: the number first. */
    CHECK_OK(bc_rdiv_scalar(bc_scalar_int(6), i, &r));
    CHECK_F32(r, 6.0f, 3.0f, 2.0f);
    bc_tensor_free(r);
    CHECK_OK(bc_rsub_scalar(bc_scalar_float(0.5), i, &r));
    CHECK_F32(r, -0.5f, -1.5f, -2.5f);
    bc_tensor_free(r);
    /* A bool tensor with an int becomes int64. */
    bool bv[] = {true, false, true};
    bc_tensor *b = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_BOOL, shape, 1, bv, sizeof bv, &b));
    CHECK_OK(bc_mul_scalar(b, bc_scalar_int(3), &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    int64_t got[3];
    CHECK_OK(bc_tensor_copy_to(r, got, sizeof got));
    CHECK(got[0] == 3 && got[1] == 0 && got[2] == 3);
    bc_tensor_free(r);
    bc_tensor_free(b);
    bc_tensor_free(i);
}

/* uint8 + 300: the type stays uint8, and 300 wraps to 44 (PyTorch: `torch.tensor([1, 2, 3],
 * dtype=torch.uint8) + 300` is [45, 46, 47]). */
static void test_integers_wrap(void) {
    const int64_t shape[] = {3};
    uint8_t uv[] = {1, 2, 3};
    bc_tensor *u = NULL, *r = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_UINT8, shape, 1, uv, sizeof uv, &u));
    CHECK_OK(bc_add_scalar(u, bc_scalar_int(300), &r));
    CHECK_DTYPE(r, BC_DTYPE_UINT8);
    uint8_t got[3];
    CHECK_OK(bc_tensor_copy_to(r, got, sizeof got));
    CHECK(got[0] == 45 && got[1] == 46 && got[2] == 47);
    bc_tensor_free(r);
    CHECK_OK(bc_add_scalar_inplace(u, bc_scalar_int(-1)));
    CHECK_OK(bc_tensor_copy_to(u, got, sizeof got));
    CHECK(got[0] == 0 && got[1] == 1 && got[2] == 2);
    bc_tensor_free(u);
}

/* float16 `s * t` is PyTorch's `t * s`, which reads `s` in float32 before the one rounding:
 * `(1/3) * torch.tensor([5.], dtype=torch.float16)` is 1.6669921875 in PyTorch 2.15, where a
 * `s` rounded to float16 first would give 1.666015625. */
static void test_reflected_multiplication_reads_the_number_in_float32(void) {
    const int64_t shape[] = {1};
    uint16_t h = f32_to_f16(5.0f);
    bc_tensor *t = NULL, *r = NULL, *f = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_FLOAT16, shape, 1, &h, sizeof h, &t));
    CHECK_OK(bc_binary_rscalar(BC_OP_MUL, bc_scalar_float(1.0 / 3.0), t, &r));
    CHECK_OK(bc_tensor_to_dtype(r, BC_DTYPE_FLOAT32, &f));
    CHECK_F32(f, 1.6669921875f);
    bc_tensor_free(f);
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_in_place_refusals_change_nothing(void) {
    const int64_t shape[] = {2};
    int32_t iv[] = {4, 5};
    bc_tensor *i = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT32, shape, 1, iv, sizeof iv, &i));
    CHECK_STATUS(bc_mul_scalar_inplace(i, bc_scalar_float(2.5)), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    CHECK_STATUS(bc_div_scalar_inplace(i, bc_scalar_int(2)), BC_ERR_DTYPE);
    CHECK_OK(bc_sub_scalar_inplace(i, bc_scalar_int(1)));
    int32_t got[2];
    CHECK_OK(bc_tensor_copy_to(i, got, sizeof got));
    CHECK(got[0] == 3 && got[1] == 4);
    /* A bool tensor minus a number, and a number minus a bool tensor. */
    bool bv[] = {true, false};
    bc_tensor *b = NULL, *r = SENTINEL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_BOOL, shape, 1, bv, sizeof bv, &b));
    CHECK_STATUS(bc_sub_scalar(b, bc_scalar_int(1), &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_STATUS(bc_rsub_scalar(bc_scalar_bool(true), i, &r), BC_ERR_DTYPE);
    bc_tensor_free(b);
    bc_tensor_free(i);
}

/* A transposed tensor with a number: the result keeps the transposition (PyTorch's
 * `t.T + 1` has the strides of `t.T`). */
static void test_result_keeps_the_tensors_layout(void) {
    const int64_t shape[] = {2, 3};
    float v[6];
    fill_arange(v, 6, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 2, v, 6);
    bc_tensor *tt = NULL, *r = NULL;
    CHECK_OK(bc_tensor_transpose(t, 0, 1, &tt));
    CHECK_OK(bc_add_scalar(tt, bc_scalar_bool(true), &r));
    CHECK_SHAPE(r, 3, 2);
    CHECK_STRIDES(r, 1, 3);
    CHECK_F32(r, 1, 4, 2, 5, 3, 6);
    bc_tensor_free(r);
    bc_tensor_free(tt);
    bc_tensor_free(t);
}

static void test_arguments(void) {
    const int64_t shape[] = {2};
    bc_tensor *t = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 1, 1.0);
    bc_tensor *r = SENTINEL;
    bc_scalar bad = bc_scalar_int(1);
    bad.kind = 7;
    CHECK_STATUS(bc_binary_scalar(BC_OP_ADD, t, bad, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("unknown scalar kind 7");
    CHECK(r == NULL);
    CHECK_STATUS(bc_binary_scalar(99, t, bc_scalar_int(1), &r), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_binary_scalar(BC_OP_ADD, NULL, bc_scalar_int(1), &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_binary_rscalar(BC_OP_ADD, bc_scalar_int(1), t, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_binary_scalar_inplace(BC_OP_ADD, NULL, bc_scalar_int(1)), BC_ERR_NULL_ARG);
    bc_tensor *freed = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 1, 1.0);
    bc_tensor_free(freed);
    CHECK_STATUS(bc_add_scalar_inplace(freed, bc_scalar_int(1)), BC_ERR_INVALID_HANDLE);
    /* The constructors fill the field their kind names. */
    CHECK(bc_scalar_bool(true).kind == BC_SCALAR_BOOL && bc_scalar_bool(true).b);
    CHECK(bc_scalar_int(-5).kind == BC_SCALAR_INT && bc_scalar_int(-5).i == -5);
    CHECK(bc_scalar_float(0.25).kind == BC_SCALAR_FLOAT && bc_scalar_float(0.25).f == 0.25);
    bc_tensor_free(t);
}

int main(void) {
    RUN_TEST(promotion_by_category);
    RUN_TEST(integers_wrap);
    RUN_TEST(reflected_multiplication_reads_the_number_in_float32);
    RUN_TEST(in_place_refusals_change_nothing);
    RUN_TEST(result_keeps_the_tensors_layout);
    RUN_TEST(arguments);
    return check_summary();
}
