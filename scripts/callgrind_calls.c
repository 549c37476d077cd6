/* Instructions per tiny call, for scripts/callgrind_calls.sh: makes its operands once, then calls
 * bc_add (freeing each result) or bc_add_out N times. Cases: L1 (3,1)+(1,3) and L2 (4,)+(4,),
 * float32. Usage: callgrind_calls L1|L2 alloc|out N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broadcast.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s L1|L2 alloc|out N\n", argv[0]);
        return 2;
    }
    int l1 = strcmp(argv[1], "L1") == 0, into_out = strcmp(argv[2], "out") == 0;
    long n = atol(argv[3]);
    int64_t s31[2] = {3, 1}, s13[2] = {1, 3}, s33[2] = {3, 3}, s4[1] = {4};
    struct bc_tensor *a, *b, *o;
    int st = l1 ? bc_tensor_full(BC_DTYPE_FLOAT32, s31, 2, 1.5, &a) ||
                      bc_tensor_full(BC_DTYPE_FLOAT32, s13, 2, 2.5, &b) ||
                      bc_tensor_zeros(BC_DTYPE_FLOAT32, s33, 2, &o)
                : bc_tensor_full(BC_DTYPE_FLOAT32, s4, 1, 1.5, &a) ||
                      bc_tensor_full(BC_DTYPE_FLOAT32, s4, 1, 2.5, &b) ||
                      bc_tensor_zeros(BC_DTYPE_FLOAT32, s4, 1, &o);
    if (st) return 1;
    for (long i = 0; i < n; i++) {
        if (into_out) {
            if (bc_add_out(a, b, o)) return 3;
        } else {
            struct bc_tensor *r;
            if (bc_add(a, b, &r)) return 3;
            bc_tensor_free(r);
        }
    }
    bc_tensor_free(a);
    bc_tensor_free(b);
    bc_tensor_free(o);
    return 0;
}
