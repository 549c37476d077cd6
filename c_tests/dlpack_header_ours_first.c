/*
 * dlpack_header_ours_first.c: the second translation unit of dlpack_header_official_first.c.
 * broadcast.h comes first and defines the DLPack types; the official dlpack.h included after it
 * must add nothing (its include guard is taken), and code written against the official header's
 * names compiles with broadcast.h's definitions.
 */
#include <stddef.h>
#include <stdlib.h>

#include "broadcast.h"
#include "third_party/dlpack/dlpack.h"

#if defined(BC_DLPACK_EXTERNAL)
#error "broadcast.h took an official dlpack.h as included first, but none was"
#endif

size_t ours_layout(size_t *out, size_t cap);
struct DLManagedTensorVersioned *ours_make_producer(float *data, int *deleted);

size_t ours_layout(size_t *out, size_t cap) {
    size_t v[] = {
        sizeof(DLPackVersion),
        sizeof(DLDevice),
        sizeof(DLDataType),
        sizeof(DLTensor),
        offsetof(DLTensor, data),
        offsetof(DLTensor, device),
        offsetof(DLTensor, ndim),
        offsetof(DLTensor, dtype),
        offsetof(DLTensor, shape),
        offsetof(DLTensor, strides),
        offsetof(DLTensor, byte_offset),
        sizeof(DLManagedTensor),
        offsetof(DLManagedTensor, manager_ctx),
        offsetof(DLManagedTensor, deleter),
        sizeof(struct DLManagedTensorVersioned),
        offsetof(struct DLManagedTensorVersioned, version),
        offsetof(struct DLManagedTensorVersioned, manager_ctx),
        offsetof(struct DLManagedTensorVersioned, deleter),
        offsetof(struct DLManagedTensorVersioned, flags),
        offsetof(struct DLManagedTensorVersioned, dl_tensor),
        (size_t)kDLCPU,
        (size_t)kDLBfloat,
        (size_t)kDLBool,
        (size_t)DLPACK_FLAG_BITMASK_READ_ONLY,
        (size_t)DLPACK_FLAG_BITMASK_IS_COPIED,
    };
    size_t n = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n && i < cap; i++) out[i] = v[i];
    return n;
}

/* A producer written as code against dlpack.h 1.1 would be (`struct`: no typedef there). */
typedef struct {
    struct DLManagedTensorVersioned m;
    int64_t shape[1];
    int *deleted;
} producer;

static void producer_delete(struct DLManagedTensorVersioned *self) {
    producer *p = (producer *)self->manager_ctx;
    (*p->deleted)++;
    free(p);
}

struct DLManagedTensorVersioned *ours_make_producer(float *data, int *deleted) {
    producer *p = (producer *)calloc(1, sizeof *p);
    if (!p) return NULL;
    DLDevice cpu = {kDLCPU, 0};
    DLDataType f32 = {(uint8_t)kDLFloat, 32, 1};
    DLDeviceType type = cpu.device_type;
    (void)type;
    p->shape[0] = 3;
    p->deleted = deleted;
    p->m.version.major = DLPACK_MAJOR_VERSION;
    p->m.version.minor = DLPACK_MINOR_VERSION;
    p->m.manager_ctx = p;
    p->m.deleter = producer_delete;
    p->m.flags = 0;
    p->m.dl_tensor.data = data;
    p->m.dl_tensor.device = cpu;
    p->m.dl_tensor.ndim = 1;
    p->m.dl_tensor.dtype = f32;
    p->m.dl_tensor.shape = p->shape;
    p->m.dl_tensor.strides = NULL;
    p->m.dl_tensor.byte_offset = 0;
    return &p->m;
}
