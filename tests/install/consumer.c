/*
 * consumer.c: a program that uses an installed libbroadcast (scripts/install_check.sh builds it
 * outside the repository with pkg-config and with CMake, shared and static). It prints what
 * tests/install/expected.txt says (the documented results of docs/semantics.md, section 3): the
 * version, a broadcast sum, an exact error message, and a panic inside the library caught at the
 * boundary (unwinding survives the link).
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

    /* docs/semantics.md, section 3, example 10: every row of ones(4,1) + r is 1 + r */
    const int64_t ones_shape[] = {4, 1}, r_shape[] = {4};
    const float r_data[] = {0.4967f, -0.1383f, 0.6477f, 1.5230f};
    bc_tensor *ones = NULL, *r = NULL, *sum = NULL;
    int64_t shape[2];
    float values[16];
    int32_t st = bc_tensor_ones(BC_DTYPE_FLOAT32, ones_shape, 2, &ones);
    if (st != BC_OK) return failed(st, "bc_tensor_ones");
    st = bc_tensor_from_data(BC_DTYPE_FLOAT32, r_shape, 1, r_data, sizeof r_data, &r);
    if (st != BC_OK) return failed(st, "bc_tensor_from_data");
    st = bc_add(ones, r, &sum);
    if (st != BC_OK) return failed(st, "bc_add");
    st = bc_tensor_shape(sum, shape, 2);
    if (st != BC_OK) return failed(st, "bc_tensor_shape");
    st = bc_tensor_copy_to(sum, values, sizeof values);
    if (st != BC_OK) return failed(st, "bc_tensor_copy_to");
    printf("ones(4,1) + r -> (%lld,%lld); last row: %g %g %g %g\n", (long long)shape[0],
           (long long)shape[1], values[12], values[13], values[14], values[15]);
    bc_tensor_free(sum);
    bc_tensor_free(r);
    bc_tensor_free(ones);

    /* docs/semantics.md, section 3, example 7 */
    const int64_t x_shape[] = {5, 2, 4, 1}, y_shape[] = {3, 1, 1};
    int64_t result[4];
    size_t result_ndim = 0;
    st = bc_shape_broadcast(x_shape, 4, y_shape, 3, result, 4, &result_ndim);
    char msg[256];
    bc_last_error_message(msg, sizeof msg);
    printf("(5,2,4,1) with (3,1,1): %s: %s\n", st == BC_ERR_SHAPE ? "BC_ERR_SHAPE" : "?", msg);

    st = bc_debug_panic();
    printf("a panic inside the library: %s\n", st == BC_ERR_INTERNAL ? "BC_ERR_INTERNAL" : "?");
    printf("live handles left: %zu\n", bc_tensor_live_count());
    return 0;
}
