/*
 * header_tu_main.c + header_tu_other.c: two C translation units that both include
 * include/broadcast.h (this one twice) must compile with -Wpedantic and link into one program:
 * the header defines nothing that would clash (no non-inline function or object definitions).
 */
#include "broadcast.h"
#include "broadcast.h" /* the include guard makes a second inclusion harmless */

#include <stdio.h>
#include <string.h>

/* defined in header_tu_other.c */
const char *other_tu_version(void);
int other_tu_make_and_free(void);

int main(void) {
    const char *here = bc_version();
    const char *there = other_tu_version();
    int failed = 0;
    if (here == NULL || there == NULL || strcmp(here, there) != 0 || strcmp(here, BC_VERSION_STRING) != 0) {
        printf("version mismatch between translation units\n");
        failed = 1;
    }
    if (other_tu_make_and_free() != BC_OK) {
        printf("bc_tensor_zeros from the other translation unit failed\n");
        failed = 1;
    }
    printf("%d passed, %d failed\n", 1 - failed, failed);
    return failed;
}
