#include <stdio.h>
#include "broadcast.h"

int main(void) {
    const int64_t a_shape[] = {4, 1}, b_shape[] = {4};
    const float b_data[] = {0.5f, 1.5f, 2.5f, 3.5f};
    bc_tensor *a = NULL, *b = NULL, *c = NULL;
    if (bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a) != BC_OK ||
        bc_tensor_from_data(BC_DTYPE_FLOAT32, b_shape, 1, b_data, sizeof b_data, &b) != BC_OK ||
        bc_add(a, b, &c) != BC_OK) {
        char msg[256];
        bc_last_error_message(msg, sizeof msg);
        fprintf(stderr, "error: %s\n", msg);
        return 1;
    }
    int64_t shape[2];
    float out[16];
    bc_tensor_shape(c, shape, 2);
    bc_tensor_copy_to(c, out, sizeof out);
    printf("(4,1) + (4,) -> (%lld,%lld); first row: %g %g %g %g\n", (long long)shape[0],
           (long long)shape[1], out[0], out[1], out[2], out[3]);
    bc_tensor_free(c); bc_tensor_free(b); bc_tensor_free(a);
    return 0;
}
