#include <stdio.h>
#include "broadcast.h"

int main(void) {
    const int64_t a_shape[] = {4, 1}, b_shape[] = {4};
    const float b_data[] = {0.5f, 1.5f, 2.5f, 3.5f};
    bc_tensor *a = NULL, *b = NULL, *c = NULL;
    int64_t shape[2];
    float out[16];
    /* Every call that can fail returns a status: BC_OK (0) or a BC_ERR_* code. */
    int32_t st = bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a);
    if (st == BC_OK) st = bc_tensor_from_data(BC_DTYPE_FLOAT32, b_shape, 1, b_data, sizeof b_data, &b);
    if (st == BC_OK) st = bc_add(a, b, &c); /* (4,1) + (4,) broadcasts to (4,4) */
    if (st == BC_OK) st = bc_tensor_shape(c, shape, 2);
    if (st == BC_OK) st = bc_tensor_copy_to(c, out, sizeof out);
    if (st == BC_OK) {
        printf("(4,1) + (4,) -> (%lld,%lld); first row: %g %g %g %g\n", (long long)shape[0],
               (long long)shape[1], out[0], out[1], out[2], out[3]);
    } else {
        char msg[256];
        bc_last_error_message(msg, sizeof msg);
        fprintf(stderr, "%s: %s\n", bc_status_str(st), msg);
    }
    bc_tensor_free(c); /* NULL is a no-op */
    bc_tensor_free(b);
    bc_tensor_free(a);
    return st == BC_OK ? 0 : 1;
}
