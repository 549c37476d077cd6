/* The second translation unit of header_tu_main.c: see there. */
#include "broadcast.h"

const char *other_tu_version(void);
int other_tu_make_and_free(void);

const char *other_tu_version(void) { return bc_version(); }

int other_tu_make_and_free(void) {
    bc_tensor *t = NULL;
    const int64_t shape[] = {3, 1};
    int32_t status = bc_tensor_zeros(BC_DTYPE_INT16, shape, 2, &t);
    bc_tensor_free(t);
    return (int)status;
}
