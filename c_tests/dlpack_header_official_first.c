/*
 * dlpack_header_official_first.c (with dlpack_header_ours_first.c, one program): broadcast.h
 * and the official dlpack.h in one program, in both orders. Here the official header (DLPack
 * 1.1, c_tests/third_party/dlpack/, verbatim) comes first, so broadcast.h must use its types and
 * define none of its own; the other translation unit includes broadcast.h first, so the official
 * header must add nothing and code written against it must still compile. The struct layouts of
 * both units are compared field by field, and a tensor crosses between them.
 */
#include <stddef.h>

#include "third_party/dlpack/dlpack.h"
#include "check.h" /* includes broadcast.h */

/* DLPack 1.0 and 1.1 declare `struct DLManagedTensorVersioned` without a typedef (later versions
 * and broadcast.h add one): broadcast.h's prototypes name it with `struct`, so both work. */

#if !defined(BC_DLPACK_EXTERNAL)
#error "broadcast.h did not notice the official dlpack.h included before it"
#endif

/* From dlpack_header_ours_first.c, built with broadcast.h's own definitions. */
size_t ours_layout(size_t *out, size_t cap);
struct DLManagedTensorVersioned *ours_make_producer(float *data, int *deleted);

static size_t official_layout(size_t *out) {
    size_t n = 0;
    out[n++] = sizeof(DLPackVersion);
    out[n++] = sizeof(DLDevice);
    out[n++] = sizeof(DLDataType);
    out[n++] = sizeof(DLTensor);
    out[n++] = offsetof(DLTensor, data);
    out[n++] = offsetof(DLTensor, device);
    out[n++] = offsetof(DLTensor, ndim);
    out[n++] = offsetof(DLTensor, dtype);
    out[n++] = offsetof(DLTensor, shape);
    out[n++] = offsetof(DLTensor, strides);
    out[n++] = offsetof(DLTensor, byte_offset);
    out[n++] = sizeof(DLManagedTensor);
    out[n++] = offsetof(DLManagedTensor, manager_ctx);
    out[n++] = offsetof(DLManagedTensor, deleter);
    out[n++] = sizeof(struct DLManagedTensorVersioned);
    out[n++] = offsetof(struct DLManagedTensorVersioned, version);
    out[n++] = offsetof(struct DLManagedTensorVersioned, manager_ctx);
    out[n++] = offsetof(struct DLManagedTensorVersioned, deleter);
    out[n++] = offsetof(struct DLManagedTensorVersioned, flags);
    out[n++] = offsetof(struct DLManagedTensorVersioned, dl_tensor);
    out[n++] = (size_t)kDLCPU;
    out[n++] = (size_t)kDLBfloat;
    out[n++] = (size_t)kDLBool;
    out[n++] = (size_t)DLPACK_FLAG_BITMASK_READ_ONLY;
    out[n++] = (size_t)DLPACK_FLAG_BITMASK_IS_COPIED;
    return n;
}

static void test_layouts_agree(void) {
    size_t official[32], ours[32];
    size_t n = official_layout(official);
    CHECK_EQ_SIZE(ours_layout(ours, 32), n);
    for (size_t i = 0; i < n; i++) {
        if (official[i] != ours[i]) printf("        layout entry %zu differs\n", i);
        CHECK_EQ_SIZE(ours[i], official[i]);
    }
}

static void test_export_read_with_official_types(void) {
    const int64_t shape[] = {2};
    bc_tensor *t = MAKE_FULL(BC_DTYPE_BFLOAT16, shape, 1, 1.0);
    struct DLManagedTensorVersioned *m = NULL;
    CHECK_OK(bc_tensor_to_dlpack_versioned(t, &m));
    if (m) {
        CHECK_EQ_INT(m->dl_tensor.device.device_type, kDLCPU);
        CHECK_EQ_INT(m->dl_tensor.dtype.code, kDLBfloat);
        CHECK_EQ_INT(m->dl_tensor.shape[0], 2);
        m->deleter(m);
    }
    bc_tensor_free(t);
}

static void test_import_from_other_unit(void) {
    float data[3] = {1, 2, 3};
    int deleted = 0;
    struct DLManagedTensorVersioned *m = ours_make_producer(data, &deleted);
    bc_tensor *t = NULL;
    CHECK_OK(bc_tensor_from_dlpack_versioned(m, &t));
    CHECK_F32(t, 1, 2, 3);
    bc_tensor_free(t);
    CHECK_EQ_INT(deleted, 1);
}

int main(void) {
    RUN_TEST(layouts_agree);
    RUN_TEST(export_read_with_official_types);
    RUN_TEST(import_from_other_unit);
    return check_summary();
}
