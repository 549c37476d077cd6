/*
 * ops.c: element values across dtypes, type promotion, the out= and in-place forms, views
 * (expand, permute, transpose, slice with step, as_strided) as operands, broadcast_tensors, and the
 * legacy switches in place.
 *
 * Expected values are worked out by hand here, and the result types follow
 * tests/data/pytorch/promotion.jsonl (PyTorch 2.x result_type).
 */
#include "check.h"

/* A float32 row-major copy of any tensor, through bc_tensor_to_dtype. */
static bool read_as_f32(const bc_tensor *t, float *buf, size_t n) {
    bc_tensor *f = NULL;
    int32_t s = bc_tensor_to_dtype(t, BC_DTYPE_FLOAT32, &f);
    if (s != BC_OK) {
        CHECK_OK(s);
        return false;
    }
    bool ok = read_f32(f, buf, n);
    CHECK(ok);
    bc_tensor_free(f);
    return ok;
}

/* ============================================================================================== */
/* Dtypes                                                                                          */
/* ============================================================================================== */

static void test_int8_wraps(void) {
    const int64_t shape[] = {5};
    const int8_t a[5] = {100, 127, -128, 16, -100};
    const int8_t b[5] = {100, 1, -1, 16, -100};
    bc_tensor *ta = make_raw(BC_DTYPE_INT8, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT8, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    int8_t got[5] = {0};

    CHECK_OK(bc_add(ta, tb, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT8);
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], -56);  /* 200 wraps */
        CHECK_EQ_INT(got[1], -128); /* 128 wraps */
        CHECK_EQ_INT(got[2], 127);  /* -129 wraps */
        CHECK_EQ_INT(got[3], 32);
        CHECK_EQ_INT(got[4], 56); /* -200 wraps */
    }
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_mul(ta, tb, &r));
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 16);   /* 10000 mod 256 = 16 */
        CHECK_EQ_INT(got[1], 127);
        CHECK_EQ_INT(got[2], -128); /* 128 wraps */
        CHECK_EQ_INT(got[3], 0);    /* 256 wraps */
        CHECK_EQ_INT(got[4], 16);
    }
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_sub(ta, tb, &r));
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[1], 126);
        CHECK_EQ_INT(got[2], -127);
    }
    bc_tensor_free(r);
    /* int8 tensor + int64 0-d stays int8 (0-d never widens within a category) */
    const int64_t big = 300;
    bc_tensor *scalar = make_raw(BC_DTYPE_INT64, NULL, 0, &big, sizeof big);
    r = NULL;
    CHECK_OK(bc_add(ta, scalar, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT8);
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], (int8_t)(100 + 44)); /* 300 -> int8 is 44; 144 wraps to -112 */
    }
    bc_tensor_free(r);
    bc_tensor_free(scalar);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
}

static void test_uint8_wraps_and_promotes(void) {
    const int64_t shape[] = {3};
    const uint8_t a[3] = {250, 3, 16};
    const uint8_t b[3] = {10, 5, 16};
    bc_tensor *ta = make_raw(BC_DTYPE_UINT8, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_UINT8, shape, 1, b, sizeof b);
    uint8_t got[3] = {0};
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(ta, tb, &r));
    CHECK_DTYPE(r, BC_DTYPE_UINT8);
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 4);
        CHECK_EQ_INT(got[1], 8);
        CHECK_EQ_INT(got[2], 32);
    }
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_sub(ta, tb, &r));
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 240);
        CHECK_EQ_INT(got[1], 254); /* 3 - 5 wraps */
        CHECK_EQ_INT(got[2], 0);
    }
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_mul(ta, tb, &r));
    if (read_raw(r, got, sizeof got)) CHECK_EQ_INT(got[2], 0); /* 256 wraps */
    bc_tensor_free(r);

    /* uint8 + int8 -> int16 (no wrap) */
    const int8_t c[3] = {-1, -5, 100};
    bc_tensor *tc = make_raw(BC_DTYPE_INT8, shape, 1, c, sizeof c);
    r = NULL;
    CHECK_OK(bc_add(ta, tc, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT16);
    int16_t g16[3] = {0};
    if (read_raw(r, g16, sizeof g16)) {
        CHECK_EQ_INT(g16[0], 249);
        CHECK_EQ_INT(g16[1], -2);
        CHECK_EQ_INT(g16[2], 116);
    }
    bc_tensor_free(r);
    /* in place uint8 += int8 keeps uint8 */
    CHECK_OK(bc_add_inplace(ta, tc));
    CHECK_DTYPE(ta, BC_DTYPE_UINT8);
    if (read_raw(ta, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 249);
        CHECK_EQ_INT(got[1], 254);
        CHECK_EQ_INT(got[2], 116);
    }
    bc_tensor_free(tc);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
}

static void test_float16_and_bfloat16(void) {
    const int64_t shape[] = {4};
    /* IEEE half bit patterns: 1.5, -0.5, 65504 (max), 0.1 (0x2E66 = 0.0999755859375) */
    const uint16_t ha[4] = {0x3E00, 0xB800, 0x7BFF, 0x2E66};
    /* 2.25, 0.5, 65504, 1.0 */
    const uint16_t hb[4] = {0x4080, 0x3800, 0x7BFF, 0x3C00};
    bc_tensor *a = make_raw(BC_DTYPE_FLOAT16, shape, 1, ha, sizeof ha);
    bc_tensor *b = make_raw(BC_DTYPE_FLOAT16, shape, 1, hb, sizeof hb);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(a, b, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT16);
    uint16_t bits[4] = {0};
    if (read_raw(r, bits, sizeof bits)) {
        CHECK_EQ_INT(bits[0], 0x4380); /* 3.75 */
        CHECK_EQ_INT(bits[1], 0x0000); /* +0 */
        CHECK_EQ_INT(bits[2], 0x7C00); /* +inf: overflow */
    }
    float f[4] = {0};
    if (read_as_f32(r, f, 4)) {
        CHECK_EQ_DBL(f[0], 3.75);
        CHECK_EQ_DBL(f[1], 0.0);
        CHECK(isinf(f[2]) && f[2] > 0);
        CHECK_EQ_DBL(f[3], 1.099609375); /* 1 + 0.0999755859375 rounded to half */
    }
    bc_tensor_free(r);

    /* float16 * float32 -> float32 */
    const float fx[4] = {2.0f, 2.0f, 0.5f, 10.0f};
    bc_tensor *x = MAKE_F32(shape, 1, fx, 4);
    r = NULL;
    CHECK_OK(bc_mul(a, x, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    CHECK_F32(r, 3.0f, -1.0f, 32752.0f, 0.999755859375f);
    bc_tensor_free(r);

    /* bfloat16: 1.5 (0x3FC0) + 2.25 (0x4010) = 3.75 (0x4070) */
    const uint16_t ba[1] = {0x3FC0}, bb[1] = {0x4010};
    const int64_t one[] = {1};
    bc_tensor *bfa = make_raw(BC_DTYPE_BFLOAT16, one, 1, ba, sizeof ba);
    bc_tensor *bfb = make_raw(BC_DTYPE_BFLOAT16, one, 1, bb, sizeof bb);
    r = NULL;
    CHECK_OK(bc_add(bfa, bfb, &r));
    CHECK_DTYPE(r, BC_DTYPE_BFLOAT16);
    uint16_t bbits[1] = {0};
    if (read_raw(r, bbits, sizeof bbits)) CHECK_EQ_INT(bbits[0], 0x4070);
    bc_tensor_free(r);
    /* float16 * bfloat16 -> float32 */
    const int64_t one_h[] = {1};
    bc_tensor *h1 = make_raw(BC_DTYPE_FLOAT16, one_h, 1, ha, 2);
    r = NULL;
    CHECK_OK(bc_mul(h1, bfa, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    CHECK_F32(r, 2.25f);
    bc_tensor_free(r);

    /* conversions from float32 round to nearest even */
    const float third[1] = {1.0f / 3.0f};
    bc_tensor *t3 = MAKE_F32(one, 1, third, 1);
    bc_tensor *h = NULL;
    CHECK_OK(bc_tensor_to_dtype(t3, BC_DTYPE_FLOAT16, &h));
    uint16_t hbits = 0;
    if (read_raw(h, &hbits, sizeof hbits)) CHECK_EQ_INT(hbits, 0x3555);
    bc_tensor_free(h);
    h = NULL;
    CHECK_OK(bc_tensor_to_dtype(t3, BC_DTYPE_BFLOAT16, &h));
    if (read_raw(h, &hbits, sizeof hbits)) CHECK_EQ_INT(hbits, 0x3EAB);
    bc_tensor_free(h);

    bc_tensor_free(t3);
    bc_tensor_free(h1);
    bc_tensor_free(bfa);
    bc_tensor_free(bfb);
    bc_tensor_free(x);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

static void test_bool_ops(void) {
    const int64_t shape[] = {4};
    const uint8_t a[4] = {1, 1, 0, 0}, b[4] = {1, 0, 1, 0};
    bc_tensor *ta = make_raw(BC_DTYPE_BOOL, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_BOOL, shape, 1, b, sizeof b);
    uint8_t got[4] = {9, 9, 9, 9};
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(ta, tb, &r)); /* logical or */
    CHECK_DTYPE(r, BC_DTYPE_BOOL);
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 1);
        CHECK_EQ_INT(got[1], 1);
        CHECK_EQ_INT(got[2], 1);
        CHECK_EQ_INT(got[3], 0);
    }
    bc_tensor_free(r);
    r = NULL;
    CHECK_OK(bc_mul(ta, tb, &r)); /* logical and */
    CHECK_DTYPE(r, BC_DTYPE_BOOL);
    if (read_raw(r, got, sizeof got)) {
        CHECK_EQ_INT(got[0], 1);
        CHECK_EQ_INT(got[1], 0);
        CHECK_EQ_INT(got[2], 0);
        CHECK_EQ_INT(got[3], 0);
    }
    bc_tensor_free(r);
    /* bool / bool -> float32 */
    r = NULL;
    CHECK_OK(bc_div(ta, tb, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    float f[4] = {0};
    if (read_f32(r, f, 4)) {
        CHECK_EQ_DBL(f[0], 1.0);
        CHECK(isinf(f[1]) && f[1] > 0);
        CHECK_EQ_DBL(f[2], 0.0);
        CHECK(isnan(f[3]));
    }
    bc_tensor_free(r);
    /* bool + int8 -> int8 */
    const int8_t c[4] = {10, 20, -30, 127};
    bc_tensor *tc = make_raw(BC_DTYPE_INT8, shape, 1, c, sizeof c);
    r = NULL;
    CHECK_OK(bc_add(ta, tc, &r));
    CHECK_DTYPE(r, BC_DTYPE_INT8);
    int8_t g8[4] = {0};
    if (read_raw(r, g8, sizeof g8)) {
        CHECK_EQ_INT(g8[0], 11);
        CHECK_EQ_INT(g8[1], 21);
        CHECK_EQ_INT(g8[2], -30);
        CHECK_EQ_INT(g8[3], 127);
    }
    bc_tensor_free(r);
    bc_tensor_free(tc);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
}

static void test_int_div_gives_float32(void) {
    const int64_t shape[] = {5};
    const int32_t a[5] = {7, -7, 1, 0, 1};
    const int32_t b[5] = {2, 2, 3, 5, 0};
    bc_tensor *ta = make_raw(BC_DTYPE_INT32, shape, 1, a, sizeof a);
    bc_tensor *tb = make_raw(BC_DTYPE_INT32, shape, 1, b, sizeof b);
    bc_tensor *r = NULL;
    CHECK_OK(bc_div(ta, tb, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    float f[5] = {0};
    if (read_f32(r, f, 5)) {
        CHECK_EQ_DBL(f[0], 3.5);
        CHECK_EQ_DBL(f[1], -3.5);
        CHECK_NEAR(f[2], 1.0f / 3.0f, 1.2e-7);
        CHECK_EQ_DBL(f[3], 0.0);
        CHECK(isinf(f[4]) && f[4] > 0);
    }
    bc_tensor_free(r);

    const int64_t la[2] = {9, -9}, lb[2] = {4, 4};
    const int64_t two[] = {2};
    bc_tensor *l1 = make_raw(BC_DTYPE_INT64, two, 1, la, sizeof la);
    bc_tensor *l2 = make_raw(BC_DTYPE_INT64, two, 1, lb, sizeof lb);
    r = NULL;
    CHECK_OK(bc_binary(BC_OP_DIV, l1, l2, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT32);
    CHECK_F32(r, 2.25f, -2.25f);
    bc_tensor_free(r);

    /* int32 tensor + float64 0-d -> float64 (oracle/promotion.jsonl) */
    const double half = 0.5;
    bc_tensor *s = make_raw(BC_DTYPE_FLOAT64, NULL, 0, &half, sizeof half);
    r = NULL;
    CHECK_OK(bc_add(ta, s, &r));
    CHECK_DTYPE(r, BC_DTYPE_FLOAT64);
    double d[5] = {0};
    if (read_raw(r, d, sizeof d)) {
        CHECK_EQ_DBL(d[0], 7.5);
        CHECK_EQ_DBL(d[1], -6.5);
    }
    bc_tensor_free(r);
    bc_tensor_free(s);
    bc_tensor_free(l1);
    bc_tensor_free(l2);
    bc_tensor_free(ta);
    bc_tensor_free(tb);
}

static void test_to_dtype_conversions(void) {
    const int64_t shape[] = {5};
    const float v[5] = {2.7f, -2.7f, 0.0f, -0.0f, 0.25f};
    bc_tensor *t = MAKE_F32(shape, 1, v, 5);
    bc_tensor *i = NULL, *b = NULL;
    CHECK_OK(bc_tensor_to_dtype(t, BC_DTYPE_INT32, &i));
    CHECK_DTYPE(i, BC_DTYPE_INT32);
    int32_t gi[5] = {0};
    if (read_raw(i, gi, sizeof gi)) {
        CHECK_EQ_INT(gi[0], 2); /* C-style cast: truncation */
        CHECK_EQ_INT(gi[1], -2);
        CHECK_EQ_INT(gi[2], 0);
        CHECK_EQ_INT(gi[4], 0);
    }
    CHECK_OK(bc_tensor_to_dtype(t, BC_DTYPE_BOOL, &b));
    uint8_t gb[5] = {9, 9, 9, 9, 9};
    if (read_raw(b, gb, sizeof gb)) {
        CHECK_EQ_INT(gb[0], 1);
        CHECK_EQ_INT(gb[1], 1);
        CHECK_EQ_INT(gb[2], 0);
        CHECK_EQ_INT(gb[3], 0); /* -0.0 != 0 is false */
        CHECK_EQ_INT(gb[4], 1);
    }
    /* to_dtype always makes a new row-major copy */
    bc_tensor *same = NULL;
    CHECK_OK(bc_tensor_to_dtype(t, BC_DTYPE_FLOAT32, &same));
    CHECK_OK(bc_add_inplace(same, same));
    CHECK_F32(t, 2.7f, -2.7f, 0.0f, -0.0f, 0.25f);
    bc_tensor_free(same);
    bc_tensor_free(i);
    bc_tensor_free(b);
    bc_tensor_free(t);
}

/* ============================================================================================== */
/* out= and in place                                                                               */
/* ============================================================================================== */

static void test_out_variant(void) {
    const int64_t a_shape[] = {2, 1}, b_shape[] = {3}, r_shape[] = {2, 3};
    const float da[2] = {10.0f, 20.0f}, db[3] = {1.0f, 2.0f, 3.0f};
    bc_tensor *a = MAKE_F32(a_shape, 2, da, 2);
    bc_tensor *b = MAKE_F32(b_shape, 1, db, 3);
    bc_tensor *out = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT32, r_shape, 2, &out));
    CHECK_OK(bc_add_out(a, b, out));
    CHECK_F32(out, 11, 12, 13, 21, 22, 23);
    CHECK_OK(bc_sub_out(a, b, out));
    CHECK_F32(out, 9, 8, 7, 19, 18, 17);
    CHECK_OK(bc_mul_out(a, b, out));
    CHECK_F32(out, 10, 20, 30, 20, 40, 60);
    CHECK_OK(bc_div_out(a, b, out));
    CHECK_F32(out, 10.0f, 5.0f, 10.0f / 3.0f, 20.0f, 10.0f, 20.0f / 3.0f);
    CHECK_OK(bc_binary_out(BC_OP_ADD, b, a, out));
    CHECK_F32(out, 11, 12, 13, 21, 22, 23);

    /* out may be a strided view: here the transpose of a (3,2) buffer */
    float tbuf[6] = {0};
    const int64_t t_shape[] = {2, 3}, t_strides[] = {1, 2};
    bc_tensor *tout = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, tbuf, sizeof tbuf, t_shape, t_strides, 2, 0, NULL, NULL, &tout));
    CHECK_OK(bc_add_out(a, b, tout));
    const float want_t[6] = {11, 21, 12, 22, 13, 23};
    for (int i = 0; i < 6; i++) CHECK_EQ_DBL(tbuf[i], want_t[i]);

    /* a wider out dtype receives the cast result: float32 result into float64 out */
    bc_tensor *out64 = NULL;
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_FLOAT64, r_shape, 2, &out64));
    CHECK_OK(bc_mul_out(a, b, out64));
    double d[6] = {0};
    if (read_raw(out64, d, sizeof d)) {
        CHECK_EQ_DBL(d[0], 10.0);
        CHECK_EQ_DBL(d[5], 60.0);
    }
    bc_tensor_free(out64);
    bc_tensor_free(tout);
    bc_tensor_free(out);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

static void test_inplace_writes_through_wrapped_memory(void) {
    float buf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int64_t shape[] = {2, 2}, strides[] = {4, 2};
    bc_tensor *v = NULL; /* elements 1, 3, 5, 7 */
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, shape, strides, 2, 1, NULL, NULL, &v));
    bool contig = true;
    CHECK_OK(bc_tensor_is_contiguous(v, &contig));
    CHECK(!contig);
    int64_t off = -1;
    CHECK_OK(bc_tensor_offset(v, &off));
    CHECK_EQ_INT(off, 1);
    const int64_t col_shape[] = {2, 1};
    const float col[2] = {100.0f, 200.0f};
    bc_tensor *c = MAKE_F32(col_shape, 2, col, 2);
    CHECK_OK(bc_add_inplace(v, c));
    const float want[8] = {0, 101, 2, 103, 4, 205, 6, 207};
    for (int i = 0; i < 8; i++) CHECK_EQ_DBL(buf[i], want[i]);
    /* a 0-d other broadcasts to anything */
    const float two = 2.0f;
    bc_tensor *s = MAKE_F32(NULL, 0, &two, 1);
    CHECK_OK(bc_mul_inplace(v, s));
    CHECK_F32(v, 202, 206, 410, 414);
    CHECK_EQ_DBL(buf[0], 0.0);
    CHECK_EQ_DBL(buf[2], 2.0);
    bc_tensor_free(s);
    bc_tensor_free(c);
    bc_tensor_free(v);
}

static void test_legacy_fallback_inplace(void) {
    const int64_t s_shape[] = {4}, o_shape[] = {2, 2};
    const float ds[4] = {1, 2, 3, 4}, dot[4] = {10, 20, 30, 40};
    bc_tensor *self = MAKE_F32(s_shape, 1, ds, 4);
    bc_tensor *other = MAKE_F32(o_shape, 2, dot, 4);
    check_warnings w;
    capture_warnings(&w);
    CHECK_STATUS(bc_add_inplace(self, other), BC_ERR_SHAPE);
    CHECK_F32(self, 1, 2, 3, 4);
    CHECK_EQ_INT(w.count, 0);
    CHECK_OK(bc_set_legacy_fallback(true));
    CHECK_OK(bc_add_inplace(self, other));
    CHECK_SHAPE(self, 4);
    CHECK_F32(self, 11, 22, 33, 44);
    CHECK_EQ_INT(w.count, 1);
    CHECK_STR_EQ(w.first, SPEC_WARN_FALLBACK_INPLACE);
    /* not the same number of elements: still an error, no warning */
    const int64_t o3[] = {3};
    bc_tensor *three = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, o3, 1, &three));
    CHECK_STATUS(bc_add_inplace(self, three), BC_ERR_SHAPE);
    bc_tensor *r = SENTINEL;
    CHECK_STATUS(bc_add(self, three, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_EQ_INT(w.count, 1);
    bc_tensor_free(three);
    bc_tensor_free(self);
    bc_tensor_free(other);
}

/* ============================================================================================== */
/* Views                                                                                           */
/* ============================================================================================== */

static void test_permute_and_transpose(void) {
    const int64_t shape[] = {2, 3, 4};
    float d[24];
    fill_arange(d, 24, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 3, d, 24);
    bc_tensor *p = NULL;
    const int64_t dims[] = {2, 0, -2}; /* negative dims count from the end */
    CHECK_OK(bc_tensor_permute(t, dims, 3, &p));
    CHECK_SHAPE(p, 4, 2, 3);
    CHECK_STRIDES(p, 1, 12, 4);
    bool contig = true;
    CHECK_OK(bc_tensor_is_contiguous(p, &contig));
    CHECK(!contig);
    float want[24];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) want[(k * 2 + i) * 3 + j] = d[(i * 3 + j) * 4 + k];
    CHECK_F32_ARRAY(p, want, 24);

    bc_tensor *c = NULL;
    CHECK_OK(bc_tensor_contiguous(p, &c));
    CHECK_SHAPE(c, 4, 2, 3);
    CHECK_STRIDES(c, 6, 3, 1);
    contig = false;
    CHECK_OK(bc_tensor_is_contiguous(c, &contig));
    CHECK(contig);
    CHECK_F32_ARRAY(c, want, 24);

    bc_tensor *tr = NULL;
    CHECK_OK(bc_tensor_transpose(t, 0, -1, &tr));
    CHECK_SHAPE(tr, 4, 3, 2);
    CHECK_STRIDES(tr, 1, 4, 12);

    /* an op on two differently permuted operands */
    bc_tensor *sum = NULL, *back = NULL;
    const int64_t inv[] = {1, 2, 0};
    CHECK_OK(bc_tensor_permute(p, inv, 3, &back)); /* back to (2,3,4) */
    CHECK_SHAPE(back, 2, 3, 4);
    CHECK_OK(bc_add(back, t, &sum));
    float want2[24];
    for (int i = 0; i < 24; i++) want2[i] = 2.0f * d[i];
    CHECK_F32_ARRAY(sum, want2, 24);

    /* invalid permutations */
    const int64_t repeated[] = {0, 0, 1}, out_of_range[] = {0, 1, 3};
    bc_tensor *bad = SENTINEL;
    CHECK_STATUS(bc_tensor_permute(t, repeated, 3, &bad), BC_ERR_INVALID_ARG);
    CHECK(bad == NULL);
    bad = SENTINEL;
    CHECK_STATUS(bc_tensor_permute(t, out_of_range, 3, &bad), BC_ERR_INVALID_ARG);
    CHECK(bad == NULL);
    bad = SENTINEL;
    CHECK_STATUS(bc_tensor_permute(t, dims, 2, &bad), BC_ERR_INVALID_ARG);
    CHECK(bad == NULL);
    bad = SENTINEL;
    CHECK_STATUS(bc_tensor_transpose(t, 0, 3, &bad), BC_ERR_INVALID_ARG);
    CHECK(bad == NULL);

    bc_tensor_free(sum);
    bc_tensor_free(back);
    bc_tensor_free(tr);
    bc_tensor_free(c);
    bc_tensor_free(p);
    bc_tensor_free(t);
}

static void test_slice_with_step(void) {
    const int64_t shape[] = {10};
    float d[10];
    fill_arange(d, 10, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 1, d, 10);
    bc_tensor *s = NULL;
    CHECK_OK(bc_tensor_slice(t, 0, 1, 9, 3, &s));
    CHECK_SHAPE(s, 3);
    CHECK_STRIDES(s, 3);
    int64_t off = -1;
    CHECK_OK(bc_tensor_offset(s, &off));
    CHECK_EQ_INT(off, 1);
    CHECK_F32(s, 1, 4, 7);
    bc_tensor_free(s);

    s = NULL; /* negative start counts from the end; stop is clamped */
    CHECK_OK(bc_tensor_slice(t, 0, -3, INT64_MAX, 1, &s));
    CHECK_F32(s, 7, 8, 9);
    bc_tensor_free(s);
    s = NULL;
    CHECK_OK(bc_tensor_slice(t, -1, -100, -8, 1, &s));
    CHECK_F32(s, 0, 1);
    bc_tensor_free(s);
    s = NULL; /* empty slice */
    CHECK_OK(bc_tensor_slice(t, 0, 5, 2, 1, &s));
    CHECK_SHAPE(s, 0);
    bc_tensor_free(s);

    /* step < 1 and a bad dim are refused */
    s = SENTINEL;
    CHECK_STATUS(bc_tensor_slice(t, 0, 0, 10, 0, &s), BC_ERR_INVALID_ARG);
    CHECK(s == NULL);
    s = SENTINEL;
    CHECK_STATUS(bc_tensor_slice(t, 0, 0, 10, -1, &s), BC_ERR_INVALID_ARG);
    CHECK(s == NULL);
    s = SENTINEL;
    CHECK_STATUS(bc_tensor_slice(t, 1, 0, 10, 1, &s), BC_ERR_INVALID_ARG);
    CHECK(s == NULL);

    /* a stepped slice of a 2-d tensor as an operand, broadcast against a column */
    const int64_t m_shape[] = {3, 6};
    float md[18];
    fill_arange(md, 18, 0.0f, 1.0f);
    bc_tensor *m = MAKE_F32(m_shape, 2, md, 18);
    bc_tensor *ms = NULL;
    CHECK_OK(bc_tensor_slice(m, 1, 1, 6, 2, &ms)); /* columns 1, 3, 5 */
    CHECK_SHAPE(ms, 3, 3);
    CHECK_STRIDES(ms, 6, 2);
    const int64_t col_shape[] = {3, 1};
    const float col[3] = {1000, 2000, 3000};
    bc_tensor *c = MAKE_F32(col_shape, 2, col, 3);
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(ms, c, &r));
    CHECK_F32(r, 1001, 1003, 1005, 2007, 2009, 2011, 3013, 3015, 3017);
    /* and in place through the slice: only those columns of m change */
    CHECK_OK(bc_sub_inplace(ms, c));
    CHECK_F32(m, 0, -999, 2, -997, 4, -995, 6, -1993, 8, -1991, 10, -1989, 12, -2987, 14, -2985, 16, -2983);
    bc_tensor_free(r);
    bc_tensor_free(c);
    bc_tensor_free(ms);
    bc_tensor_free(m);
    bc_tensor_free(t);
}

/* Python: range(3)[0:3:2**63-1] == [0]. A step so large that step * stride (or stop - start +
 * step - 1) overflows must still give the one-row view, or at worst a clean error: never an
 * internal error, and never a view with a nonsense shape. */
static void test_slice_with_huge_step(void) {
    const int64_t shape[] = {3, 4};
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, shape, 2, &t));
    const int64_t steps[] = {INT64_MAX, INT64_MAX / 2, (int64_t)1 << 62, 3, 100};
    const int64_t starts[] = {0, INT64_MIN};
    for (size_t i = 0; i < COUNT_OF(steps); i++) {
        for (size_t j = 0; j < COUNT_OF(starts); j++) {
            bc_tensor *s = SENTINEL;
            int32_t st = bc_tensor_slice(t, 0, starts[j], INT64_MAX, steps[i], &s);
            if (st == BC_OK) {
                if (!CHECK_SHAPE(s, 1, 4)) printf("        (step %" PRId64 ", start %" PRId64 ")\n", steps[i], starts[j]);
                int64_t numel = -1;
                CHECK_OK(bc_tensor_numel(s, &numel));
                CHECK_EQ_INT(numel, 4);
                if (numel == 4) CHECK_F32(s, 1, 1, 1, 1);
                bc_tensor_free(s);
            } else {
                CHECK(st == BC_ERR_OVERFLOW || st == BC_ERR_INVALID_ARG);
                if (!(st == BC_ERR_OVERFLOW || st == BC_ERR_INVALID_ARG))
                    printf("        step %" PRId64 ", start %" PRId64 ": status %d (%s), \"%s\"\n", steps[i],
                           starts[j], (int)st, check_status_name(st), check_last_error());
                CHECK(s == NULL);
            }
        }
    }
    bc_tensor_free(t);
}

/* Warnings are emitted only by calls that succeed (docs/semantics.md, section 5; header on
 * bc_set_warning_handler): a call that the switches would warn about, but that then fails for
 * another reason, is silent. */
static void test_warnings_only_on_success(void) {
    check_warnings w;
    capture_warnings(&w);
    float buf[4] = {0, 1, 2, 3};
    const int64_t s4[] = {4}, s14[] = {1, 4}, s41[] = {4, 1}, s22[] = {2, 2};
    const int64_t rep[] = {1, 0}, zero[] = {0};
    bc_tensor *base = NULL, *self14 = NULL, *self4 = NULL, *ones4 = NULL, *i14 = NULL, *b4 = NULL,
              *b41 = NULL, *b22 = NULL, *i4 = NULL, *f22 = NULL, *r = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, s4, NULL, 1, 0, NULL, NULL, &base));
    CHECK_OK(bc_tensor_as_strided(base, s14, rep, 2, 0, &self14)); /* 4 elements, 1 location */
    CHECK_OK(bc_tensor_as_strided(base, s4, zero, 1, 0, &self4));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, s4, 1, &ones4));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_INT32, s14, 2, &i14));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_BOOL, s4, 1, &b4));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_BOOL, s41, 2, &b41));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_BOOL, s22, 2, &b22));
    CHECK_OK(bc_tensor_zeros(BC_DTYPE_INT32, s4, 1, &i4));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, s22, 2, &f22));

    /* broadcast warning on: (1,4) vs (4) would warn */
    CHECK_OK(bc_set_broadcast_warning(true));
    CHECK_STATUS(bc_add_inplace(self14, ones4), BC_ERR_OVERLAP);
    CHECK_STATUS(bc_add_inplace(i14, ones4), BC_ERR_DTYPE);
    r = SENTINEL;
    CHECK_STATUS(bc_sub(b4, b41, &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_EQ_INT(w.count, 0);
    CHECK_OK(bc_set_broadcast_warning(false));

    /* legacy fallback on: (4) vs (2,2) would warn */
    CHECK_OK(bc_set_legacy_fallback(true));
    r = SENTINEL;
    CHECK_STATUS(bc_sub(b4, b22, &r), BC_ERR_DTYPE);
    CHECK(r == NULL);
    CHECK_STATUS(bc_sub_inplace(b4, b22), BC_ERR_DTYPE);
    CHECK_STATUS(bc_add_inplace(i4, f22), BC_ERR_DTYPE);
    CHECK_STATUS(bc_add_inplace(self4, f22), BC_ERR_OVERLAP);
    CHECK_EQ_INT(w.count, 0);
    for (int i = 0; i < 4; i++) CHECK_EQ_DBL(buf[i], (double)i);

    bc_tensor *all[] = {base, self14, self4, ones4, i14, b4, b41, b22, i4, f22};
    for (size_t i = 0; i < COUNT_OF(all); i++) bc_tensor_free(all[i]);
}

static void test_as_strided_and_expand(void) {
    const int64_t shape[] = {6};
    float d[6];
    fill_arange(d, 6, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 1, d, 6);
    bc_tensor *v = NULL;
    const int64_t vs[] = {2, 2}, vst[] = {1, 2};
    CHECK_OK(bc_tensor_as_strided(t, vs, vst, 2, 1, &v));
    CHECK_SHAPE(v, 2, 2);
    CHECK_STRIDES(v, 1, 2);
    CHECK_F32(v, 1, 3, 2, 4);
    /* as_strided's offset is absolute, even from a view with an offset */
    bc_tensor *s = NULL, *v2 = NULL;
    CHECK_OK(bc_tensor_slice(t, 0, 2, 6, 1, &s));
    const int64_t one[] = {1}, unit[] = {1};
    CHECK_OK(bc_tensor_as_strided(s, one, unit, 1, 0, &v2));
    CHECK_F32(v2, 0);

    /* expand: stride 0 on broadcast dims, -1 keeps a size, new leading dims */
    const int64_t col_shape[] = {3, 1};
    bc_tensor *col = MAKE_F32(col_shape, 2, d, 3);
    bc_tensor *e = NULL;
    const int64_t sizes[] = {2, -1, 4};
    CHECK_OK(bc_tensor_expand(col, sizes, 3, &e));
    CHECK_SHAPE(e, 2, 3, 4);
    CHECK_STRIDES(e, 0, 1, 0);
    CHECK_F32(e, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2);
    /* expand to a non-matching size is a shape error with PyTorch's text */
    const int64_t bad_sizes[] = {4, 4};
    bc_tensor *bad = SENTINEL;
    CHECK_STATUS(bc_tensor_expand(col, bad_sizes, 2, &bad), BC_ERR_SHAPE);
    CHECK(bad == NULL);
    CHECK_LAST_ERROR("The expanded size of the tensor (4) must match the existing size (3) at "
                     "non-singleton dimension 0.  Target sizes: [4, 4].  Tensor sizes: [3, 1]");

    /* broadcast_to and expand_as give the same view */
    bc_tensor *bt = NULL, *ea = NULL;
    const int64_t target[] = {2, 3, 4};
    CHECK_OK(bc_tensor_broadcast_to(col, target, 3, &bt));
    CHECK_SHAPE(bt, 2, 3, 4);
    CHECK_STRIDES(bt, 0, 1, 0);
    CHECK_OK(bc_tensor_expand_as(col, e, &ea));
    CHECK_SHAPE(ea, 2, 3, 4);
    CHECK_STRIDES(ea, 0, 1, 0);
    /* an expanded view reads fine as an operand */
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(ea, bt, &r));
    CHECK_SHAPE(r, 2, 3, 4);
    CHECK_F32(r, 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4);

    bc_tensor_free(r);
    bc_tensor_free(bt);
    bc_tensor_free(ea);
    bc_tensor_free(e);
    bc_tensor_free(col);
    bc_tensor_free(v2);
    bc_tensor_free(s);
    bc_tensor_free(v);
    bc_tensor_free(t);
}

static void test_broadcast_tensors(void) {
    const int64_t a_shape[] = {3, 1}, b_shape[] = {1, 4};
    float da[3] = {1, 2, 3}, db[4] = {10, 20, 30, 40};
    bc_tensor *a = MAKE_F32(a_shape, 2, da, 3);
    bc_tensor *b = MAKE_F32(b_shape, 2, db, 4);
    const float sv = 0.5f;
    bc_tensor *s = MAKE_F32(NULL, 0, &sv, 1);
    const bc_tensor *ins[3] = {a, b, s};
    bc_tensor *outs[3] = {NULL, NULL, NULL};
    CHECK_OK(bc_tensor_broadcast_tensors(ins, 3, outs));
    CHECK_SHAPE(outs[0], 3, 4);
    CHECK_SHAPE(outs[1], 3, 4);
    CHECK_SHAPE(outs[2], 3, 4);
    CHECK_STRIDES(outs[0], 1, 0);
    CHECK_STRIDES(outs[1], 0, 1);
    CHECK_STRIDES(outs[2], 0, 0);
    CHECK_F32(outs[0], 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    CHECK_F32(outs[1], 10, 20, 30, 40, 10, 20, 30, 40, 10, 20, 30, 40);
    CHECK_F32_ALL(outs[2], 0.5f);
    for (int i = 0; i < 3; i++) bc_tensor_free(outs[i]);

    /* not broadcastable: nothing written, broadcast_shapes-style message */
    const int64_t c_shape[] = {2};
    bc_tensor *c = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, c_shape, 1, &c));
    const bc_tensor *bad_ins[2] = {b, c};
    bc_tensor *bad_outs[2] = {NULL, NULL};
    CHECK_STATUS(bc_tensor_broadcast_tensors(bad_ins, 2, bad_outs), BC_ERR_SHAPE);
    CHECK(bad_outs[0] == NULL && bad_outs[1] == NULL);

    /* the same rule on shapes alone */
    const int64_t *shapes[3] = {a_shape, b_shape, NULL};
    const size_t ndims[3] = {2, 2, 0};
    int64_t out[4];
    size_t nd = 0;
    CHECK_OK(bc_shape_broadcast_n(shapes, ndims, 3, out, 4, &nd));
    CHECK_DIMS(out, nd, 3, 4);
    const int64_t n1[] = {3}, n2[] = {2};
    const int64_t *nshapes[4] = {n1, n2, NULL, n1};
    const size_t nndims[4] = {1, 1, 0, 1};
    CHECK_STATUS(bc_shape_broadcast_n(nshapes, nndims, 4, out, 4, &nd), BC_ERR_SHAPE);
    CHECK_LAST_ERROR("Attempting to broadcast a dimension of length 2 at -1! Mismatching argument at "
                     "index 1 had (2,); but expected shape should be broadcastable to [3]");

    bc_tensor_free(c);
    bc_tensor_free(s);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

static void test_zero_size_dims(void) {
    /* [3,1] + [1,0] -> [3,0] */
    const int64_t a_shape[] = {3, 1}, b_shape[] = {1, 0};
    bc_tensor *a = NULL, *b = NULL, *r = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, b_shape, 2, &b));
    CHECK_OK(bc_add(a, b, &r));
    CHECK_SHAPE(r, 3, 0);
    int64_t numel = -1;
    CHECK_OK(bc_tensor_numel(r, &numel));
    CHECK_EQ_INT(numel, 0);
    CHECK_OK(bc_tensor_copy_to(r, NULL, 0));
    bc_tensor_free(r);
    /* 0 against 3 is an error */
    const int64_t c_shape[] = {3};
    const int64_t z_shape[] = {0};
    bc_tensor *c = NULL, *z = NULL;
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, c_shape, 1, &c));
    CHECK_OK(bc_tensor_ones(BC_DTYPE_FLOAT32, z_shape, 1, &z));
    r = SENTINEL;
    CHECK_STATUS(bc_add(z, c, &r), BC_ERR_SHAPE);
    CHECK(r == NULL);
    CHECK_LAST_ERROR("The size of tensor a (0) must match the size of tensor b (3) at non-singleton dimension 0");
    bc_tensor_free(c);
    bc_tensor_free(z);
    bc_tensor_free(a);
    bc_tensor_free(b);
}

static void test_clone_is_independent(void) {
    float buf[3] = {1, 2, 3};
    const int64_t shape[] = {3};
    bc_tensor *w = NULL, *c = NULL;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, shape, NULL, 1, 0, NULL, NULL, &w));
    CHECK_OK(bc_tensor_clone(w, &c));
    CHECK_OK(bc_add_inplace(c, c));
    CHECK_F32(c, 2, 4, 6);
    CHECK(buf[0] == 1 && buf[1] == 2 && buf[2] == 3);
    CHECK_OK(bc_mul_inplace(w, w));
    CHECK_F32(c, 2, 4, 6);
    CHECK(buf[0] == 1 && buf[1] == 4 && buf[2] == 9);
    bc_tensor_free(c);
    bc_tensor_free(w);
}

int main(void) {
    RUN_TEST(int8_wraps);
    RUN_TEST(uint8_wraps_and_promotes);
    RUN_TEST(float16_and_bfloat16);
    RUN_TEST(bool_ops);
    RUN_TEST(int_div_gives_float32);
    RUN_TEST(to_dtype_conversions);
    RUN_TEST(out_variant);
    RUN_TEST(inplace_writes_through_wrapped_memory);
    RUN_TEST(legacy_fallback_inplace);
    RUN_TEST(permute_and_transpose);
    RUN_TEST(slice_with_step);
    RUN_TEST(slice_with_huge_step);
    RUN_TEST(warnings_only_on_success);
    RUN_TEST(as_strided_and_expand);
    RUN_TEST(broadcast_tensors);
    RUN_TEST(zero_size_dims);
    RUN_TEST(clone_is_independent);
    return check_summary();
}
