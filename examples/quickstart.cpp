#include <cstdio>
#include <vector>
#include "broadcast.hpp"

int main() {
    try {
        bc::Tensor a = bc::Tensor::ones(bc::DType::Float32, {4, 1});
        bc::Tensor b({0.5f, 1.5f, 2.5f, 3.5f}, {4});
        bc::Tensor c = a + b; // (4,1) + (4,) broadcasts to (4,4)
        bc::Shape shape = c.shape();
        std::vector<float> v = c.to_vector<float>();
        std::printf("(4,1) + (4,) -> (%lld,%lld); first row: %g %g %g %g\n", (long long)shape[0],
                    (long long)shape[1], v[0], v[1], v[2], v[3]);
        a += b; // in place, a keeps its shape: (4,) does not fit into (4,1)
    } catch (const bc::Error &e) {
        std::printf("error %d: %s\n", e.status(), e.what());
    }
    return 0;
}
