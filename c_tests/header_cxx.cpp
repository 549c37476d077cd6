// header_cxx.cpp: include/broadcast.h must compile as C++17 (cbindgen's cpp_compat wraps the
// declarations in extern "C"), twice over (include guard), and link against the C library.
#include "broadcast.h"
#include "broadcast.h"

#include <cstdio>
#include <cstring>

static_assert(BC_OK == 0, "BC_OK is 0");
static_assert(BC_VERSION_MAJOR >= 0 && BC_VERSION_MINOR >= 0 && BC_VERSION_PATCH >= 0, "version macros are numbers");

int main() {
    const char *v = bc_version();
    std::printf("libbroadcast %s, header %s, from C++%ld\n", v, BC_VERSION_STRING, static_cast<long>(__cplusplus));
    if (v == nullptr || std::strcmp(v, BC_VERSION_STRING) != 0) {
        std::printf("version mismatch\n");
        return 1;
    }
    // Touch a handle-based function so that the link really resolves the tensor API from C++.
    bc_tensor *t = nullptr;
    const int64_t shape[] = {2};
    if (bc_tensor_ones(BC_DTYPE_FLOAT32, shape, 1, &t) != BC_OK || t == nullptr) {
        std::printf("bc_tensor_ones failed\n");
        return 1;
    }
    bc_tensor_free(t);
    std::printf("1 passed, 0 failed\n");
    return 0;
}
