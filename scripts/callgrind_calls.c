/* Instructions per call, for scripts/callgrind_calls.sh: makes its operands once, then makes the
 * call N times (freeing each result).
 * Tiny calls, float32: L1 (3,1)+(1,3) and L2 (4,)+(4,), by bc_add (alloc) or bc_add_out (out).
 * Reductions of a float32 (512,512) on one thread (bench-compare's cases at a size callgrind runs
 * in seconds; one thread, so that no worker's spinning is counted): R1 sum over dim 1, R2 sum
 * over dim 0, F1 bc_binary_sum_to(mul, (512,512), (512,), (512,)), M6 var over dim 0.
 * Usage: callgrind_calls L1|L2|R1|R2|F1|M6 alloc|out N (the reductions take alloc only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"

static int reduce(const char *which, struct bc_tensor *a, struct bc_tensor *b, struct bc_tensor **r) {
    int64_t d0[1] = {0}, d1[1] = {1}, s512[1] = {512};
    if (!strcmp(which, "R1")) return bc_sum(a, d1, 1, false, r);
    if (!strcmp(which, "R2")) return bc_sum(a, d0, 1, false, r);
    if (!strcmp(which, "F1")) return bc_binary_sum_to(BC_OP_MUL, a, b, s512, 1, r);
    if (!strcmp(which, "M6")) return bc_var(a, d0, 1, 1.0, false, r);
    return -1;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s L1|L2|R1|R2|F1|M6 alloc|out N\n", argv[0]);
        return 2;
    }
    int l1 = strcmp(argv[1], "L1") == 0, tiny = l1 || strcmp(argv[1], "L2") == 0;
    int into_out = strcmp(argv[2], "out") == 0;
    long n = atol(argv[3]);
    int64_t s31[2] = {3, 1}, s13[2] = {1, 3}, s33[2] = {3, 3}, s4[1] = {4};
    int64_t big[2] = {512, 512}, row[1] = {512};
    struct bc_tensor *a, *b, *o = NULL;
    int st;
    if (tiny) {
        st = l1 ? bc_tensor_full(BC_DTYPE_FLOAT32, s31, 2, 1.5, &a) ||
                      bc_tensor_full(BC_DTYPE_FLOAT32, s13, 2, 2.5, &b) ||
                      bc_tensor_zeros(BC_DTYPE_FLOAT32, s33, 2, &o)
                : bc_tensor_full(BC_DTYPE_FLOAT32, s4, 1, 1.5, &a) ||
                      bc_tensor_full(BC_DTYPE_FLOAT32, s4, 1, 2.5, &b) ||
                      bc_tensor_zeros(BC_DTYPE_FLOAT32, s4, 1, &o);
    } else {
        if (into_out) return 2;
        st = bc_set_num_threads(1) || bc_tensor_full(BC_DTYPE_FLOAT32, big, 2, 1.5, &a) ||
             bc_tensor_full(BC_DTYPE_FLOAT32, row, 1, 2.5, &b);
    }
    if (st) return 1;
    /* The tiny calls' loop is kept as it was, so that their counts compare with earlier ones. */
    for (long i = 0; tiny && i < n; i++) {
        if (into_out) {
            if (bc_add_out(a, b, o)) return 3;
        } else {
            struct bc_tensor *r;
            if (bc_add(a, b, &r)) return 3;
            bc_tensor_free(r);
        }
    }
    for (long i = 0; !tiny && i < n; i++) {
        struct bc_tensor *r;
        if (reduce(argv[1], a, b, &r)) return 3;
        bc_tensor_free(r);
    }
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor_free(o);
    return 0;
}
