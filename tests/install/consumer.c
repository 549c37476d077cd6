/*
 * consumer.c: a program that uses an installed libbroadcast (scripts/install_check.sh builds it
 * outside the repository with pkg-config and with CMake, shared and static). It prints what
 * tests/install/expected.txt says: the version, a broadcast sum, an exact error message, and a
 * panic inside the library caught at the boundary (unwinding survives the link).
 */
#include <stdio.h>
#include <string.h>

#include "broadcast.h"

static int failed(int32_t st, const char *call) {
    char msg[256];
    bc_last_error_message(msg, sizeof msg);
    printf("%s failed (%s): %s\n", call, bc_status_str(st), msg);
    return 1;
}

int main(void) {
    printf("libbroadcast %s (header %s)\n", bc_version(), BC_VERSION_STRING);
    if (strcmp(bc_version(), BC_VERSION_STRING) != 0) return 1;

    const int64_t a_shape[] = {4, 1}, b_shape[] = {4};
    const float b_data[] = {0.5f, 1.5f, 2.5f, 3.5f};
    bc_tensor *a = NULL, *b = NULL, *c = NULL;
    int64_t shape[2];
    float out[16];
    int32_t st = bc_tensor_ones(BC_DTYPE_FLOAT32, a_shape, 2, &a);
    if (st != BC_OK) return failed(st, "bc_tensor_ones");
    st = bc_tensor_from_data(BC_DTYPE_FLOAT32, b_shape, 1, b_data, sizeof b_data, &b);
    if (st != BC_OK) return failed(st, "bc_tensor_from_data");
    st = bc_add(a, b, &c);
    if (st != BC_OK) return failed(st, "bc_add");
    st = bc_tensor_shape(c, shape, 2);
    if (st != BC_OK) return failed(st, "bc_tensor_shape");
    st = bc_tensor_copy_to(c, out, sizeof out);
    if (st != BC_OK) return failed(st, "bc_tensor_copy_to");
    printf("(4,1) + (4,) -> (%lld,%lld); last row: %g %g %g %g\n", (long long)shape[0],
           (long long)shape[1], out[12], out[13], out[14], out[15]);
    bc_tensor_free(c);
    bc_tensor_free(b);
    bc_tensor_free(a);

    /* docs/semantics.md, section 3, example 7 */
    const int64_t x_shape[] = {5, 2, 4, 1}, y_shape[] = {3, 1, 1};
    int64_t r[4];
    size_t r_ndim = 0;
    st = bc_shape_broadcast(x_shape, 4, y_shape, 3, r, 4, &r_ndim);
    char msg[256];
    bc_last_error_message(msg, sizeof msg);
    printf("(5,2,4,1) with (3,1,1): %s: %s\n", st == BC_ERR_SHAPE ? "BC_ERR_SHAPE" : "?", msg);

    st = bc_debug_panic();
    printf("a panic inside the library: %s\n", st == BC_ERR_INTERNAL ? "BC_ERR_INTERNAL" : "?");
    printf("live handles left: %zu\n", bc_tensor_live_count());
    return 0;
}
