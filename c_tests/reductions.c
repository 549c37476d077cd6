/*
 * reductions.c: bc_reduce and the named reductions (sum, mean, prod, amax, amin) with their
 * result types and PyTorch's error texts, bc_tensor_sum_to_size, and bc_binary_sum_to against the
 * two calls it replaces; argument checking of all of them.
 *
 * Expected values are worked out by hand; result types and texts are PyTorch 2.15's (see
 * tests/data/pytorch/reductions.jsonl and sum_to_size.jsonl).
 */
#include "check.h"

static const int64_t SHAPE_2x3[] = {2, 3};
/* [[1, 2, 3], [4, 5, 6]] */
static const float DATA_2x3[] = {1, 2, 3, 4, 5, 6};

static void test_sum_over_each_dimension(void) {
    bc_tensor *t = MAKE_F32(SHAPE_2x3, 2, DATA_2x3, 6);
    bc_tensor *r = NULL;
    const int64_t d0[] = {0}, d1[] = {-1}, both[] = {1, 0};

    CHECK_OK(bc_sum(t, d0, 1, false, &r));
    CHECK_SHAPE(r, 3);
    CHECK_F32(r, 5, 7, 9);
    bc_tensor_free(r);
    CHECK_OK(bc_sum(t, d1, 1, true, &r));
    CHECK_SHAPE(r, 2, 1);
    CHECK_F32(r, 6, 15);
    bc_tensor_free(r);
    CHECK_OK(bc_reduce(BC_REDUCE_SUM, t, both, 2, false, &r));
    CHECK_SHAPE0(r);
    CHECK_F32(r, 21);
    bc_tensor_free(r);
    /* (NULL, 0) and an empty list both reduce everything. */
    CHECK_OK(bc_sum(t, NULL, 0, true, &r));
    CHECK_SHAPE(r, 1, 1);
    CHECK_F32(r, 21);
    bc_tensor_free(r);
    CHECK_OK(bc_sum(t, d0, 0, false, &r));
    CHECK_SHAPE0(r);
    CHECK_F32(r, 21);
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_result_types(void) {
    const int64_t shape[] = {4};
    const int8_t i8[] = {100, 100, -3, 1};
    const uint8_t flags[] = {1, 0, 1, 1};
    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    int64_t got = 0;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT8, shape, 1, i8, sizeof i8, &a));
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_BOOL, shape, 1, flags, sizeof flags, &b));

    /* Integer sums and products are int64: no wrapping at int8. */
    CHECK_OK(bc_sum(a, NULL, 0, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    CHECK_OK(bc_tensor_copy_to(r, &got, sizeof got));
    CHECK_EQ_INT(got, 198);
    bc_tensor_free(r);
    CHECK_OK(bc_prod(a, NULL, 0, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    CHECK_OK(bc_tensor_copy_to(r, &got, sizeof got));
    CHECK_EQ_INT(got, -30000);
    bc_tensor_free(r);
    /* A bool sum counts the true elements. */
    CHECK_OK(bc_sum(b, NULL, 0, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    CHECK_OK(bc_tensor_copy_to(r, &got, sizeof got));
    CHECK_EQ_INT(got, 3);
    bc_tensor_free(r);
    /* amax and amin keep the type; of bools they are any and all. */
    uint8_t flag = 9;
    CHECK_OK(bc_amax(a, NULL, 0, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT8);
    bc_tensor_free(r);
    CHECK_OK(bc_amin(b, NULL, 0, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_BOOL);
    CHECK_OK(bc_tensor_copy_to(r, &flag, 1));
    CHECK_EQ_INT(flag, 0);
    bc_tensor_free(r);
    /* mean of integers is refused. */
    r = SENTINEL;
    CHECK_STATUS(bc_mean(a, NULL, 0, false, &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                     "complex dtype. Got: Char");
    bc_tensor_free(b);
    bc_tensor_free(a);
}

static void test_mean_of_float16_keeps_the_type(void) {
    const int64_t shape[] = {1, 2};
    bc_tensor *t = NULL, *r = NULL;
    const int64_t d1[] = {1};
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT16, shape, 2, 1.5, &t));
    CHECK_OK(bc_mean(t, d1, 1, false, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT16);
    CHECK_SHAPE(r, 1);
    bc_tensor *f = NULL;
    CHECK_OK(bc_tensor_to_dtype(r, BC_DTYPE_FLOAT32, &f));
    CHECK_F32(f, 1.5f);
    bc_tensor_free(f);
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_amax_amin_and_nan(void) {
    const float data[] = {3, NAN, -1, 7, 2, 5};
    bc_tensor *t = MAKE_F32(SHAPE_2x3, 2, data, 6);
    bc_tensor *r = NULL;
    const int64_t d1[] = {1}, d0[] = {0};
    float got[3] = {0};
    CHECK_OK(bc_amax(t, d1, 1, false, &r));
    if (read_f32(r, got, 2)) {
        CHECK(isnan(got[0])); /* NaN wins */
        CHECK_EQ_DBL(got[1], 7);
    }
    bc_tensor_free(r);
    CHECK_OK(bc_amin(t, d0, 1, false, &r));
    if (read_f32(r, got, 3)) {
        CHECK_EQ_DBL(got[0], 3);
        CHECK(isnan(got[1]));
        CHECK_EQ_DBL(got[2], -1);
    }
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_empty_reductions(void) {
    const int64_t shape[] = {2, 0};
    bc_tensor *t = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 2, 0.0);
    bc_tensor *r = NULL;
    const int64_t d1[] = {1}, d0[] = {0}, dneg[] = {-1};
    /* Sums of nothing are 0, products 1, means NaN. */
    CHECK_OK(bc_sum(t, d1, 1, false, &r));
    CHECK_F32(r, 0, 0);
    bc_tensor_free(r);
    CHECK_OK(bc_prod(t, d1, 1, false, &r));
    CHECK_F32(r, 1, 1);
    bc_tensor_free(r);
    float got[2] = {0};
    CHECK_OK(bc_mean(t, d1, 1, false, &r));
    if (read_f32(r, got, 2)) CHECK(isnan(got[0]) && isnan(got[1]));
    bc_tensor_free(r);
    /* amax and amin refuse, naming the dimension as given. */
    r = SENTINEL;
    CHECK_STATUS(bc_amax(t, dneg, 1, false, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("amax(): Expected reduction dim -1 to have non-zero size.");
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_EMPTY_REDUCTION);
    CHECK_EQ_INT(info.dim, 1);
    CHECK_STATUS(bc_amin(t, NULL, 0, false, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("amin(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                     "reduction dim with the 'dim' argument.");
    /* Reducing only non-empty dimensions of an empty tensor is fine: an empty result. */
    CHECK_OK(bc_amax(t, d0, 1, false, &r));
    CHECK_SHAPE(r, 0);
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_bad_dimensions(void) {
    bc_tensor *t = MAKE_F32(SHAPE_2x3, 2, DATA_2x3, 6);
    bc_tensor *r = SENTINEL;
    const int64_t out_of_range[] = {0, 2}, repeated[] = {1, -1};
    CHECK_STATUS(bc_sum(t, out_of_range, 2, false, &r), BC_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_DIM_OUT_OF_RANGE);
    CHECK_EQ_INT(info.dim, 2);
    CHECK_STATUS(bc_prod(t, repeated, 2, false, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("dim 1 appears multiple times in the list of dims");
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_DIM_REPEATED);
    /* A 0-d tensor takes dimension 0 or -1, and nothing else. */
    bc_tensor *s = NULL;
    const int64_t zero[] = {0}, minus_one[] = {-1}, one[] = {1};
    CHECK_OK(bc_tensor_full(BC_DTYPE_FLOAT32, NULL, 0, 4.0, &s));
    CHECK_OK(bc_mean(s, zero, 1, true, &r));
    CHECK_SHAPE0(r);
    CHECK_F32(r, 4);
    bc_tensor_free(r);
    CHECK_OK(bc_amin(s, minus_one, 1, false, &r));
    bc_tensor_free(r);
    CHECK_STATUS(bc_sum(s, one, 1, false, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    bc_tensor_free(s);
    bc_tensor_free(t);
}

static void test_sum_to_size(void) {
    bc_tensor *t = MAKE_F32(SHAPE_2x3, 2, DATA_2x3, 6);
    bc_tensor *r = NULL;
    const int64_t cols[] = {3}, rows[] = {2, 1}, bad[] = {4}, negative[] = {-1, 3};
    CHECK_OK(bc_tensor_sum_to_size(t, cols, 1, &r));
    CHECK_SHAPE(r, 3);
    CHECK_F32(r, 5, 7, 9);
    bc_tensor_free(r);
    CHECK_OK(bc_tensor_sum_to_size(t, rows, 2, &r));
    CHECK_SHAPE(r, 2, 1);
    CHECK_F32(r, 6, 15);
    bc_tensor_free(r);
    CHECK_OK(bc_tensor_sum_to_size(t, NULL, 0, &r));
    CHECK_SHAPE0(r);
    CHECK_F32(r, 21);
    bc_tensor_free(r);
    r = SENTINEL;
    CHECK_STATUS(bc_tensor_sum_to_size(t, bad, 1, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("size {[4]} is not expandable to size {[2, 3]}.");
    CHECK_STATUS(bc_tensor_sum_to_size(t, negative, 2, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[-1, 3]} is not expandable to size {[2, 3]}.");
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_NOT_EXPANDABLE);
    int64_t size[4], ndim = 0;
    CHECK_OK(bc_last_error_shape(0, size, 4, &ndim));
    CHECK_DIMS(size, (size_t)ndim, -1, 3);
    bc_tensor_free(t);
}

/* Nothing to sum: the result is a view of the input (PyTorch returns the tensor itself). */
static void test_sum_to_size_of_nothing_is_a_view(void) {
    int32_t data[6] = {1, 2, 3, 4, 5, 6};
    bc_tensor *t = NULL, *r = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_INT32, data, sizeof data, SHAPE_2x3, NULL, 2, 0, NULL, NULL, &t));
    CHECK_OK(bc_tensor_sum_to_size(t, SHAPE_2x3, 2, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT32);
    data[4] = 50;
    int32_t got[6] = {0};
    CHECK_OK(bc_tensor_copy_to(r, got, sizeof got));
    CHECK_EQ_INT(got[4], 50);
    bc_tensor_free(r);
    /* Summing a leading dimension of size 1 is a sum: int64, a new tensor. */
    const int64_t with_lead[] = {1, 2, 3};
    bc_tensor *v = NULL;
    CHECK_OK(bc_tensor_expand(t, with_lead, 3, &v));
    CHECK_OK(bc_tensor_sum_to_size(v, SHAPE_2x3, 2, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    bc_tensor_free(r);
    bc_tensor_free(v);
    bc_tensor_free(t);
}

/* bc_binary_sum_to(op, a, b, size) against bc_binary then bc_tensor_sum_to_size: the same status
 * and message, or the same dtype and bytes. Returns whether both succeeded. */
static bool fused_like_two_calls(int32_t op, const bc_tensor *a, const bc_tensor *b,
                                 const int64_t *size, size_t ndim) {
    bc_tensor *fused = NULL, *prod = NULL, *two = NULL;
    int32_t fs = bc_binary_sum_to(op, a, b, size, ndim, &fused);
    char fmsg[512];
    snprintf(fmsg, sizeof fmsg, "%s", check_last_error());
    int32_t ts = bc_binary(op, a, b, &prod);
    if (ts == BC_OK) {
        ts = bc_tensor_sum_to_size(prod, size, ndim, &two);
    }
    CHECK_EQ_INT(fs, ts);
    bool both = fs == BC_OK && ts == BC_OK;
    if (fs != BC_OK && ts != BC_OK) {
        CHECK_STR_EQ(fmsg, check_last_error());
    }
    if (both) {
        int32_t fd = -1, td = -2;
        int64_t fn = -1, tn = -2;
        CHECK_OK(bc_tensor_dtype(fused, &fd));
        CHECK_OK(bc_tensor_dtype(two, &td));
        CHECK_OK(bc_tensor_numel(fused, &fn));
        CHECK_OK(bc_tensor_numel(two, &tn));
        CHECK_EQ_INT(fd, td);
        CHECK_EQ_INT(fn, tn);
        size_t n = (size_t)tn * bc_dtype_size(td);
        unsigned char x[512], y[512];
        CHECK(fd == td && fn == tn && n <= sizeof x);
        if (fd == td && fn == tn && n <= sizeof x) {
            CHECK_OK(bc_tensor_copy_to(fused, x, n));
            CHECK_OK(bc_tensor_copy_to(two, y, n));
            CHECK(memcmp(x, y, n) == 0);
        }
    }
    bc_tensor_free(two);
    bc_tensor_free(prod);
    bc_tensor_free(fused);
    return both;
}

/* Every operation of the table, fused, on float32 and int32 operands: what the two calls give
 * (operations without a kernel for a type refused alike). */
static void test_binary_sum_to_every_operation(void) {
    const int64_t a_shape[] = {8, 5}, b_shape[] = {5}, to_cols[] = {5}, to_rows[] = {8, 1};
    float af[40], bf[5];
    int32_t ai[40], bi[5];
    for (int i = 0; i < 40; i++) {
        af[i] = (float)((i * 37) % 101) / 7.0f - 6.0f;
        ai[i] = (i * 37) % 23 - 11;
    }
    for (int i = 0; i < 5; i++) {
        bf[i] = 0.75f * (float)i - 1.5f;
        bi[i] = i + 1; /* no zero divisor */
    }
    bc_tensor *fa = MAKE_F32(a_shape, 2, af, 40), *fb = MAKE_F32(b_shape, 1, bf, 5);
    bc_tensor *ia = NULL, *ib = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT32, a_shape, 2, ai, sizeof ai, &ia));
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT32, b_shape, 1, bi, sizeof bi, &ib));
    for (int32_t op = 0; op < BC_OP_COUNT; op++) {
        bool summed = false;
        summed |= fused_like_two_calls(op, fa, fb, to_cols, 1);
        summed |= fused_like_two_calls(op, fa, fb, to_rows, 2);
        summed |= fused_like_two_calls(op, ia, ib, to_cols, 1);
        summed |= fused_like_two_calls(op, ia, ib, to_rows, 2);
        fused_like_two_calls(op, ia, fb, to_cols, 1); /* mixed types */
        CHECK(summed);
    }
    /* Comparisons sum their bools to int64. */
    bc_tensor *r = NULL;
    CHECK_OK(bc_binary_sum_to(BC_OP_GT, fa, fb, to_cols, 1, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    bc_tensor_free(r);
    /* An integer zero divisor is refused before the size is looked at, as by the two calls. */
    const int64_t bad_size[] = {3};
    bc_tensor *zero = MAKE_FULL(BC_DTYPE_INT32, b_shape, 1, 0.0);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_REMAINDER, ia, zero, bad_size, 1, &r), BC_ERR_VALUE);
    CHECK(r == NULL);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_ADD, ia, zero, bad_size, 1, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[3]} is not expandable to size {[8, 5]}.");
    bc_tensor_free(zero);
    bc_tensor_free(ib);
    bc_tensor_free(ia);
    bc_tensor_free(fb);
    bc_tensor_free(fa);
}

/* The fused form gives what the two calls give, bit for bit, and the same errors. */
static void test_binary_sum_to_equals_two_calls(void) {
    const int64_t a_shape[] = {64, 33}, b_shape[] = {33}, to_cols[] = {33}, to_rows[] = {64, 1};
    float a_data[64 * 33], b_data[33];
    for (int i = 0; i < 64 * 33; i++) a_data[i] = (float)((i * 37) % 101) / 7.0f - 6.0f;
    for (int i = 0; i < 33; i++) b_data[i] = 0.1f * (float)i - 1.3f;
    bc_tensor *a = MAKE_F32(a_shape, 2, a_data, 64 * 33);
    bc_tensor *b = MAKE_F32(b_shape, 1, b_data, 33);
    const int32_t ops[] = {BC_OP_ADD, BC_OP_SUB, BC_OP_MUL, BC_OP_DIV};
    const int64_t *sizes[] = {to_cols, to_rows};
    const size_t ndims[] = {1, 2}, counts[] = {33, 64};
    for (size_t o = 0; o < COUNT_OF(ops); o++) {
        for (size_t s = 0; s < 2; s++) {
            bc_tensor *fused = NULL, *prod = NULL, *two = NULL;
            CHECK_OK(bc_binary_sum_to(ops[o], a, b, sizes[s], ndims[s], &fused));
            CHECK_OK(bc_binary(ops[o], a, b, &prod));
            CHECK_OK(bc_tensor_sum_to_size(prod, sizes[s], ndims[s], &two));
            float x[64], y[64];
            if (read_f32(fused, x, counts[s]) && read_f32(two, y, counts[s]))
                CHECK(memcmp(x, y, counts[s] * sizeof(float)) == 0);
            bc_tensor_free(two);
            bc_tensor_free(prod);
            bc_tensor_free(fused);
        }
    }
    /* Nothing summed: a op b itself. */
    bc_tensor *r = NULL;
    CHECK_OK(bc_binary_sum_to(BC_OP_ADD, a, b, a_shape, 2, &r));
    CHECK_SHAPE(r, 64, 33);
    bc_tensor_free(r);
    /* The errors of a op b come first, then those of sum_to_size. */
    const int64_t bad_b_shape[] = {5}, bad_size[] = {2, 33};
    bc_tensor *bad = MAKE_FULL(BC_DTYPE_FLOAT32, bad_b_shape, 1, 1.0);
    r = SENTINEL;
    CHECK_STATUS(bc_binary_sum_to(BC_OP_MUL, a, bad, bad_size, 2, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("The size of tensor a (33) must match the size of tensor b (5) at non-singleton dimension 1");
    CHECK_STATUS(bc_binary_sum_to(BC_OP_MUL, a, b, bad_size, 2, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("size {[2, 33]} is not expandable to size {[64, 33]}.");
    const int64_t one[] = {1};
    bc_tensor *flags = MAKE_FULL(BC_DTYPE_BOOL, one, 1, 1.0);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_SUB, flags, flags, NULL, 0, &r), BC_ERR_DTYPE);
    CHECK_LAST_ERROR(SPEC_MSG_BOOL_SUB);
    bc_tensor_free(flags);
    bc_tensor_free(bad);
    bc_tensor_free(b);
    bc_tensor_free(a);
}

/* Integers: the product in the operands' type (wrapping), summed in int64. */
static void test_binary_sum_to_integer_types(void) {
    const int64_t shape[] = {3, 2}, row[] = {2}, to[] = {2};
    const int8_t a_data[] = {100, 1, 100, 2, 100, 3};
    const int8_t b_data[] = {2, 10};
    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT8, shape, 2, a_data, sizeof a_data, &a));
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT8, row, 1, b_data, sizeof b_data, &b));
    CHECK_OK(bc_binary_sum_to(BC_OP_MUL, a, b, to, 1, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT64);
    int64_t got[2] = {0};
    CHECK_OK(bc_tensor_copy_to(r, got, sizeof got));
    CHECK_EQ_INT(got[0], -168); /* 200 wraps to -56 in int8, three times */
    CHECK_EQ_INT(got[1], 60);
    bc_tensor_free(r);
    bc_tensor_free(b);
    bc_tensor_free(a);
}

static void test_argument_checks(void) {
    bc_tensor *t = MAKE_F32(SHAPE_2x3, 2, DATA_2x3, 6);
    bc_tensor *r = SENTINEL;
    const int64_t d0[] = {0};
    CHECK_STATUS(bc_reduce(5, t, NULL, 0, false, &r), BC_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("unknown reduction code 5");
    CHECK_STATUS(bc_reduce(-1, t, NULL, 0, false, &r), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_sum(NULL, d0, 1, false, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_sum(t, d0, 1, false, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_sum(t, NULL, 1, false, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_sum(t, d0, 65, false, &r), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_tensor_sum_to_size(t, NULL, 1, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_sum_to_size(NULL, NULL, 0, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_COUNT, t, t, NULL, 0, &r), BC_ERR_INVALID_ARG);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_ADD, t, NULL, NULL, 0, &r), BC_ERR_NULL_ARG);
    CHECK(r == NULL);
    bc_tensor *dead = MAKE_F32(SHAPE_2x3, 2, DATA_2x3, 6);
    bc_tensor_free(dead);
    CHECK_STATUS(bc_amax(dead, NULL, 0, false, &r), BC_ERR_INVALID_HANDLE);
    CHECK_STATUS(bc_tensor_sum_to_size(dead, NULL, 0, &r), BC_ERR_INVALID_HANDLE);
    CHECK_STATUS(bc_binary_sum_to(BC_OP_ADD, t, dead, NULL, 0, &r), BC_ERR_INVALID_HANDLE);
    CHECK(r == NULL);
    bc_tensor_free(t);
}

int main(void) {
    RUN_TEST(sum_over_each_dimension);
    RUN_TEST(result_types);
    RUN_TEST(mean_of_float16_keeps_the_type);
    RUN_TEST(amax_amin_and_nan);
    RUN_TEST(empty_reductions);
    RUN_TEST(bad_dimensions);
    RUN_TEST(sum_to_size);
    RUN_TEST(sum_to_size_of_nothing_is_a_view);
    RUN_TEST(binary_sum_to_equals_two_calls);
    RUN_TEST(binary_sum_to_every_operation);
    RUN_TEST(binary_sum_to_integer_types);
    RUN_TEST(argument_checks);
    return check_summary();
}
