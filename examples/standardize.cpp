// standardize.cpp: standardises the columns of a (1000, 8) float32 matrix with broadcasting, then
// sets the values above 2 to 0, through include/broadcast.hpp.
//
// Each column j holds ((53 i + 13 j) mod 101 - 50)^3 / 512 * (j + 1) + j for rows i = 0 ... 999:
// heavy-tailed, with its own mean and spread. The standard deviation is the population one
// (correction 0, PyTorch's unbiased=False).
#include <cstdint>
#include <iostream>
#include <vector>
#include "broadcast.hpp"

int main() {
    try {
        const int64_t rows = 1000, cols = 8;
        std::vector<float> values(static_cast<std::size_t>(rows * cols));
        for (int64_t i = 0; i < rows; i++) {
            for (int64_t j = 0; j < cols; j++) {
                int64_t u = (53 * i + 13 * j) % 101 - 50;
                float cube = static_cast<float>(u * u * u) / 512.0f; // exact: u^3 < 2^24
                values[static_cast<std::size_t>(i * cols + j)] =
                    cube * static_cast<float>(j + 1) + static_cast<float>(j);
            }
        }
        bc::Tensor x(values, {rows, cols});

        bc::Tensor mean = bc::mean(x, 0); // (8,): one mean per column
        bc::Tensor centered = x - mean;   // (1000, 8) - (8,) broadcasts over the rows
        bc::Tensor sd = bc::std(x, 0, /*correction=*/0.0); // (8,)
        bc::Tensor z = centered / sd;     // every column: mean 0, standard deviation 1
        bc::Tensor above = z > 2;         // a bool (1000, 8) tensor
        bc::Tensor masked = bc::where(above, 0, z); // 0 (a number) where above, else z: float32

        std::cout << "standardised " << x.shape()[0] << "x" << x.shape()[1] << " "
                  << bc::dtype_name(masked.dtype())
                  << "; values above 2 set to 0: " << bc::sum(above).at<const int64_t>() << "\n";
        std::cout << "first rows:\n" << masked.slice(0, 0, 4) << "\n";
    } catch (const bc::Error &e) {
        std::cout << "error " << e.status() << ": " << e.what() << "\n";
        return 1;
    }
    return 0;
}
