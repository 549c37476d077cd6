/*
 * planner.c: the planner (bc_plan_binary, _inplace, _out; bc_plan_reduce, bc_plan_sum_to_size,
 * bc_plan_binary_sum_to) and the layout of new results, through
 * the C ABI: a plan agrees with the call it plans (result type, shape, strides, warnings, the
 * status and message of a refusal), reports how the call would run, checks its own arguments,
 * and writes nothing when it fails; a result of permuted operands keeps their permutation and
 * still reads out row-major.
 *
 * Expected values are worked out by hand (the result strides are PyTorch 2.15's:
 * `(x.permute(2, 0, 1) + y).stride()` for x of shape (4, 8, 8) and y of (8, 1, 1) is
 * (1, 64, 8)).
 */
#include "check.h"

static bc_geometry geometry(int32_t dtype, const int64_t *shape, size_t ndim,
                            const int64_t *strides) {
    bc_geometry g = {dtype, ndim, shape, strides};
    return g;
}

/* A plan filled with a byte pattern, to see that a failed call writes nothing. */
static void scribble(bc_plan *p) { memset(p, 0xAB, sizeof *p); }

static bool untouched(const bc_plan *p) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < sizeof *p; i++)
        if (b[i] != 0xAB) return false;
    return true;
}

/* x.permute(2, 0, 1) + y: the plan and the result keep x's layout. */
static void test_permuted_operands_keep_their_layout(void) {
    const int64_t base_shape[] = {4, 8, 8}, perm[] = {2, 0, 1}, y_shape[] = {8, 1, 1};
    float xv[256], yv[8];
    fill_arange(xv, 256, 0.0f, 1.0f);
    fill_arange(yv, 8, 1000.0f, 1000.0f);
    bc_tensor *base = MAKE_F32(base_shape, 3, xv, 256);
    bc_tensor *y = MAKE_F32(y_shape, 3, yv, 8);
    bc_tensor *x = NULL, *r = NULL, *c = NULL;
    CHECK_OK(bc_tensor_permute(base, perm, 3, &x)); /* (8, 4, 8), strides (1, 64, 8) */

    const int64_t x_shape[] = {8, 4, 8}, x_strides[] = {1, 64, 8};
    bc_geometry gx = geometry(BC_DTYPE_FLOAT32, x_shape, 3, x_strides);
    bc_geometry gy = geometry(BC_DTYPE_FLOAT32, y_shape, 3, NULL);
    bc_plan plan;
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &gx, &gy, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT32);
    CHECK_EQ_INT(plan.compute_dtype, BC_DTYPE_FLOAT32);
    CHECK_DIMS(plan.shape, plan.ndim, 8, 4, 8);
    CHECK_DIMS(plan.strides, plan.ndim, 1, 64, 8);
    CHECK_EQ_SIZE(plan.alloc_bytes, 256 * sizeof(float));
    CHECK_EQ_INT((int)plan.flags, 0);
    /* Small work stays on the calling thread, walked in the result's logical order: its last
     * two dimensions merge (64 = 8 * 8), and the inner loop steps 8 elements through it. */
    CHECK_EQ_SIZE(plan.threads, 1);
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 8, 32);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_STRIDED);

    CHECK_OK(bc_add(x, y, &r));
    CHECK_SHAPE(r, 8, 4, 8);
    CHECK_STRIDES(r, 1, 64, 8);
    bool contiguous = true;
    CHECK_OK(bc_tensor_is_contiguous(r, &contiguous));
    CHECK(!contiguous);
    /* Read out row-major, as copy_to and contiguous give it: r[i][j][k] = x[i][j][k] + y[i]
     * with x[i][j][k] = base[j][k][i] = 64 j + 8 k + i. */
    float want[256];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 8; k++)
                want[(i * 4 + j) * 8 + k] = (float)(64 * j + 8 * k + i) + 1000.0f * (float)(i + 1);
    CHECK_F32_ARRAY(r, want, 256);
    CHECK_OK(bc_tensor_contiguous(r, &c));
    CHECK_STRIDES(c, 32, 8, 1);
    CHECK_F32_ARRAY(c, want, 256);

    bc_tensor_free(c);
    bc_tensor_free(r);
    bc_tensor_free(x);
    bc_tensor_free(y);
    bc_tensor_free(base);
}

/* The plan of a large contiguous case: one merged loop shared by the threads. */
static void test_large_contiguous_plan(void) {
    const int64_t shape[] = {4096, 4096}, row[] = {4096};
    bc_geometry a = geometry(BC_DTYPE_FLOAT32, shape, 2, NULL);
    bc_geometry b = geometry(BC_DTYPE_FLOAT32, row, 1, NULL);
    CHECK_OK(bc_set_num_threads(2));
    CHECK_OK(bc_set_parallel_threshold(0));
    bc_plan plan;
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &a, &a, &plan));
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 16777216);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_CONTIGUOUS);
    CHECK_EQ_SIZE(plan.threads, 2);
    CHECK_EQ_SIZE(plan.alloc_bytes, (size_t)16777216 * 4);
    /* A column operand: one value repeated along each row. */
    const int64_t col[] = {4096, 1};
    bc_geometry c = geometry(BC_DTYPE_FLOAT32, col, 2, NULL);
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &a, &c, &plan));
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 4096, 4096);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_BROADCAST);
    /* Into an `out` of the right shape: nothing allocated. */
    CHECK_OK(bc_plan_binary_out(BC_OP_ADD, &a, &b, &a, &plan));
    CHECK_EQ_SIZE(plan.alloc_bytes, 0);
    CHECK_OK(bc_set_num_threads(0));
}

/* A mixed-type plan: the type computed in, and the converted copy counted. */
static void test_promotion_and_temporaries(void) {
    const int64_t three[] = {3};
    bc_geometry i = geometry(BC_DTYPE_INT32, three, 1, NULL);
    bc_geometry d = geometry(BC_DTYPE_FLOAT64, NULL, 0, NULL);
    bc_plan plan;
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &i, &d, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT64);
    CHECK_EQ_SIZE(plan.alloc_bytes, 24 + 24); /* the result and int32 -> float64 */
    /* Integer division computes in float32. */
    CHECK_OK(bc_plan_binary(BC_OP_DIV, &i, &i, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT32);
    CHECK_EQ_SIZE(plan.alloc_bytes, 12 + 12 + 12);
    /* In place into float64 from int32: no result, one converted copy. */
    bc_geometry f = geometry(BC_DTYPE_FLOAT64, three, 1, NULL);
    CHECK_OK(bc_plan_binary_inplace(BC_OP_ADD, &f, &i, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT64);
    CHECK_DIMS(plan.strides, plan.ndim, 1);
    CHECK_EQ_SIZE(plan.alloc_bytes, 24);
}

/* Refusals: the call's own status and message, and the plan left as it was. */
static void test_refusals_are_the_calls(void) {
    const int64_t s23[] = {2, 3}, s4[] = {4};
    bc_geometry a = geometry(BC_DTYPE_FLOAT32, s23, 2, NULL);
    bc_geometry b = geometry(BC_DTYPE_FLOAT32, s4, 1, NULL);
    bc_plan plan;
    scribble(&plan);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &b, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("The size of tensor a (3) must match the size of tensor b (4) at "
                     "non-singleton dimension 1");
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_NOT_BROADCASTABLE);
    CHECK(untouched(&plan));

    /* float32 into an int32 target. */
    bc_geometry i = geometry(BC_DTYPE_INT32, s23, 2, NULL);
    CHECK_STATUS(bc_plan_binary_inplace(BC_OP_ADD, &i, &a, &plan), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_CAST_FLOAT_TO_INT);
    /* Two bools subtracted. */
    bc_geometry t = geometry(BC_DTYPE_BOOL, s4, 1, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_SUB, &t, &t, &plan), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_BOOL_SUB);
    /* An expanded `out`: its elements share memory, which the strides show. */
    const int64_t expanded[] = {0, 1};
    bc_geometry o = geometry(BC_DTYPE_FLOAT32, s23, 2, expanded);
    CHECK_STATUS(bc_plan_binary_out(BC_OP_ADD, &a, &a, &o, &plan), BC_ERR_OVERLAP);
    CHECK_LAST_ERROR(SPEC_MSG_INTERNAL_OVERLAP);
    /* An `out` of another shape. */
    CHECK_STATUS(bc_plan_binary_out(BC_OP_ADD, &a, &a, &b, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("output with shape [4] doesn't match the broadcast shape [2, 3]");
    CHECK(untouched(&plan));
}

/* The switches: the plan names the warnings the call gives (and the planner gives none). */
static void test_warnings(void) {
    check_warnings w = {0};
    CHECK_OK(bc_set_warning_handler(check_warning_handler, &w));
    const int64_t s3[] = {3}, s13[] = {1, 3}, s31[] = {3, 1}, s2[] = {2};
    bc_geometry a = geometry(BC_DTYPE_FLOAT32, s3, 1, NULL);
    bc_geometry b = geometry(BC_DTYPE_FLOAT32, s13, 2, NULL);
    bc_plan plan;
    CHECK_OK(bc_set_broadcast_warning(true));
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &a, &b, &plan));
    CHECK_EQ_INT((int)plan.flags, BC_PLAN_WARNING_BROADCAST);
    CHECK_OK(bc_set_broadcast_warning(false));
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &a, &b, &plan));
    CHECK_EQ_INT((int)plan.flags, 0);
    /* (3,) + (2,): refused, or computed 1-D under the fallback when the counts match. */
    bc_geometry c = geometry(BC_DTYPE_FLOAT32, s2, 1, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &c, &plan), BC_ERR_SHAPE);
    CHECK_OK(bc_set_legacy_fallback(true));
    bc_geometry d = geometry(BC_DTYPE_FLOAT32, s31, 2, NULL);
    bc_geometry e = geometry(BC_DTYPE_FLOAT32, s13, 2, NULL);
    const int64_t s22[] = {2, 2}, s4[] = {4};
    bc_geometry f = geometry(BC_DTYPE_FLOAT32, s22, 2, NULL);
    bc_geometry g = geometry(BC_DTYPE_FLOAT32, s4, 1, NULL);
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &d, &e, &plan)); /* broadcasts: no fallback */
    CHECK_EQ_INT((int)plan.flags, 0);
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &g, &f, &plan));
    CHECK_EQ_INT((int)plan.flags, BC_PLAN_WARNING_FALLBACK);
    CHECK_DIMS(plan.shape, plan.ndim, 4);
    CHECK_EQ_INT(w.count, 0);
    CHECK_OK(bc_set_legacy_fallback(false));
}

/* The planner's own arguments: each refused with its status, the plan untouched. */
static void test_arguments(void) {
    const int64_t s2[] = {2}, neg[] = {-1}, negstride[] = {-1};
    bc_geometry a = geometry(BC_DTYPE_FLOAT32, s2, 1, NULL);
    bc_plan plan;
    scribble(&plan);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &a, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, NULL, &a, &plan), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_plan_binary_out(BC_OP_ADD, &a, &a, NULL, &plan), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_plan_binary(-1, &a, &a, &plan), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("unknown op code -1");
    bc_geometry bad_dtype = geometry(99, s2, 1, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &bad_dtype, &a, &plan), BC_ERR_INVALID_ARG);
    bc_geometry bad_size = geometry(BC_DTYPE_FLOAT32, neg, 1, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &bad_size, &plan), BC_ERR_INVALID_ARG);
    bc_geometry bad_stride = geometry(BC_DTYPE_FLOAT32, s2, 1, negstride);
    CHECK_STATUS(bc_plan_binary_inplace(BC_OP_ADD, &bad_stride, &a, &plan), BC_ERR_INVALID_ARG);
    bc_geometry no_shape = geometry(BC_DTYPE_FLOAT32, NULL, 1, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &no_shape, &plan), BC_ERR_NULL_ARG);
    const int64_t huge[] = {INT64_MAX, 4};
    bc_geometry too_big = geometry(BC_DTYPE_FLOAT32, huge, 2, NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &too_big, &a, &plan), BC_ERR_OVERFLOW);
    int64_t many[BC_MAX_NDIM + 1];
    for (size_t k = 0; k < COUNT_OF(many); k++) many[k] = 1;
    bc_geometry too_many = geometry(BC_DTYPE_FLOAT32, many, COUNT_OF(many), NULL);
    CHECK_STATUS(bc_plan_binary(BC_OP_ADD, &a, &too_many, &plan), BC_ERR_INVALID_ARG);
    CHECK(untouched(&plan));
    /* (NULL, 0) is the 0-d shape. */
    bc_geometry scalar = geometry(BC_DTYPE_FLOAT32, NULL, 0, NULL);
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &scalar, &scalar, &plan));
    CHECK_EQ_SIZE(plan.ndim, 0);
    CHECK_EQ_SIZE(plan.loop_ndim, 0);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_CONTIGUOUS);
    CHECK_EQ_SIZE(plan.alloc_bytes, 4);
    /* An empty result: nothing to run. */
    const int64_t empty[] = {0, 2};
    bc_geometry e = geometry(BC_DTYPE_FLOAT32, empty, 2, NULL);
    CHECK_OK(bc_plan_binary(BC_OP_ADD, &e, &a, &plan));
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_NONE);
    CHECK_EQ_SIZE(plan.alloc_bytes, 0);
}

/* Reductions (bc_plan_reduce): the result, the type accumulated in, and the loop as outputs and
 * the elements each reduces. */
static void test_reduction_plans(void) {
    const int64_t s64[] = {6, 4}, dim0[] = {0}, dim1[] = {1}, dim2[] = {2}, twice[] = {0, -2};
    bc_geometry h = geometry(BC_DTYPE_FLOAT16, s64, 2, NULL);
    bc_plan plan;
    /* Over dim 0: 4 outputs of 6 elements, the outputs side by side in memory. */
    CHECK_OK(bc_plan_reduce(BC_REDUCE_SUM, &h, dim0, 1, false, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT16);
    CHECK_EQ_INT(plan.compute_dtype, BC_DTYPE_FLOAT32);
    CHECK_DIMS(plan.shape, plan.ndim, 4);
    CHECK_DIMS(plan.strides, plan.ndim, 1);
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 4, 6);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_CONTIGUOUS);
    CHECK_EQ_SIZE(plan.threads, 1);
    CHECK_EQ_SIZE(plan.alloc_bytes, 4 * 2);
    /* keepdim, and every dimension ((NULL, 0)): int8 sums are int64. */
    bc_geometry i8 = geometry(BC_DTYPE_INT8, s64, 2, NULL);
    CHECK_OK(bc_plan_reduce(BC_REDUCE_SUM, &i8, NULL, 0, true, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_INT64);
    CHECK_EQ_INT(plan.compute_dtype, BC_DTYPE_INT64);
    CHECK_DIMS(plan.shape, plan.ndim, 1, 1);
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 1, 24);
    CHECK_EQ_SIZE(plan.alloc_bytes, 8);
    /* An empty reduction fills its 3 outputs. */
    const int64_t s03[] = {0, 3};
    bc_geometry e = geometry(BC_DTYPE_FLOAT32, s03, 2, NULL);
    CHECK_OK(bc_plan_reduce(BC_REDUCE_PROD, &e, dim0, 1, false, &plan));
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 3, 0);
    CHECK_EQ_SIZE(plan.alloc_bytes, 12);

    /* Refusals, with the call's messages; the plan untouched. */
    bc_geometry i32 = geometry(BC_DTYPE_INT32, s64, 2, NULL);
    scribble(&plan);
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_MEAN, &i32, NULL, 0, false, &plan), BC_ERR_DTYPE);
    CHECK_LAST_ERROR("mean(): could not infer output dtype. Input dtype must be either a floating "
                     "point or complex dtype. Got: Int");
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_SUM, &h, dim2, 1, false, &plan), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_SUM, &h, twice, 2, false, &plan), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("dim 0 appears multiple times in the list of dims");
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_AMAX, &e, dim0, 1, false, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("amax(): Expected reduction dim 0 to have non-zero size.");
    CHECK_STATUS(bc_plan_reduce(7, &h, dim1, 1, false, &plan), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_SUM, &h, NULL, 1, false, &plan), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_SUM, NULL, dim1, 1, false, &plan), BC_ERR_NULL_ARG);
    CHECK(untouched(&plan));
    CHECK_STATUS(bc_plan_reduce(BC_REDUCE_SUM, &h, dim1, 1, false, NULL), BC_ERR_NULL_ARG);
}

/* bc_plan_sum_to_size: a sum, a view, a refusal (the call's message too). */
static void test_sum_to_size_plans(void) {
    const int64_t s23[] = {2, 3}, s13[] = {1, 3}, s14[] = {1, 4}, transposed[] = {1, 2};
    bc_geometry t = geometry(BC_DTYPE_FLOAT32, s23, 2, NULL);
    bc_plan plan;
    CHECK_OK(bc_plan_sum_to_size(&t, s13, 2, &plan));
    CHECK_DIMS(plan.shape, plan.ndim, 1, 3);
    CHECK_DIMS(plan.strides, plan.ndim, 3, 1);
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 3, 2);
    CHECK_EQ_SIZE(plan.alloc_bytes, 12);
    /* Nothing summed: the call gives a view of t, with t's strides. */
    bc_geometry v = geometry(BC_DTYPE_FLOAT32, s23, 2, transposed);
    CHECK_OK(bc_plan_sum_to_size(&v, s23, 2, &plan));
    CHECK_DIMS(plan.strides, plan.ndim, 1, 2);
    CHECK_EQ_INT(plan.loop_kind, BC_LOOP_NONE);
    CHECK_EQ_SIZE(plan.loop_ndim, 0);
    CHECK_EQ_SIZE(plan.alloc_bytes, 0);
    scribble(&plan);
    CHECK_STATUS(bc_plan_sum_to_size(&t, s14, 2, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[1, 4]} is not expandable to size {[2, 3]}.");
    CHECK(untouched(&plan));
    bc_tensor *real = NULL, *out = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, s23, 2, &real));
    CHECK_STATUS(bc_tensor_sum_to_size(real, s14, 2, &out), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[1, 4]} is not expandable to size {[2, 3]}.");
    bc_tensor_free(real);
    CHECK_STATUS(bc_plan_sum_to_size(&t, NULL, 1, &plan), BC_ERR_NULL_ARG);
}

/* bc_plan_binary_sum_to: the operation's type, its temporaries, the divisor flag; nothing summed
 * is bc_plan_binary's plan; refusals. */
static void test_binary_sum_to_plans(void) {
    const int64_t s43[] = {4, 3}, s3[] = {3}, s14[] = {1, 4};
    bc_geometry i = geometry(BC_DTYPE_INT32, s43, 2, NULL);
    bc_geometry row = geometry(BC_DTYPE_INT32, s3, 1, NULL);
    bc_plan plan, binary;
    /* int32 // int32 summed to (3,): int64 sums, computed in int32, the divisor read. */
    CHECK_OK(bc_plan_binary_sum_to(BC_OP_FLOOR_DIVIDE, &i, &row, s3, 1, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_INT64);
    CHECK_EQ_INT(plan.compute_dtype, BC_DTYPE_INT32);
    CHECK_EQ_INT((int)plan.flags, BC_PLAN_CHECKS_DIVISOR);
    CHECK_DIMS(plan.shape, plan.ndim, 3);
    CHECK_DIMS(plan.loop_shape, plan.loop_ndim, 3, 4);
    CHECK_EQ_SIZE(plan.alloc_bytes, 3 * 8);
    /* int32 + a float64 0-d tensor (of a higher category: its type wins) computes in float64:
     * the int32 input converted, and the result. */
    bc_geometry d = geometry(BC_DTYPE_FLOAT64, NULL, 0, NULL);
    CHECK_OK(bc_plan_binary_sum_to(BC_OP_ADD, &i, &d, s3, 1, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT64);
    CHECK_EQ_INT(plan.compute_dtype, BC_DTYPE_FLOAT64);
    CHECK_EQ_SIZE(plan.alloc_bytes, 12 * 8 + 3 * 8);
    /* Nothing summed: a op b itself. */
    CHECK_OK(bc_plan_binary_sum_to(BC_OP_MUL, &i, &row, s43, 2, &plan));
    CHECK_OK(bc_plan_binary(BC_OP_MUL, &i, &row, &binary));
    CHECK(memcmp(&plan, &binary, sizeof plan) == 0);

    scribble(&plan);
    bc_geometry b = geometry(BC_DTYPE_BOOL, s43, 2, NULL);
    CHECK_STATUS(bc_plan_binary_sum_to(BC_OP_SUB, &b, &b, s3, 1, &plan), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_BOOL_SUB);
    CHECK_STATUS(bc_plan_binary_sum_to(BC_OP_ADD, &i, &row, s14, 2, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[1, 4]} is not expandable to size {[4, 3]}.");
    CHECK_STATUS(bc_plan_binary_sum_to(BC_OP_ADD, &i, NULL, s3, 1, &plan), BC_ERR_NULL_ARG);
    CHECK(untouched(&plan));
}

/* A whole expression (bc_plan_expr): a * b + 1.0, fused into one pass that allocates only the
 * result; the first failing step's error; a malformed program's. */
static void test_expression(void) {
    const int64_t s23[] = {2, 3}, s3[] = {3}, s4[] = {4};
    bc_geometry in[] = {geometry(BC_DTYPE_FLOAT32, s23, 2, NULL),
                        geometry(BC_DTYPE_FLOAT32, s3, 1, NULL)};
    const bc_expr_step prog[] = {
        {BC_EXPR_INPUT, 0, 0, 0.0}, {BC_EXPR_INPUT, 1, 0, 0.0}, {BC_EXPR_OP, BC_OP_MUL, 0, 0.0},
        {BC_EXPR_CONST, BC_DTYPE_FLOAT64, 0, 1.0}, {BC_EXPR_OP, BC_OP_ADD, 0, 0.0}};
    bc_plan plan;
    CHECK_OK(bc_plan_expr(prog, COUNT_OF(prog), in, 2, &plan));
    CHECK_EQ_INT(plan.dtype, BC_DTYPE_FLOAT32); /* a 0-d float64 constant does not promote */
    CHECK_DIMS(plan.shape, plan.ndim, 2, 3);
    CHECK_DIMS(plan.strides, plan.ndim, 3, 1);
    CHECK_EQ_INT((int)plan.flags, 0);
    CHECK_EQ_SIZE(plan.alloc_bytes, 6 * 4);
    bc_geometry out = geometry(BC_DTYPE_FLOAT64, s23, 2, NULL);
    CHECK_OK(bc_plan_expr_out(prog, COUNT_OF(prog), in, 2, &out, &plan));
    CHECK_EQ_SIZE(plan.alloc_bytes, 0);
    /* b of 4 elements: the first step fails as bc_binary does. */
    in[1] = geometry(BC_DTYPE_FLOAT32, s4, 1, NULL);
    scribble(&plan);
    CHECK_STATUS(bc_plan_expr(prog, COUNT_OF(prog), in, 2, &plan), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("The size of tensor a (3) must match the size of tensor b (4) at "
                     "non-singleton dimension 1");
    CHECK_STATUS(bc_plan_expr(prog, 4, in, 2, &plan), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("the expression leaves 2 values; it must leave exactly one");
    CHECK(untouched(&plan));
}

int main(void) {
    RUN_TEST(permuted_operands_keep_their_layout);
    RUN_TEST(large_contiguous_plan);
    RUN_TEST(promotion_and_temporaries);
    RUN_TEST(refusals_are_the_calls);
    RUN_TEST(warnings);
    RUN_TEST(arguments);
    RUN_TEST(reduction_plans);
    RUN_TEST(sum_to_size_plans);
    RUN_TEST(binary_sum_to_plans);
    RUN_TEST(expression);
    return check_summary();
}
