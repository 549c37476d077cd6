/*
 * views_data.c: the shape-changing views (bc_tensor_view, _reshape, _unsqueeze, _squeeze,
 * _squeeze_all, _flatten), direct data access (bc_tensor_data) and printing (bc_tensor_format)
 * through the C ABI: results, zero-copy (the same address), which reshapes copy, PyTorch's error
 * texts, the out-pointer and NULL conventions, when the address may be written through, and the
 * text buffer protocol. (tests/format.rs checks the text against every row of repr.jsonl.)
 *
 * Expected values are worked out by hand; the texts are PyTorch 2.15's (tests/data/pytorch/
 * views.jsonl holds them too).
 */
#include "check.h"

#define MSG_VIEW_STRIDES                                                                           \
    "view size is not compatible with input tensor's size and stride (at least one dimension "     \
    "spans across two contiguous subspaces). Use .reshape(...) instead."

static void *data_of(const bc_tensor *t) {
    void *p = NULL;
    CHECK_OK(bc_tensor_data(t, &p, NULL, NULL));
    return p;
}

static bool writable_of(const bc_tensor *t) {
    void *p = NULL;
    bool w = true;
    CHECK_OK(bc_tensor_data(t, &p, NULL, &w));
    return w;
}

static void test_view_shares_memory(void) {
    const int64_t shape[] = {2, 3};
    float v[6];
    fill_arange(v, 6, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 2, v, 6);
    bc_tensor *r = NULL;
    const int64_t sizes[] = {3, -1};
    CHECK_OK(bc_tensor_view(t, sizes, 2, &r));
    CHECK_SHAPE(r, 3, 2);
    CHECK_F32(r, 0, 1, 2, 3, 4, 5);
    CHECK(data_of(r) == data_of(t));
    /* A write through the view is seen by the original. */
    const int64_t one[] = {1};
    bc_tensor *ones = MAKE_FULL(BC_DTYPE_FLOAT32, one, 1, 10.0);
    CHECK_OK(bc_add_inplace(r, ones));
    CHECK_F32(t, 10, 11, 12, 13, 14, 15);
    bc_tensor_free(ones);
    bc_tensor_free(r);
    bc_tensor_free(t);
}

static void test_view_refuses_what_reshape_copies(void) {
    const int64_t shape[] = {2, 3};
    float v[6];
    fill_arange(v, 6, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 2, v, 6);
    bc_tensor *tt = NULL;
    CHECK_OK(bc_tensor_transpose(t, 0, 1, &tt)); /* (3, 2), strides (1, 3) */
    const int64_t flat[] = {6};
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_tensor_view(tt, flat, 1, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR(MSG_VIEW_STRIDES);
    CHECK(r == NULL);
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_VIEW_STRIDES);

    bool copied = false;
    CHECK_OK(bc_tensor_reshape(tt, flat, 1, &copied, &r));
    CHECK(copied);
    CHECK_F32(r, 0, 3, 1, 4, 2, 5);
    CHECK(data_of(r) != data_of(t));
    bc_tensor_free(r);
    r = NULL;

    /* The contiguous original reshapes without a copy; `copied` may be NULL. */
    copied = true;
    CHECK_OK(bc_tensor_reshape(t, flat, 1, &copied, &r));
    CHECK(!copied);
    CHECK(data_of(r) == data_of(t));
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_tensor_reshape(t, flat, 1, NULL, &r));
    bc_tensor_free(r);
    bc_tensor_free(tt);
    bc_tensor_free(t);
}

static void test_reshape_errors(void) {
    const int64_t shape[] = {2, 3};
    bc_tensor *t = MAKE_FULL(BC_DTYPE_FLOAT32, shape, 2, 1.0);
    bc_tensor *r = SENTINEL;
    bool copied = true;

    const int64_t bad[] = {2, 5};
    CHECK_STATUS(bc_tensor_reshape(t, bad, 2, &copied, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("shape '[2, 5]' is invalid for input of size 6");
    CHECK(r == NULL);
    CHECK(copied); /* not written on failure */
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_VIEW_SIZE);
    CHECK_EQ_INT(info.size_a, 6);
    int64_t got[4] = {0};
    int64_t n = 0;
    CHECK_OK(bc_last_error_shape(1, got, 4, &n));
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(got[1], 5);

    const int64_t two[] = {-1, -1};
    CHECK_STATUS(bc_tensor_reshape(t, two, 2, NULL, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("only one dimension can be inferred");
    const int64_t neg[] = {-2, 3};
    CHECK_STATUS(bc_tensor_view(t, neg, 2, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("invalid shape dimension -2 at index 0 of shape [-2, 3]");

    const int64_t empty_shape[] = {0, 3};
    bc_tensor *e = MAKE_FULL(BC_DTYPE_FLOAT32, empty_shape, 2, 0.0);
    const int64_t amb[] = {0, -1};
    CHECK_STATUS(bc_tensor_view(e, amb, 2, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("cannot reshape tensor of 0 elements into shape [0, -1] because the "
                     "unspecified dimension size -1 can be any value and is ambiguous");
    bc_tensor_free(e);

    /* Argument checks. */
    CHECK_STATUS(bc_tensor_view(t, NULL, 2, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_view(NULL, bad, 2, &r), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_view(t, bad, 2, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_reshape(t, bad, 2, &copied, NULL), BC_ERR_NULL_ARG);
    /* (NULL, 0) is the 0-d shape, which 6 elements cannot take. */
    CHECK_STATUS(bc_tensor_view(t, NULL, 0, &r), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("shape '[]' is invalid for input of size 6");
    bc_tensor_free(t);
    CHECK_STATUS(bc_tensor_view(t, bad, 2, &r), BC_ERR_INVALID_HANDLE);
    CHECK(r == NULL);
}

static void test_unsqueeze_squeeze(void) {
    const int64_t shape[] = {3};
    float v[3] = {1, 2, 3};
    bc_tensor *t = MAKE_F32(shape, 1, v, 3);
    bc_tensor *col = NULL, *row = NULL, *back = NULL, *same = NULL, *all = NULL;
    CHECK_OK(bc_tensor_unsqueeze(t, -1, &col)); /* (3, 1): a column, the example */
    CHECK_SHAPE(col, 3, 1);
    CHECK_OK(bc_tensor_unsqueeze(t, 0, &row));
    CHECK_SHAPE(row, 1, 3);
    bc_tensor *sum = NULL;
    CHECK_OK(bc_add(col, row, &sum)); /* broadcasts to (3, 3) */
    CHECK_F32(sum, 2, 3, 4, 3, 4, 5, 4, 5, 6);
    CHECK_OK(bc_tensor_squeeze(col, 1, &back));
    CHECK_SHAPE(back, 3);
    CHECK_OK(bc_tensor_squeeze(col, 0, &same)); /* size 3: unchanged */
    CHECK_SHAPE(same, 3, 1);
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_tensor_unsqueeze(t, 2, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    CHECK(r == NULL);
    CHECK_STATUS(bc_tensor_squeeze(col, -3, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("Dimension out of range (expected to be in range of [-2, 1], but got -3)");

    const int64_t ones_shape[] = {1, 3, 1, 1};
    bc_tensor *o = MAKE_FULL(BC_DTYPE_INT32, ones_shape, 4, 7.0);
    CHECK_OK(bc_tensor_squeeze_all(o, &all));
    CHECK_SHAPE(all, 3);
    CHECK(data_of(all) == data_of(o));
    CHECK_STATUS(bc_tensor_squeeze_all(o, NULL), BC_ERR_NULL_ARG);

    bc_tensor *objs[] = {t, col, row, sum, back, same, o, all};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) bc_tensor_free(objs[i]);
}

static void test_unsqueeze_past_max_ndim(void) {
    int64_t shape[BC_MAX_NDIM];
    for (size_t i = 0; i < BC_MAX_NDIM; i++) shape[i] = 1;
    bc_tensor *t = MAKE_FULL(BC_DTYPE_UINT8, shape, BC_MAX_NDIM, 1.0);
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_tensor_unsqueeze(t, 0, &r), BC_ERR_INVALID_ARG);
    CHECK(r == NULL);
    bc_tensor_free(t);
}

static void test_flatten(void) {
    const int64_t shape[] = {2, 3, 4};
    bc_tensor *t = MAKE_FULL(BC_DTYPE_FLOAT64, shape, 3, 2.0);
    bc_tensor *r = NULL;
    bool copied = true;
    CHECK_OK(bc_tensor_flatten(t, 1, -1, &copied, &r));
    CHECK_SHAPE(r, 2, 12);
    CHECK(!copied);
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_tensor_flatten(t, 0, -1, NULL, &r));
    CHECK_SHAPE(r, 24);
    bc_tensor_free(r);
    r = NULL;

    /* A permuted tensor flattens by copying. */
    const int64_t perm[] = {2, 0, 1};
    bc_tensor *p = NULL;
    CHECK_OK(bc_tensor_permute(t, perm, 3, &p));
    CHECK_OK(bc_tensor_flatten(p, 0, 1, &copied, &r));
    CHECK(copied);
    CHECK_SHAPE(r, 8, 3);
    bc_tensor_free(r);
    r = SENTINEL;
    CHECK_STATUS(bc_tensor_flatten(t, 2, 1, &copied, &r), BC_ERR_INVALID_ARG);
    CHECK_LAST_ERROR("flatten() has invalid args: start_dim cannot come after end_dim");
    CHECK(r == NULL);

    /* 0-d becomes 1-d. */
    bc_tensor *s = MAKE_FULL(BC_DTYPE_FLOAT32, NULL, 0, 5.0);
    CHECK_OK(bc_tensor_flatten(s, 0, -1, NULL, &r));
    CHECK_SHAPE(r, 1);
    CHECK_F32(r, 5);
    bc_tensor_free(r);
    bc_tensor_free(s);
    bc_tensor_free(p);
    bc_tensor_free(t);
}

static void test_data_address_and_extent(void) {
    float buf[12];
    fill_arange(buf, 12, 0.0f, 1.0f);
    const int64_t shape[] = {3, 4};
    bc_tensor *w = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, shape, NULL, 2, 0, NULL, NULL, &w));
    bc_tensor *s = NULL;
    CHECK_OK(bc_tensor_slice(w, 0, 1, 3, 1, &s)); /* rows 1..2: offset 4 elements */
    void *p = NULL;
    size_t nbytes = 0;
    bool writable = false;
    CHECK_OK(bc_tensor_data(w, &p, &nbytes, &writable));
    CHECK(p == (void *)buf);
    CHECK_EQ_SIZE(nbytes, sizeof buf);
    CHECK(writable);
    CHECK_OK(bc_tensor_data(s, &p, &nbytes, &writable));
    CHECK(p == (void *)(buf + 4));
    CHECK_EQ_SIZE(nbytes, sizeof buf - 4 * sizeof(float));
    CHECK(writable);
    /* Writing through the address changes the tensor. */
    ((float *)p)[1] = 100.0f;
    CHECK_F32(s, 4, 100, 6, 7, 8, 9, 10, 11);

    /* A broadcast view repeats elements: not writable. */
    const int64_t col_shape[] = {3, 1};
    bc_tensor *col = MAKE_FULL(BC_DTYPE_FLOAT32, col_shape, 2, 1.0);
    const int64_t to[] = {3, 5};
    bc_tensor *e = NULL;
    CHECK_OK(bc_tensor_expand(col, to, 2, &e));
    CHECK(!writable_of(e));
    CHECK(writable_of(col));
    CHECK(data_of(e) == data_of(col));

    /* NULL checks; nothing written on failure. */
    p = (void *)buf;
    CHECK_STATUS(bc_tensor_data(w, NULL, &nbytes, &writable), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_data(NULL, &p, &nbytes, &writable), BC_ERR_NULL_ARG);
    CHECK(p == (void *)buf);
    bc_tensor_free(e);
    bc_tensor_free(col);
    bc_tensor_free(s);
    CHECK_STATUS(bc_tensor_data(s, &p, &nbytes, &writable), BC_ERR_INVALID_HANDLE);
    CHECK(p == (void *)buf);
    bc_tensor_free(w);
}

static void test_format(void) {
    const int64_t shape[] = {2, 2};
    const int16_t v[4] = {1, -2, 300, 4};
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_data(BC_DTYPE_INT16, shape, 2, v, sizeof v, &t));
    const char *want = "tensor([[  1,  -2],\n        [300,   4]], dtype=torch.int16)";
    size_t len = 0;
    CHECK_OK(bc_tensor_format(t, NULL, 0, &len));
    CHECK_EQ_SIZE(len, strlen(want));
    char buf[128];
    memset(buf, 'x', sizeof buf);
    CHECK_OK(bc_tensor_format(t, buf, sizeof buf, &len));
    CHECK_STR_EQ(buf, want);
    /* Truncated to len - 1 bytes and NUL-terminated; the full length still reported. */
    char small[8];
    CHECK_OK(bc_tensor_format(t, small, sizeof small, &len));
    CHECK_STR_EQ(small, "tensor(");
    CHECK_EQ_SIZE(len, strlen(want));
    CHECK_STATUS(bc_tensor_format(t, buf, sizeof buf, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_format(t, NULL, 4, &len), BC_ERR_NULL_ARG);
    /* A broadcast view prints its repeated elements. */
    const int64_t to[] = {2, 2, 2};
    bc_tensor *e = NULL;
    CHECK_OK(bc_tensor_expand(t, to, 3, &e));
    CHECK_OK(bc_tensor_format(e, buf, sizeof buf, &len));
    CHECK_STR_EQ(buf, "tensor([[[  1,  -2],\n         [300,   4]],\n\n        [[  1,  -2],\n"
                      "         [300,   4]]], dtype=torch.int16)");
    bc_tensor_free(e);
    bc_tensor_free(t);
}

int main(void) {
    RUN_TEST(view_shares_memory);
    RUN_TEST(view_refuses_what_reshape_copies);
    RUN_TEST(reshape_errors);
    RUN_TEST(unsqueeze_squeeze);
    RUN_TEST(unsqueeze_past_max_ndim);
    RUN_TEST(flatten);
    RUN_TEST(data_address_and_extent);
    RUN_TEST(format);
    return check_summary();
}
