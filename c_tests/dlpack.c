/*
 * dlpack.c: DLPack export and import through the C ABI: the fields of an export (version, flags,
 * device, data type codes of the ten types, shape, strides, byte_offset, zero-copy address), the
 * read-only flag of broadcast views and of imported read-only memory (and every write refused),
 * the deleter contract both ways (exactly once, when the last view goes; never on a failed
 * import), byte_offset and NULL strides on import, negative strides that address nothing, the
 * legacy struct, and round trips.
 *
 * (The Python test tests/python/test_dlpack.py does the same against NumPy, a real producer and
 * consumer.)
 */
#include "check.h"

/* ---------------------------------------------------------------------------------------------
 * A producer in C: a DLManagedTensorVersioned (or legacy DLManagedTensor) over a caller buffer
 * whose deleter counts its calls.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    DLManagedTensorVersioned m;
    DLManagedTensor legacy;
    int64_t shape[4];
    int64_t strides[4];
    int deleted; /* deleter calls, versioned and legacy together */
} producer;

static void count_versioned(DLManagedTensorVersioned *self) {
    ((producer *)self->manager_ctx)->deleted++;
}

static void count_legacy(DLManagedTensor *self) {
    ((producer *)self->manager_ctx)->deleted++;
}

/* Describe `data` (float32 unless changed after) with `ndim` sizes and strides (NULL: row-major). */
static void produce(producer *p, void *data, int32_t ndim, const int64_t *shape,
                    const int64_t *strides, uint64_t byte_offset, uint64_t flags) {
    memset(p, 0, sizeof *p);
    for (int32_t i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        if (strides) p->strides[i] = strides[i];
    }
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = kDLCPU;
    t.device.device_id = 0;
    t.ndim = ndim;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 32;
    t.dtype.lanes = 1;
    t.shape = p->shape;
    t.strides = strides ? p->strides : NULL;
    t.byte_offset = byte_offset;
    p->m.version.major = DLPACK_MAJOR_VERSION;
    p->m.version.minor = DLPACK_MINOR_VERSION;
    p->m.manager_ctx = p;
    p->m.deleter = count_versioned;
    p->m.flags = flags;
    p->m.dl_tensor = t;
    p->legacy.dl_tensor = t;
    p->legacy.manager_ctx = p;
    p->legacy.deleter = count_legacy;
}

static void *data_of(const bc_tensor *t, bool *writable) {
    void *p = NULL;
    CHECK_OK(bc_tensor_data(t, &p, NULL, writable));
    return p;
}

/* ---------------------------------------------------------------------------------------------
 * Export
 * ------------------------------------------------------------------------------------------- */

static void test_export_fields(void) {
    const int64_t shape[] = {2, 3};
    float v[6];
    fill_arange(v, 6, 0.0f, 1.0f);
    bc_tensor *t = MAKE_F32(shape, 2, v, 6);
    bc_tensor *tt = NULL;
    CHECK_OK(bc_tensor_transpose(t, 0, 1, &tt));
    DLManagedTensorVersioned *m = NULL;
    CHECK_OK(bc_tensor_to_dlpack_versioned(tt, &m));
    if (!m) goto done;
    CHECK_EQ_INT(m->version.major, 1);
    CHECK_EQ_INT(m->version.minor, 0);
    CHECK_EQ_INT(m->flags, 0);
    CHECK(m->deleter != NULL);
    const DLTensor *d = &m->dl_tensor;
    CHECK_EQ_INT(d->device.device_type, kDLCPU);
    CHECK_EQ_INT(d->device.device_id, 0);
    CHECK_EQ_INT(d->dtype.code, kDLFloat);
    CHECK_EQ_INT(d->dtype.bits, 32);
    CHECK_EQ_INT(d->dtype.lanes, 1);
    CHECK_EQ_INT(d->ndim, 2);
    CHECK(d->shape != NULL && d->strides != NULL);
    CHECK_EQ_INT(d->shape[0], 3);
    CHECK_EQ_INT(d->shape[1], 2);
    CHECK_EQ_INT(d->strides[0], 1);
    CHECK_EQ_INT(d->strides[1], 3);
    CHECK_EQ_INT(d->byte_offset, 0);
    CHECK(d->data == data_of(t, NULL)); /* zero-copy */
    /* The export keeps the memory alive after every handle is gone. */
    bc_tensor_free(tt);
    bc_tensor_free(t);
    t = tt = NULL;
    const float *f = (const float *)d->data;
    CHECK_EQ_DBL(f[1 * d->strides[1] + 2 * d->strides[0]], 5.0); /* element (2, 1) = t[1][2] */
    m->deleter(m);
done:
    bc_tensor_free(tt);
    bc_tensor_free(t);
}

static void test_export_dtype_codes(void) {
    const struct {
        int32_t dtype;
        uint8_t code, bits;
    } want[] = {
        {BC_DTYPE_BOOL, kDLBool, 8},      {BC_DTYPE_UINT8, kDLUInt, 8},
        {BC_DTYPE_INT8, kDLInt, 8},       {BC_DTYPE_INT16, kDLInt, 16},
        {BC_DTYPE_INT32, kDLInt, 32},     {BC_DTYPE_INT64, kDLInt, 64},
        {BC_DTYPE_FLOAT16, kDLFloat, 16}, {BC_DTYPE_BFLOAT16, kDLBfloat, 16},
        {BC_DTYPE_FLOAT32, kDLFloat, 32}, {BC_DTYPE_FLOAT64, kDLFloat, 64},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        bc_tensor *t = MAKE_FULL(want[i].dtype, NULL, 0, 1.0); /* 0-d */
        DLManagedTensor *m = NULL;
        CHECK_OK(bc_tensor_to_dlpack(t, &m));
        if (m) {
            CHECK_EQ_INT(m->dl_tensor.dtype.code, want[i].code);
            CHECK_EQ_INT(m->dl_tensor.dtype.bits, want[i].bits);
            CHECK_EQ_INT(m->dl_tensor.ndim, 0);
            CHECK(m->dl_tensor.shape != NULL && m->dl_tensor.strides != NULL);
            /* Import it back: the same type, value and address. */
            bc_tensor *back = NULL;
            CHECK_OK(bc_tensor_from_dlpack(m, &back));
            CHECK_DTYPE(back, want[i].dtype);
            CHECK(data_of(back, NULL) == data_of(t, NULL));
            bc_tensor *f = NULL;
            CHECK_OK(bc_tensor_to_dtype(back, BC_DTYPE_FLOAT32, &f));
            CHECK_F32(f, 1.0f);
            bc_tensor_free(f);
            bc_tensor_free(back); /* runs our deleter, through the import */
        }
        bc_tensor_free(t);
    }
}

static void test_broadcast_view_exports_read_only(void) {
    const int64_t shape[] = {3, 1};
    bc_tensor *col = MAKE_FULL(BC_DTYPE_INT32, shape, 2, 4.0);
    const int64_t to[] = {3, 5};
    bc_tensor *e = NULL;
    CHECK_OK(bc_tensor_expand(col, to, 2, &e));
    DLManagedTensorVersioned *m = NULL;
    CHECK_OK(bc_tensor_to_dlpack_versioned(e, &m));
    if (m) {
        CHECK(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
        CHECK_EQ_INT(m->dl_tensor.strides[1], 0);
        /* Imported back, it is read-only memory now. */
        bc_tensor *back = NULL;
        CHECK_OK(bc_tensor_from_dlpack_versioned(m, &back));
        bool w = true;
        (void)data_of(back, &w);
        CHECK(!w);
        bc_tensor_free(back);
    }
    /* The legacy struct cannot say "read-only": refused. */
    DLManagedTensor *legacy = (DLManagedTensor *)SENTINEL;
    CHECK_STATUS(bc_tensor_to_dlpack(e, &legacy), BC_ERR_READ_ONLY);
    CHECK(legacy == NULL);
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT);
    /* The column itself is writable and exports both ways. */
    CHECK_OK(bc_tensor_to_dlpack_versioned(col, &m));
    if (m) {
        CHECK_EQ_INT(m->flags, 0);
        m->deleter(m);
    }
    CHECK_OK(bc_tensor_to_dlpack(col, &legacy));
    if (legacy) legacy->deleter(legacy);
    bc_tensor_free(e);
    bc_tensor_free(col);
}

static void test_export_argument_checks(void) {
    bc_tensor *t = MAKE_FULL(BC_DTYPE_FLOAT32, NULL, 0, 1.0);
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)SENTINEL;
    CHECK_STATUS(bc_tensor_to_dlpack_versioned(NULL, &m), BC_ERR_NULL_ARG);
    CHECK(m == NULL);
    CHECK_STATUS(bc_tensor_to_dlpack_versioned(t, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_to_dlpack(t, NULL), BC_ERR_NULL_ARG);
    bc_tensor_free(t);
    m = (DLManagedTensorVersioned *)SENTINEL;
    CHECK_STATUS(bc_tensor_to_dlpack_versioned(t, &m), BC_ERR_INVALID_HANDLE);
    CHECK(m == NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Import
 * ------------------------------------------------------------------------------------------- */

static void test_import_zero_copy_and_deleter(void) {
    float buf[8];
    fill_arange(buf, 8, 0.0f, 1.0f);
    producer p;
    const int64_t shape[] = {2, 3};
    /* byte_offset 8: the first element is buf[2]; NULL strides: row-major. */
    produce(&p, buf, 2, shape, NULL, 8, 0);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(&p.m, &t));
    CHECK_SHAPE(t, 2, 3);
    CHECK_F32(t, 2, 3, 4, 5, 6, 7);
    bool w = false;
    CHECK(data_of(t, &w) == (void *)(buf + 2));
    CHECK(w);
    /* Writes reach the producer's memory. */
    const int64_t one[] = {1};
    bc_tensor *ten = MAKE_FULL(BC_DTYPE_FLOAT32, one, 1, 10.0);
    CHECK_OK(bc_add_inplace(t, ten));
    CHECK_EQ_DBL(buf[2], 12.0);
    CHECK_EQ_DBL(buf[1], 1.0); /* before the view: untouched */
    /* A view keeps the memory: the deleter runs when the last one goes, exactly once. */
    bc_tensor *s = NULL;
    CHECK_OK(bc_tensor_slice(t, 1, 1, 3, 1, &s));
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 0);
    CHECK_F32(s, 13, 14, 16, 17);
    bc_tensor_free(s);
    CHECK_EQ_INT(p.deleted, 1);
    bc_tensor_free(ten);
}

static void test_import_strided_legacy(void) {
    float buf[12];
    fill_arange(buf, 12, 0.0f, 1.0f);
    producer p;
    const int64_t shape[] = {3, 2};
    const int64_t strides[] = {1, 6}; /* a transposed (2, 6) block's first two rows */
    produce(&p, buf, 2, shape, strides, 0, 0);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack(&p.legacy, &t));
    CHECK_F32(t, 0, 6, 1, 7, 2, 8);
    CHECK_STRIDES(t, 1, 6);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 1);
}

/* A negative stride that addresses nothing (a dimension of size 1, or any dimension of a tensor
 * with no elements) is taken as 0; one that addresses elements is refused (above). */
static void test_import_negative_stride_addressing_nothing(void) {
    float buf[6];
    fill_arange(buf, 6, 0.0f, 1.0f);
    producer p;
    const int64_t shape[] = {2, 1, 3};
    const int64_t strides[] = {3, -5, 1}; /* NumPy's reversed single element, say */
    produce(&p, buf, 3, shape, strides, 0, 0);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(&p.m, &t));
    CHECK_F32(t, 0, 1, 2, 3, 4, 5);
    CHECK_STRIDES(t, 3, 0, 1);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 1);

    const int64_t empty[] = {0, 2, 2305843009213693952};
    const int64_t wrapped[] = {3, -6917529027641081856, 5}; /* a stride past INT64_MAX, wrapped */
    produce(&p, NULL, 3, empty, wrapped, 0, 0);
    t = NULL;
    CHECK_OK(bc_tensor_from_dlpack(&p.legacy, &t));
    CHECK_SHAPE(t, 0, 2, 2305843009213693952);
    CHECK_STRIDES(t, 3, 0, 5);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 1);
}

static void test_import_read_only_refuses_writes(void) {
    float buf[4] = {1, 2, 3, 4};
    producer p;
    const int64_t shape[] = {4};
    produce(&p, buf, 1, shape, NULL, 0, DLPACK_FLAG_BITMASK_READ_ONLY);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(&p.m, &t));
    bool w = true;
    (void)data_of(t, &w);
    CHECK(!w);
    const int64_t one[] = {1};
    bc_tensor *x = MAKE_FULL(BC_DTYPE_FLOAT32, one, 1, 1.0);
    /* In place, as `out`, and through any view: refused, nothing written. */
    CHECK_STATUS(bc_add_inplace(t, x), BC_ERR_READ_ONLY);
    CHECK_LAST_ERROR("cannot write to a read-only tensor: its memory was shared read-only (DLPack "
                     "read-only flag). Write to a copy (contiguous or clone) instead.");
    bc_error_info info;
    CHECK_OK(bc_last_error_info(&info));
    CHECK_EQ_INT(info.kind, BC_ERROR_KIND_READ_ONLY);
    CHECK_STATUS(bc_mul_out(x, x, t), BC_ERR_READ_ONLY);
    bc_tensor *s = NULL;
    CHECK_OK(bc_tensor_slice(t, 0, 1, 3, 1, &s));
    CHECK_STATUS(bc_sub_inplace(s, x), BC_ERR_READ_ONLY);
    CHECK_EQ_DBL(buf[0], 1.0);
    CHECK_EQ_DBL(buf[1], 2.0);
    /* Reading is fine, and so is a copy, which is writable. */
    bc_tensor *r = NULL;
    CHECK_OK(bc_add(t, x, &r));
    CHECK_F32(r, 2, 3, 4, 5);
    bc_tensor *c = NULL;
    CHECK_OK(bc_tensor_contiguous(t, &c));
    CHECK_OK(bc_add_inplace(c, x));
    /* Exported again, it stays read-only; the legacy struct is refused. */
    DLManagedTensorVersioned *m = NULL;
    CHECK_OK(bc_tensor_to_dlpack_versioned(s, &m));
    if (m) {
        CHECK(m->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
        m->deleter(m);
    }
    DLManagedTensor *legacy = NULL;
    CHECK_STATUS(bc_tensor_to_dlpack(t, &legacy), BC_ERR_READ_ONLY);
    bc_tensor_free(c);
    bc_tensor_free(r);
    bc_tensor_free(s);
    bc_tensor_free(x);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 1);
}

/* Every refused import leaves the struct to the caller: no deleter call, *out NULL. */
static void test_failed_imports_keep_ownership(void) {
    float buf[8] = {0};
    const int64_t shape[] = {2, 2};
    producer p;
    bc_tensor *t = SENTINEL;

#define REFUSED(setup, status, what)                                                               \
    do {                                                                                           \
        produce(&p, buf, 2, shape, NULL, 0, 0);                                                    \
        setup;                                                                                     \
        t = SENTINEL;                                                                              \
        CHECK_STATUS(bc_tensor_from_dlpack_versioned(&p.m, &t), status);                          \
        CHECK(t == NULL);                                                                          \
        CHECK(strstr(check_last_error(), what) != NULL);                                          \
        CHECK_EQ_INT(p.deleted, 0);                                                                \
    } while (0)

    REFUSED(p.m.version.major = 2, BC_ERR_INVALID_ARG, "DLPack version 2.0 is not supported");
    REFUSED(p.m.dl_tensor.device.device_type = kDLCUDA, BC_ERR_INVALID_ARG, "device type 2");
    REFUSED(p.m.dl_tensor.device.device_type = (DLDeviceType)99, BC_ERR_INVALID_ARG, "device type 99");
    REFUSED(p.m.dl_tensor.dtype.code = kDLComplex, BC_ERR_INVALID_ARG, "(code 5, bits 32, lanes 1)");
    REFUSED(p.m.dl_tensor.dtype.lanes = 4, BC_ERR_INVALID_ARG, "lanes 4");
    REFUSED(p.m.dl_tensor.dtype.code = kDLUInt, BC_ERR_INVALID_ARG, "(code 1, bits 32");
    REFUSED(p.m.dl_tensor.ndim = -1, BC_ERR_INVALID_ARG, "ndim -1");
    REFUSED(p.m.dl_tensor.ndim = BC_MAX_NDIM + 1, BC_ERR_INVALID_ARG, "ndim 65");
    REFUSED(p.shape[0] = -2, BC_ERR_INVALID_ARG, "negative");
    REFUSED((p.m.dl_tensor.strides = p.strides, p.strides[0] = -2, p.strides[1] = 1),
            BC_ERR_INVALID_ARG, "strides must not be negative");
    REFUSED(p.m.dl_tensor.byte_offset = 2, BC_ERR_INVALID_ARG, "aligned");
    REFUSED(p.m.dl_tensor.data = NULL, BC_ERR_NULL_ARG, "dl_tensor.data");
    REFUSED(p.m.dl_tensor.shape = NULL, BC_ERR_NULL_ARG, "dl_tensor.shape");
    REFUSED(p.m.dl_tensor.byte_offset = UINT64_MAX, BC_ERR_INVALID_ARG, "overflows");
#undef REFUSED

    CHECK_STATUS(bc_tensor_from_dlpack_versioned(NULL, &t), BC_ERR_NULL_ARG);
    CHECK(t == NULL);
    CHECK_STATUS(bc_tensor_from_dlpack(NULL, &t), BC_ERR_NULL_ARG);
    produce(&p, buf, 2, shape, NULL, 0, 0);
    CHECK_STATUS(bc_tensor_from_dlpack_versioned(&p.m, NULL), BC_ERR_NULL_ARG);
    CHECK_STATUS(bc_tensor_from_dlpack(&p.legacy, NULL), BC_ERR_NULL_ARG);
    CHECK_EQ_INT(p.deleted, 0);
}

static void test_import_empty_and_null_deleter(void) {
    producer p;
    const int64_t shape[] = {0, 3};
    /* No elements: data may be NULL. */
    produce(&p, NULL, 2, shape, NULL, 0, 0);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(&p.m, &t));
    CHECK_SHAPE(t, 0, 3);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 1);
    /* A NULL deleter: nothing to call. */
    float one = 7.0f;
    produce(&p, &one, 0, NULL, NULL, 0, 0);
    p.m.deleter = NULL;
    t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(&p.m, &t));
    CHECK_F32(t, 7.0f);
    bc_tensor_free(t);
    CHECK_EQ_INT(p.deleted, 0);
}

/* Wrapped memory exported, imported elsewhere, freed in any order: its release runs once, after
 * the last user (the export's deleter included). */
static int released = 0;
static void count_release(void *user_data) {
    (void)user_data;
    released++;
}

static void test_round_trip_release_order(void) {
    float buf[3] = {1, 2, 3};
    const int64_t shape[] = {3};
    bc_tensor *w = NULL;
    released = 0;
    CHECK_OK(bc_tensor_wrap(BC_DTYPE_FLOAT32, buf, sizeof buf, shape, NULL, 1, 0, count_release, NULL, &w));
    DLManagedTensorVersioned *m = NULL;
    CHECK_OK(bc_tensor_to_dlpack_versioned(w, &m));
    bc_tensor *back = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(m, &back));
    CHECK(data_of(back, NULL) == (void *)buf);
    bc_tensor_free(w);
    CHECK_EQ_INT(released, 0);
    CHECK_F32(back, 1, 2, 3);
    bc_tensor_free(back); /* the import's release calls the export's deleter, which frees w's memory */
    CHECK_EQ_INT(released, 1);
}

int main(void) {
    RUN_TEST(export_fields);
    RUN_TEST(export_dtype_codes);
    RUN_TEST(broadcast_view_exports_read_only);
    RUN_TEST(export_argument_checks);
    RUN_TEST(import_zero_copy_and_deleter);
    RUN_TEST(import_strided_legacy);
    RUN_TEST(import_negative_stride_addressing_nothing);
    RUN_TEST(import_read_only_refuses_writes);
    RUN_TEST(failed_imports_keep_ownership);
    RUN_TEST(import_empty_and_null_deleter);
    RUN_TEST(round_trip_release_order);
    return check_summary();
}
