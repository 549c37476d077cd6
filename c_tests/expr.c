/*
 * expr.c: fused expressions (bc_expr_eval, bc_expr_eval_out) from C: results bit for bit those of
 * the separate calls, constants, where, ternary steps, in place into an input, the separate calls'
 * errors, and malformed programs; fused reductions (bc_expr_reduce, bc_plan_expr_reduce) bit for
 * bit those of bc_expr_eval then bc_reduce. (tests/expr.rs compares random programs over every operation and dtype.)
 */
#include "check.h"

static bc_expr_step in(int32_t i) { return (bc_expr_step){BC_EXPR_INPUT, i, 0, 0.0}; }
static bc_expr_step op(int32_t code) { return (bc_expr_step){BC_EXPR_OP, code, 0, 0.0}; }
static bc_expr_step f64c(double v) { return (bc_expr_step){BC_EXPR_CONST, BC_DTYPE_FLOAT64, 0, v}; }

/* Two tensors with the same dtype, shape and bytes. */
static void check_same(const bc_tensor *got, const bc_tensor *want) {
    int32_t dg = -1, dw = -2;
    int64_t ng = -1, nw = -2;
    CHECK_OK(bc_tensor_dtype(got, &dg));
    CHECK_OK(bc_tensor_dtype(want, &dw));
    CHECK_EQ_INT(dg, dw);
    CHECK_OK(bc_tensor_numel(got, &ng));
    CHECK_OK(bc_tensor_numel(want, &nw));
    CHECK_EQ_INT(ng, nw);
    size_t bytes = bc_dtype_size(dg) * (size_t)ng;
    unsigned char *a = malloc(bytes + 1), *b = malloc(bytes + 1);
    if (read_raw(got, a, bytes) && read_raw(want, b, bytes)) CHECK(memcmp(a, b, bytes) == 0);
    free(a);
    free(b);
}

/* (a * b + c) * 0.5 with a (64,300) float32, b (300,) float16, c (64,1) float32: one call, the
 * bits of the four separate calls. */
static void test_matches_the_separate_calls(void) {
    const int64_t sa[] = {64, 300}, sb[] = {300}, sc[] = {64, 1};
    float *va = malloc(64 * 300 * sizeof(float));
    float vc[64];
    fill_arange(va, 64 * 300, -100.0f, 0.013f);
    fill_arange(vc, 64, 3.0f, -0.25f);
    bc_tensor *a = MAKE_F32(sa, 2, va, 64 * 300), *c = MAKE_F32(sc, 2, vc, 64), *b32 = NULL, *b = NULL;
    float vb[300];
    fill_arange(vb, 300, 0.5f, 0.0333f);
    b32 = MAKE_F32(sb, 1, vb, 300);
    CHECK_OK(bc_tensor_to_dtype(b32, BC_DTYPE_FLOAT16, &b));

    const bc_expr_step steps[] = {in(0), in(1), op(BC_OP_MUL), in(2), op(BC_OP_ADD), f64c(0.5), op(BC_OP_MUL)};
    const bc_tensor *inputs[] = {a, b, c};
    bc_tensor *got = SENTINEL;
    CHECK_OK(bc_expr_eval(steps, COUNT_OF(steps), inputs, 3, &got));
    CHECK_SHAPE(got, 64, 300);
    CHECK_DTYPE(got, BC_DTYPE_FLOAT32);

    bc_tensor *ab = NULL, *abc = NULL, *half = MAKE_FULL(BC_DTYPE_FLOAT64, NULL, 0, 0.5), *want = NULL;
    CHECK_OK(bc_mul(a, b, &ab));
    CHECK_OK(bc_add(ab, c, &abc));
    CHECK_OK(bc_mul(abc, half, &want));
    check_same(got, want);

    /* Into an out of another type: the last call's conversion. */
    bc_tensor *o = MAKE_FULL(BC_DTYPE_FLOAT64, sa, 2, 0.0), *wo = MAKE_FULL(BC_DTYPE_FLOAT64, sa, 2, 0.0);
    CHECK_OK(bc_expr_eval_out(steps, COUNT_OF(steps), inputs, 3, o));
    CHECK_OK(bc_mul_out(abc, half, wo));
    check_same(o, wo);

    bc_tensor *list[] = {a, b, b32, c, got, ab, abc, half, want, o, wo};
    for (size_t i = 0; i < COUNT_OF(list); i++) bc_tensor_free(list[i]);
    free(va);
}

/* where(x > 0, x, 0.01 * x) in place into x (a leaky ReLU). */
static void test_where_in_place(void) {
    const int64_t shape[] = {6};
    const float v[6] = {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f, -100.0f};
    bc_tensor *x = MAKE_F32(shape, 1, v, 6);
    const bc_expr_step steps[] = {in(0), f64c(0.0),  op(BC_OP_GT), in(0),
                                  in(0), f64c(0.01), op(BC_OP_MUL), {BC_EXPR_WHERE, 0, 0, 0.0}};
    const bc_tensor *inputs[] = {x};
    CHECK_OK(bc_expr_eval_out(steps, COUNT_OF(steps), inputs, 1, x));
    CHECK_F32(x, -2.0f * 0.01f, -0.5f * 0.01f, 0.0f, 0.5f, 2.0f, -100.0f * 0.01f);
    bc_tensor_free(x);
}

/* clamp(a * 1.5, lo, hi) and addcmul(a, lo, hi, 2) with BC_EXPR_TERNARY steps: the bits of the
 * separate calls (bc_mul, bc_clamp, bc_addcmul); a lerp of integers is refused as bc_lerp is. */
static void test_ternary_steps(void) {
    const int64_t sa[] = {5, 4}, slo[] = {4}, shi[] = {5, 1};
    float va[20], vlo[4], vhi[5];
    fill_arange(va, 20, -3.0f, 0.37f);
    fill_arange(vlo, 4, -1.5f, 0.4f);
    fill_arange(vhi, 5, 0.1f, 0.6f);
    bc_tensor *a = MAKE_F32(sa, 2, va, 20), *lo = MAKE_F32(slo, 1, vlo, 4), *hi = MAKE_F32(shi, 2, vhi, 5);
    const bc_tensor *inputs[] = {a, lo, hi};
    const bc_expr_step clamp[] = {in(0), {BC_EXPR_CONST, BC_DTYPE_FLOAT32, 0, 1.5}, op(BC_OP_MUL),
                                  in(1), in(2), {BC_EXPR_TERNARY, BC_TERNARY_CLAMP, 0, 0.0}};
    bc_tensor *got = SENTINEL;
    CHECK_OK(bc_expr_eval(clamp, COUNT_OF(clamp), inputs, 3, &got));
    CHECK_SHAPE(got, 5, 4);
    CHECK_DTYPE(got, BC_DTYPE_FLOAT32);
    bc_tensor *s = MAKE_FULL(BC_DTYPE_FLOAT32, NULL, 0, 1.5), *as = NULL, *want = NULL;
    CHECK_OK(bc_mul(a, s, &as));
    CHECK_OK(bc_clamp(as, lo, hi, &want));
    check_same(got, want);
    /* The integer value 2 in int_value (float_value +0.0). */
    const bc_expr_step addcmul[] = {in(0), in(1), in(2), {BC_EXPR_TERNARY, BC_TERNARY_ADDCMUL, 2, 0.0}};
    bc_tensor *got2 = SENTINEL, *want2 = NULL;
    CHECK_OK(bc_expr_eval(addcmul, COUNT_OF(addcmul), inputs, 3, &got2));
    CHECK_OK(bc_addcmul(a, lo, hi, bc_scalar_int(2), &want2));
    check_same(got2, want2);
    const int64_t s3[] = {3};
    bc_tensor *i = MAKE_FULL(BC_DTYPE_INT32, s3, 1, 2.0), *r = SENTINEL;
    const bc_tensor *ints[] = {i};
    const bc_expr_step lerp[] = {in(0), in(0), in(0), {BC_EXPR_TERNARY, BC_TERNARY_LERP, 0, 0.0}};
    CHECK_STATUS(bc_expr_eval(lerp, COUNT_OF(lerp), ints, 1, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"lerp_kernel_tensor\" not implemented for 'Int'");
    CHECK(r == NULL);
    bc_tensor *list[] = {a, lo, hi, got, s, as, want, got2, want2, i};
    for (size_t k = 0; k < COUNT_OF(list); k++) bc_tensor_free(list[k]);
}

/* The first failing step's error, as its own call gives it; out unchanged. */
static void test_errors_are_the_calls(void) {
    const int64_t s23[] = {2, 3}, s4[] = {4};
    bc_tensor *a = MAKE_FULL(BC_DTYPE_FLOAT32, s23, 2, 1.0), *b = MAKE_FULL(BC_DTYPE_FLOAT32, s4, 1, 2.0);
    bc_tensor *i = MAKE_FULL(BC_DTYPE_INT32, s23, 2, 3.0);
    const bc_tensor *inputs[] = {a, b, i};
    const bc_expr_step bad_shape[] = {in(0), in(0), op(BC_OP_ADD), in(1), op(BC_OP_MUL)};
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_expr_eval(bad_shape, COUNT_OF(bad_shape), inputs, 3, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
    CHECK(r == NULL);
    const bc_expr_step no_kernel[] = {in(0), in(2), op(BC_OP_BITWISE_AND)};
    CHECK_STATUS(bc_expr_eval(no_kernel, COUNT_OF(no_kernel), inputs, 3, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("\"bitwise_and_cpu\" not implemented for 'Float'");
    /* Into an int32 out: a float result cannot be cast to it; out keeps its values. */
    const bc_expr_step to_int[] = {in(2), in(0), op(BC_OP_MUL)};
    CHECK_STATUS(bc_expr_eval_out(to_int, COUNT_OF(to_int), inputs, 3, i), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("result type Float can't be cast to the desired output type Int");
    int32_t iv[6];
    if (read_raw(i, iv, sizeof iv))
        for (int k = 0; k < 6; k++) CHECK_EQ_INT(iv[k], 3);
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor_free(i);
}

static void test_malformed_programs(void) {
    const int64_t s[] = {3};
    bc_tensor *a = MAKE_FULL(BC_DTYPE_FLOAT32, s, 1, 1.0);
    const bc_tensor *inputs[] = {a};
    bc_tensor *r = SENTINEL;
    const bc_expr_step lonely[] = {in(0), op(BC_OP_ADD)};
    CHECK_STATUS(bc_expr_eval(lonely, 2, inputs, 1, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("step 1 (add) needs 2 operands, but 1 are waiting");
    CHECK(r == NULL);
    const bc_expr_step far[] = {in(0), in(1), op(BC_OP_ADD)};
    CHECK_STATUS(bc_expr_eval(far, 3, inputs, 1, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("step 1 reads input 1, but 1 input(s) were given");
    const bc_expr_step none[] = {in(0)};
    CHECK_STATUS(bc_expr_eval(none, 1, inputs, 1, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("an expression needs at least one operation");
    CHECK_STATUS(bc_expr_eval(NULL, 3, inputs, 1, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_expr_eval(far, 3, inputs, 1, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_expr_eval_out(far, 3, inputs, 1, NULL), BC_ERR_NULL_ARG);
    bc_tensor_free(a);
}

/* ((a - b)**2).mean(0) and where(m, a, 0).sum(): one call each, the bits of bc_expr_eval then
 * bc_mean / bc_sum, planned as one pass; a mean of integers is refused as bc_mean refuses it. */
static void test_fused_reductions(void) {
    const int64_t sa[] = {100, 300}, sb[] = {300};
    float *va = malloc(100 * 300 * sizeof(float));
    float vb[300];
    fill_arange(va, 100 * 300, -100.0f, 0.0173f);
    fill_arange(vb, 300, 0.5f, 0.0333f);
    bc_tensor *a = MAKE_F32(sa, 2, va, 100 * 300), *b = MAKE_F32(sb, 1, vb, 300);
    bc_tensor *zero = MAKE_FULL(BC_DTYPE_FLOAT32, NULL, 0, 0.0), *m = NULL;
    CHECK_OK(bc_gt(a, b, &m));
    const bc_expr_step square[] = {in(0), in(1), op(BC_OP_SUB), {BC_EXPR_UNARY, BC_UNARY_SQUARE, 0, 0.0}};
    const bc_expr_step masked[] = {in(2), in(0), in(3), {BC_EXPR_WHERE, 0, 0, 0.0}};
    const bc_tensor *inputs[] = {a, b, m, zero};
    const int64_t dim0[] = {0};

    bc_tensor *got = SENTINEL, *value = NULL, *want = NULL;
    CHECK_OK(bc_expr_reduce(square, COUNT_OF(square), inputs, 4, BC_REDUCE_MEAN, dim0, 1, false, &got));
    CHECK_SHAPE(got, 300);
    CHECK_OK(bc_expr_eval(square, COUNT_OF(square), inputs, 4, &value));
    CHECK_OK(bc_mean(value, dim0, 1, false, &want));
    check_same(got, want);
    bc_tensor_free(got);
    bc_tensor_free(value);
    bc_tensor_free(want);

    got = SENTINEL;
    CHECK_OK(bc_expr_reduce(masked, COUNT_OF(masked), inputs, 4, BC_REDUCE_SUM, NULL, 0, true, &got));
    CHECK_SHAPE(got, 1, 1);
    CHECK_OK(bc_expr_eval(masked, COUNT_OF(masked), inputs, 4, &value));
    CHECK_OK(bc_sum(value, NULL, 0, true, &want));
    check_same(got, want);

    bc_geometry g[] = {{BC_DTYPE_FLOAT32, 2, sa, NULL}, {BC_DTYPE_FLOAT32, 1, sb, NULL}};
    bc_plan plan;
    CHECK_OK(bc_plan_expr_reduce(square, COUNT_OF(square), g, 2, BC_REDUCE_MEAN, dim0, 1, false, &plan));
    CHECK((plan.flags & BC_PLAN_FUSED) != 0);
    CHECK_EQ_INT(plan.alloc_bytes, 300 * sizeof(float));

    /* The reduction's own refusal, after the expression has been checked. */
    const bc_expr_step ints[] = {in(0), in(0), op(BC_OP_BITWISE_AND)};
    const bc_tensor *mi[] = {m};
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_expr_reduce(ints, COUNT_OF(ints), mi, 1, BC_REDUCE_MEAN, NULL, 0, false, &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_STATUS(bc_expr_reduce(ints, COUNT_OF(ints), mi, 1, 99, NULL, 0, false, &r), BC_ERR_INVALID_ARG);

    bc_tensor *list[] = {a, b, zero, m, got, value, want};
    for (size_t i = 0; i < COUNT_OF(list); i++) bc_tensor_free(list[i]);
    free(va);
}

int main(void) {
    RUN_TEST(matches_the_separate_calls);
    RUN_TEST(fused_reductions);
    RUN_TEST(where_in_place);
    RUN_TEST(ternary_steps);
    RUN_TEST(errors_are_the_calls);
    RUN_TEST(malformed_programs);
    return check_summary();
}
