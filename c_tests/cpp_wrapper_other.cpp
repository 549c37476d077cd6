// cpp_wrapper_other.cpp: a second translation unit including include/broadcast.hpp (twice), linked
// with cpp_wrapper.cpp: the header must define nothing that clashes between translation units
// (everything inline, no namespace-scope objects), and its function-local statics (the warning
// handler registry, the pending handler exception) are one per program.
#include "broadcast.hpp"
#include "broadcast.hpp"

#include <string>

bc::Tensor other_tu_ones(const bc::Shape &shape);
std::string other_tu_version();

bc::Tensor other_tu_ones(const bc::Shape &shape) { return bc::Tensor::ones(bc::DType::Float32, shape); }

std::string other_tu_version() { return bc::version(); }
