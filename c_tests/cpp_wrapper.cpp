// cpp_wrapper.cpp: include/broadcast.hpp, the C++ interface, over the C library. Built as C++17
// with -Wall -Wextra -Wpedantic -Werror together with cpp_wrapper_other.cpp (a second translation
// unit including the header), and run under AddressSanitizer/UBSan and valgrind by
// scripts/sanitizers.sh like every C program of the suite.
//
// It checks the twelve documented examples of docs/semantics.md (section 3) through the C++ API,
// that errors carry the library's status, kind, shapes and exact message, ownership (every handle
// freed: bc::live_count() is back where it started), the operators and views, wrapped memory
// released exactly once, and exceptions from a warning handler.
#include "broadcast.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

// Defined in cpp_wrapper_other.cpp.
bc::Tensor other_tu_ones(const bc::Shape &shape);
std::string other_tu_version();

namespace {

int failures = 0;
int checks = 0;

void fail(const char *file, int line, const std::string &what) {
    ++failures;
    std::printf("  FAILED %s:%d: %s\n", file, line, what.c_str());
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        ++checks;                                                                                  \
        if (!(cond)) fail(__FILE__, __LINE__, #cond);                                              \
    } while (0)

// Runs `body`, which must throw bc::Error; returns it (or a default one after reporting).
template <class Body> bc::Error expect_error(const char *file, int line, Body body) {
    ++checks;
    try {
        body();
    } catch (const bc::Error &e) {
        return e;
    } catch (const std::exception &e) {
        fail(file, line, std::string("threw something else: ") + e.what());
        return bc::Error(-1, bc_error_info{}, {}, {}, "");
    }
    fail(file, line, "did not throw bc::Error");
    return bc::Error(-1, bc_error_info{}, {}, {}, "");
}
#define EXPECT_ERROR(body) expect_error(__FILE__, __LINE__, [&] { body; })

bool all_equal(const bc::Tensor &t, float value) {
    for (float v : t.to_vector<float>())
        if (v != value) return false;
    return true;
}

const char *const MSG_EX2 = "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1";
const char *const MSG_EX7 = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1";
const char *const MSG_EX9 =
    "The expanded size of the tensor (1) must match the existing size (7) at non-singleton dimension 2.";
const char *const WARN_BROADCAST =
    "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  "
    "Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional.";
const char *const WARN_FALLBACK = "self and other not broadcastable, but have the same number of elements.  "
                                  "Falling back to deprecated pointwise behavior.";

bc::Tensor ones(const bc::Shape &shape) { return bc::Tensor::ones(bc::DType::Float32, shape); }

// ---- docs/semantics.md, section 3 --------------------------------------------------------------

void documented_examples_1_to_4_shapes() {
    CHECK(bc::is_broadcastable({5, 7, 3}, {5, 7, 3}));
    CHECK(bc::broadcast_shapes({5, 7, 3}, {5, 7, 3}) == (bc::Shape{5, 7, 3}));
    CHECK(!bc::is_broadcastable({0}, {2, 2}));
    bc::Error e = EXPECT_ERROR(bc::broadcast_shapes({0}, {2, 2}));
    CHECK(std::string(e.what()) == MSG_EX2);
    CHECK(e.status() == BC_ERR_SHAPE && e.kind() == BC_ERROR_KIND_NOT_BROADCASTABLE);
    CHECK(e.info().dim == 1 && e.info().size_a == 0 && e.info().size_b == 2);
    CHECK(e.shape_a() == bc::Shape{0} && e.shape_b() == (bc::Shape{2, 2}));
    CHECK(bc::broadcast_shapes({5, 3, 4, 1}, {3, 1, 1}) == (bc::Shape{5, 3, 4, 1}));
    CHECK(!bc::is_broadcastable({5, 2, 4, 1}, {3, 1, 1}));
}

void documented_examples_5_to_7_operations() {
    CHECK((ones({5, 1, 4, 1}) + ones({3, 1, 1})).shape() == (bc::Shape{5, 3, 4, 1}));
    CHECK((ones({1}) + ones({3, 1, 7})).shape() == (bc::Shape{3, 1, 7}));
    bc::Error e = EXPECT_ERROR(ones({5, 2, 4, 1}) + ones({3, 1, 1}));
    CHECK(std::string(e.what()) == MSG_EX7);
    CHECK(e.status() == BC_ERR_SHAPE && e.kind() == BC_ERROR_KIND_NOT_BROADCASTABLE);
    CHECK(e.shape_a() == (bc::Shape{5, 2, 4, 1}) && e.shape_b() == (bc::Shape{3, 1, 1}));
}

void documented_examples_8_and_9_in_place() {
    bc::Tensor x = ones({5, 3, 4, 1});
    x += ones({3, 1, 1});
    CHECK(x.shape() == (bc::Shape{5, 3, 4, 1}) && all_equal(x, 2.0f));

    bc::Tensor y = ones({1, 3, 1});
    bc::Error e = EXPECT_ERROR(y += ones({3, 1, 7}));
    CHECK(std::string(e.what()) == MSG_EX9);
    CHECK(e.status() == BC_ERR_SHAPE && e.kind() == BC_ERROR_KIND_INPLACE_MISMATCH);
    CHECK(e.info().dim == 2 && e.info().size_a == 1 && e.info().size_b == 7);
    CHECK(y.shape() == (bc::Shape{1, 3, 1}) && all_equal(y, 1.0f)); // unchanged
}

void documented_example_10_values() {
    bc::Tensor r({0.4967f, -0.1383f, 0.6477f, 1.5230f}, {4});
    bc::Tensor sum = ones({4, 1}) + r;
    CHECK(sum.shape() == (bc::Shape{4, 4}));
    std::vector<float> v = sum.to_vector<float>();
    const float row[4] = {1.0f + 0.4967f, 1.0f - 0.1383f, 1.0f + 0.6477f, 1.0f + 1.5230f};
    bool rows_ok = v.size() == 16;
    for (std::size_t i = 0; rows_ok && i < 16; i++) rows_ok = v[i] == row[i % 4];
    CHECK(rows_ok);
}

void documented_examples_11_and_12_switches() {
    std::vector<std::string> warnings;
    bc::set_warning_handler([&](std::string_view w) { warnings.emplace_back(w); });

    bc::set_broadcast_warning(true);
    CHECK(bc::broadcast_warning());
    bc::Tensor r = ones({4, 1}) + ones({4});
    bc::set_broadcast_warning(false);
    CHECK(r.shape() == (bc::Shape{4, 4}) && all_equal(r, 2.0f));
    CHECK(warnings.size() == 1 && warnings[0] == WARN_BROADCAST);

    warnings.clear();
    bc::Error e = EXPECT_ERROR(ones({4}) + ones({2, 2}));
    CHECK(e.status() == BC_ERR_SHAPE && warnings.empty());
    bc::set_legacy_fallback(true);
    r = ones({4}) + ones({2, 2});
    bc::set_legacy_fallback(false);
    CHECK(r.shape() == bc::Shape{4} && all_equal(r, 2.0f));
    CHECK(warnings.size() == 1 && warnings[0] == WARN_FALLBACK);
    bc::set_warning_handler(nullptr);
}

// ---- errors ------------------------------------------------------------------------------------

void errors_carry_status_kind_and_message() {
    bc::Tensor b = bc::Tensor::ones(bc::DType::Bool, {2});
    bc::Error e = EXPECT_ERROR(b - b);
    CHECK(e.status() == BC_ERR_DTYPE && e.kind() == BC_ERROR_KIND_BOOL_SUBTRACTION);
    CHECK(std::string(e.what()).rfind("Subtraction, the `-` operator, with two bool tensors", 0) == 0);

    bc::Tensor i = bc::Tensor::zeros(bc::DType::Int32, {2});
    e = EXPECT_ERROR(i += ones({2}));
    CHECK(std::string(e.what()) == "result type Float can't be cast to the desired output type Int");
    CHECK(e.kind() == BC_ERROR_KIND_CAST_REFUSED && e.info().dtype_a == BC_DTYPE_FLOAT32 &&
          e.info().dtype_b == BC_DTYPE_INT32);

    // A written-to view whose elements share memory (docs/semantics.md, section 8).
    bc::Tensor expanded = ones({1, 3}).expand({2, 3});
    e = EXPECT_ERROR(expanded += ones({3}));
    CHECK(e.status() == BC_ERR_OVERLAP && e.kind() == BC_ERROR_KIND_INTERNAL_OVERLAP);

    // An empty Tensor is refused by the C API, not dereferenced.
    bc::Tensor none;
    CHECK(!none);
    e = EXPECT_ERROR(none.shape());
    CHECK(e.status() == BC_ERR_NULL_ARG);

    // The message is the failing call's even though the operands (temporaries) are freed while
    // the exception travels.
    e = EXPECT_ERROR(bc::add(ones({2}), ones({3})));
    CHECK(std::string(e.what()) ==
          "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
}

// ---- creating, reading, ownership --------------------------------------------------------------

void constructors_and_reading_back() {
    bc::Tensor a(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
    CHECK(a.dtype() == bc::DType::Int32 && a.ndim() == 2 && a.numel() == 6);
    CHECK(a.shape() == (bc::Shape{2, 3}) && a.strides() == (bc::Shape{3, 1}) && a.is_contiguous());
    CHECK(a.to_vector<int32_t>() == (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
    CHECK(a.to_vector<double>() == (std::vector<double>{1, 2, 3, 4, 5, 6})); // through bc_tensor_to_dtype

    const double raw[3] = {0.5, 1.5, 2.5};
    bc::Tensor d(raw, {3});
    CHECK(d.dtype() == bc::DType::Float64 && d.to_vector<double>() == (std::vector<double>{0.5, 1.5, 2.5}));

    bc::Tensor flags(std::vector<bool>{true, false, true}, {3});
    CHECK(flags.dtype() == bc::DType::Bool && flags.to_vector<bool>() == (std::vector<bool>{true, false, true}));

    const uint16_t half_bits[2] = {0x3c00, 0xc000}; // float16 1.0 and -2.0
    bc::Tensor h = bc::Tensor::from_data(bc::DType::Float16, half_bits, sizeof half_bits, {2});
    CHECK(h.dtype() == bc::DType::Float16 && h.to_vector<float>() == (std::vector<float>{1.0f, -2.0f}));

    bc::Tensor s = bc::Tensor::scalar(int64_t{7});
    CHECK(s.ndim() == 0 && s.numel() == 1 && s.dtype() == bc::DType::Int64);
    CHECK(bc::Tensor::full(bc::DType::UInt8, {2}, 3.0).to_vector<uint8_t>() == (std::vector<uint8_t>{3, 3}));
    CHECK(bc::Tensor::zeros(bc::DType::Float32, {}).ndim() == 0);
    CHECK(std::string(bc::dtype_name(bc::DType::BFloat16)) == "bfloat16" && bc::dtype_size(bc::DType::Int16) == 2);

    // The byte count follows the vector: a mismatch with the shape is the C API's refusal.
    bc::Error e = EXPECT_ERROR(bc::Tensor(std::vector<float>{1, 2, 3}, {2, 2}));
    CHECK(e.status() == BC_ERR_INVALID_ARG);
    e = EXPECT_ERROR(bc::Tensor(raw, {-1}));
    CHECK(e.status() == BC_ERR_INVALID_ARG);
}

void ownership_moves_and_frees() {
    std::size_t before = bc::live_count();
    {
        bc::Tensor a = ones({2, 2});
        CHECK(bc::live_count() == before + 1);
        bc::Tensor b = std::move(a);
        CHECK(!a && b && bc::live_count() == before + 1); // a moved-from Tensor is empty
        a = b.clone();
        CHECK(bc::live_count() == before + 2);
        a = ones({3}); // the clone is freed
        CHECK(bc::live_count() == before + 2);
        bc_tensor *raw = b.release();
        CHECK(!b && bc::live_count() == before + 2);
        bc::Tensor c = bc::Tensor::adopt(raw);
        CHECK(c.get() == raw);
    }
    CHECK(bc::live_count() == before);
}

// ---- operations and views ----------------------------------------------------------------------

void operators_and_out() {
    bc::Tensor a({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
    bc::Tensor b({10.0f, 20.0f}, {2});
    CHECK((a + b).to_vector<float>() == (std::vector<float>{11, 22, 13, 24}));
    CHECK((a - b).to_vector<float>() == (std::vector<float>{-9, -18, -7, -16}));
    CHECK((a * b).to_vector<float>() == (std::vector<float>{10, 40, 30, 80}));
    CHECK((b / a).to_vector<float>() == (std::vector<float>{10, 10, 10.0f / 3.0f, 5}));
    bc::Tensor c = a.clone();
    c += b;
    c -= a;
    c *= bc::Tensor::scalar(2.0f);
    c /= b;
    CHECK(all_equal(c, 2.0f));

    bc::Tensor seven = bc::Tensor::scalar(int32_t{7}), two = bc::Tensor::scalar(int32_t{2});
    bc::Tensor q = seven / two; // true division: float32
    CHECK(q.dtype() == bc::DType::Float32 && q.to_vector<float>() == std::vector<float>{3.5f});

    bc::Tensor out = bc::Tensor::zeros(bc::DType::Float64, {2, 2});
    bc::add(a, b, out);
    CHECK(out.to_vector<double>() == (std::vector<double>{11, 22, 13, 24}));
    bc::Tensor wrong = bc::Tensor::zeros(bc::DType::Float32, {2});
    bc::Error e = EXPECT_ERROR(bc::mul(a, b, wrong));
    CHECK(std::string(e.what()) == "output with shape [2] doesn't match the broadcast shape [2, 2]");
    CHECK(all_equal(wrong, 0.0f));
    bc::sub_inplace(out, a);
    CHECK(out.to_vector<double>() == (std::vector<double>{10, 20, 10, 20}));
}

// Numbers as operands: PyTorch's promotion of Python numbers, both orders, in place.
void numbers() {
    bc::Tensor i({int32_t{1}, int32_t{2}, int32_t{3}}, {3});
    bc::Tensor f = i + 2.5; // int32 with a float: float32
    CHECK(f.dtype() == bc::DType::Float32 && f.to_vector<float>() == (std::vector<float>{3.5f, 4.5f, 5.5f}));
    bc::Tensor j = 10 - i; // the number first; int32 stays int32
    CHECK(j.dtype() == bc::DType::Int32 && j.to_vector<int32_t>() == (std::vector<int32_t>{9, 8, 7}));
    CHECK((6 / i).to_vector<float>() == (std::vector<float>{6, 3, 2}));
    bc::Tensor u({uint8_t{1}, uint8_t{2}}, {2});
    CHECK((u + 300).to_vector<uint8_t>() == (std::vector<uint8_t>{45, 46})); // 300 wraps to 44
    i *= 3;
    i -= 1;
    CHECK(i.to_vector<int32_t>() == (std::vector<int32_t>{2, 5, 8}));
    CHECK(EXPECT_ERROR(i - true).kind() == BC_ERROR_KIND_BOOL_SUBTRACTION); // as in PyTorch
    bc::Error e = EXPECT_ERROR(i *= 0.5);
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "result type Float can't be cast to the desired output type Int");
    CHECK(i.to_vector<int32_t>() == (std::vector<int32_t>{2, 5, 8}));
    // The further operations with a number, both orders (PyTorch 2.15's results).
    bc::Tensor k({int32_t{1}, int32_t{2}, int32_t{3}}, {3});
    using I = std::vector<int32_t>;
    CHECK(bc::pow(k, 2).to_vector<int32_t>() == (I{1, 4, 9}) && bc::pow(2, k).to_vector<int32_t>() == (I{2, 4, 8}));
    bc::Tensor eq = bc::eq(k, 2), lt = bc::lt(2, k); // 2 < k is k > 2
    CHECK(eq.dtype() == bc::DType::Bool && eq.to_vector<bool>() == (std::vector<bool>{false, true, false}));
    CHECK(lt.to_vector<bool>() == (std::vector<bool>{false, false, true}));
    CHECK((k << 2).to_vector<int32_t>() == (I{4, 8, 12}) && (1 << k).to_vector<int32_t>() == (I{2, 4, 8}));
    CHECK((k & 1).to_vector<int32_t>() == (I{1, 0, 1}) && (6 ^ k).to_vector<int32_t>() == (I{7, 4, 5}));
    CHECK(bc::remainder(-7, k).to_vector<int32_t>() == (I{0, 1, 2}));
    CHECK(bc::floor_divide(7, k).to_vector<int32_t>() == (I{7, 3, 2}));
    bc::Error neg = EXPECT_ERROR(bc::pow(k, -1));
    CHECK(neg.status() == BC_ERR_VALUE && neg.kind() == BC_ERROR_KIND_NEGATIVE_POWER);
    CHECK(std::string(neg.what()) == "Integers to negative integer powers are not allowed.");
    k >>= 1;
    CHECK(k.to_vector<int32_t>() == (I{0, 1, 1}));
    // A transposed tensor with a number keeps its layout.
    bc::Tensor t = bc::Tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3}).transpose(0, 1);
    bc::Tensor r = bc::mul(t, 2);
    CHECK(r.strides() == (bc::Shape{1, 3}) && r.to_vector<float>() == (std::vector<float>{2, 8, 4, 10, 6, 12}));
}

// The planner: its report, and the call's own error.
void planner() {
    bc::Geometry x{bc::DType::Float32, {256, 64, 256}, bc::Shape{1, 65536, 256}};
    bc::Geometry y{bc::DType::Float32, {256, 1, 1}, std::nullopt};
    bc::Plan p = bc::plan_binary(BC_OP_ADD, x, y);
    CHECK(p.dtype == bc::DType::Float32 && p.shape == x.shape && p.strides == *x.strides);
    CHECK(p.loop_shape == (bc::Shape{16384, 256}) && p.loop_kind == BC_LOOP_CONTIGUOUS);
    CHECK(p.alloc_bytes == 256u * 64u * 256u * 4u && p.threads >= 1 && p.flags == 0);
    bc::Geometry i{bc::DType::Int32, {2, 3}, std::nullopt}, f{bc::DType::Float32, {3}, std::nullopt};
    bc::Error e = EXPECT_ERROR(bc::plan_binary_inplace(BC_OP_ADD, i, f));
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "result type Float can't be cast to the desired output type Int");
    bc::Geometry g{bc::DType::Float32, {2, 3}, std::nullopt};
    p = bc::plan_binary_inplace(BC_OP_ADD, g, i);
    CHECK(p.dtype == bc::DType::Float32 && p.alloc_bytes == 6u * 4u); // the int32 operand converted
    bc::Error shape = EXPECT_ERROR(bc::plan_binary_out(BC_OP_MUL, f, f, i));
    CHECK(shape.status() == BC_ERR_SHAPE && shape.shape_a() == (bc::Shape{2, 3}));
    bool threw = false;
    try {
        bc::plan_binary(BC_OP_ADD, bc::Geometry{bc::DType::Float32, {2}, bc::Shape{1, 1}}, y);
    } catch (const std::invalid_argument &) {
        threw = true;
    }
    CHECK(threw);
}

void views() {
    bc::Tensor a({1, 2, 3, 4, 5, 6}, {2, 3});
    bc::Tensor e = bc::Tensor({1, 2, 3}, {3}).expand({2, 3});
    CHECK(e.shape() == (bc::Shape{2, 3}) && e.strides() == (bc::Shape{0, 1}));
    CHECK(e.to_vector<int32_t>() == (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
    CHECK(bc::Tensor({5}, {1}).broadcast_to({2, 2}).to_vector<int32_t>() == (std::vector<int32_t>{5, 5, 5, 5}));
    CHECK(bc::Tensor({5}, {1}).expand_as(a).shape() == (bc::Shape{2, 3}));
    bc::Tensor t = a.transpose(0, 1);
    CHECK(t.shape() == (bc::Shape{3, 2}) && !t.is_contiguous());
    CHECK(t.to_vector<int32_t>() == (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
    CHECK(a.permute({1, 0}).strides() == (bc::Shape{1, 3}));
    CHECK(a.slice(1, 0, 3, 2).to_vector<int32_t>() == (std::vector<int32_t>{1, 3, 4, 6}));
    CHECK(a.as_strided({2}, {4}, 1).to_vector<int32_t>() == (std::vector<int32_t>{2, 6}));
    CHECK(a.contiguous().is_contiguous() && t.contiguous().to_vector<int32_t>() == t.to_vector<int32_t>());

    bc::Tensor column = ones({3, 1}), row = ones({1, 4}), three = ones({3});
    std::vector<bc::Tensor> both = bc::broadcast_tensors({column, row});
    CHECK(both.size() == 2 && both[0].shape() == (bc::Shape{3, 4}) && both[1].shape() == (bc::Shape{3, 4}));
    CHECK(both[0].strides() == (bc::Shape{1, 0}) && both[1].strides() == (bc::Shape{0, 1}));
    bc::Error err = EXPECT_ERROR(bc::broadcast_tensors({row, three}));
    CHECK(err.status() == BC_ERR_SHAPE);
    CHECK(bc::broadcast_shapes(std::vector<bc::Shape>{{2, 1}, {3}, {}}) == (bc::Shape{2, 3}));
    err = EXPECT_ERROR(bc::broadcast_shapes(std::vector<bc::Shape>{{2, 3}, {4, 3}}));
    CHECK(std::string(err.what()) == "Attempting to broadcast a dimension of length 4 at -2! Mismatching argument "
                                     "at index 1 had (4, 3); but expected shape should be broadcastable to [2, 3]");
    // Shape-changing views, with PyTorch's results (PyTorch 2.15: a.t().view(6) is refused,
    // a.t().reshape(6) copies).
    CHECK(a.view({3, 2}).shape() == (bc::Shape{3, 2}) && a.view({-1}).shape() == bc::Shape{6});
    err = EXPECT_ERROR(t.view({6}));
    CHECK(std::string(err.what()) == "view size is not compatible with input tensor's size and stride (at least "
                                     "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                                     "instead.");
    bool copied = false;
    CHECK(t.reshape({6}, &copied).to_vector<int32_t>() == (std::vector<int32_t>{1, 4, 2, 5, 3, 6}) && copied);
    CHECK(a.reshape({3, 2}, &copied).shape() == (bc::Shape{3, 2}) && !copied);
    CHECK(a.unsqueeze(0).shape() == (bc::Shape{1, 2, 3}) && a.unsqueeze(0).squeeze(0).shape() == (bc::Shape{2, 3}));
    CHECK(ones({1, 2, 1, 3}).squeeze().shape() == (bc::Shape{2, 3}));
    CHECK(a.flatten(0, -1, &copied).shape() == bc::Shape{6} && !copied && a.flatten().numel() == 6);

    // Text and memory.
    CHECK(bc::Tensor({1, 2, 3, 4}, {2, 2}).to_string() == "tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)");
    CHECK(bc::Tensor({0.5f, 1.5f}, {2}).to_string() == "tensor([0.5000, 1.5000])");
    bc::Tensor::Data where = a.data();
    CHECK(where.address != nullptr && where.nbytes == 6 * sizeof(int32_t) && where.writable);
    CHECK(static_cast<const int32_t *>(where.address)[5] == 6);
    CHECK(!e.data().writable); // an expanded view's elements share locations

    // Strides of another length than the shape would be read out of bounds: refused before the C
    // call.
    bool refused = false;
    try {
        (void)a.as_strided({2}, {}, 0);
    } catch (const std::invalid_argument &) {
        refused = true;
    }
    CHECK(refused);
}

// ---- wrapped memory ----------------------------------------------------------------------------

struct CountedOwner {
    int *released;
    std::vector<float> data;
    CountedOwner(int *r, std::vector<float> d) : released(r), data(std::move(d)) {}
    CountedOwner(CountedOwner &&o) noexcept : released(std::exchange(o.released, nullptr)), data(std::move(o.data)) {}
    CountedOwner(const CountedOwner &) = delete;
    CountedOwner &operator=(const CountedOwner &) = delete;
    CountedOwner &operator=(CountedOwner &&) = delete;
    ~CountedOwner() {
        if (released) ++*released;
    }
};

void wrapped_memory() {
    int released = 0;
    std::vector<float> storage{1, 2, 3, 4};
    float *elements = storage.data();
    {
        bc::Tensor view;
        {
            bc::Tensor t = bc::Tensor::wrap(bc::DType::Float32, elements, 4 * sizeof(float), {2, 2}, {}, 0,
                                            CountedOwner(&released, std::move(storage)));
            t += ones({2});
            CHECK(elements[0] == 2.0f && elements[3] == 5.0f); // written in place, no copy
            view = t.transpose(0, 1);
        }
        CHECK(released == 0); // the view still uses the memory
        CHECK(view.to_vector<float>() == (std::vector<float>{2, 4, 3, 5}));
    }
    CHECK(released == 1);

    // A refused wrap (an element out of bounds): the owner is destroyed, the callback never runs.
    int refused = 0;
    float small[2] = {0, 0};
    bc::Error e = EXPECT_ERROR(bc::Tensor::wrap(bc::DType::Float32, small, sizeof small, {3}, {}, 0,
                                                CountedOwner(&refused, {})));
    CHECK(e.status() == BC_ERR_INVALID_ARG && refused == 1);

    bc::Tensor v = bc::Tensor::wrap(std::vector<int64_t>{1, 2, 3}, {3});
    CHECK(v.dtype() == bc::DType::Int64 && v.to_vector<int64_t>() == (std::vector<int64_t>{1, 2, 3}));
}

// ---- warning handler exceptions ----------------------------------------------------------------

void handler_exception_is_rethrown_after_the_call() {
    std::size_t before = bc::live_count();
    bc::set_warning_handler([](std::string_view) { throw std::runtime_error("from the handler"); });
    bc::set_broadcast_warning(true);
    bool caught = false;
    try {
        bc::Tensor r = ones({4, 1}) + ones({4});
    } catch (const std::runtime_error &e) {
        caught = std::string(e.what()) == "from the handler";
    }
    CHECK(caught);
    CHECK(bc::live_count() == before); // the result was freed
    // In place too; the tensor is written (the operation succeeded) before the exception leaves.
    bc::Tensor x = ones({1, 4}); // x += (4,): other shape, as many elements: a warning
    caught = false;
    try {
        x += ones({4});
    } catch (const std::runtime_error &) {
        caught = true;
    }
    CHECK(caught && all_equal(x, 2.0f));
    // A call that does not warn is not affected.
    x += ones({1});
    CHECK(all_equal(x, 3.0f));
    // A handler that installs another: the C library refuses that from inside a handler, and the
    // refusal reaches the caller of the operation as bc::Error.
    bc::set_warning_handler([](std::string_view) { bc::set_warning_handler(nullptr); });
    bc::Error e = EXPECT_ERROR(ones({4, 1}) + ones({4}));
    CHECK(e.status() == BC_ERR_INVALID_ARG);
    bc::set_broadcast_warning(false);
    bc::set_warning_handler(nullptr);
    // Nothing is left pending: the next call succeeds quietly.
    CHECK((ones({1}) + ones({1})).numel() == 1);
}

void settings_and_version() {
    CHECK(std::string(bc::version()) == BC_VERSION_STRING);
    CHECK(other_tu_version() == BC_VERSION_STRING);
    std::size_t threads = bc::num_threads();
    bc::set_num_threads(1);
    CHECK(bc::num_threads() == 1);
    bc::set_num_threads(0);
    CHECK(bc::num_threads() == threads);
    bc::set_parallel_threshold(0);
    CHECK(!bc::legacy_fallback() && !bc::broadcast_warning());
    CHECK(other_tu_ones({2, 3}).shape() == (bc::Shape{2, 3}));
}

struct Test {
    const char *name;
    void (*run)();
};

} // namespace

int main() {
    const Test tests[] = {
        {"documented_examples_1_to_4_shapes", documented_examples_1_to_4_shapes},
        {"documented_examples_5_to_7_operations", documented_examples_5_to_7_operations},
        {"documented_examples_8_and_9_in_place", documented_examples_8_and_9_in_place},
        {"documented_example_10_values", documented_example_10_values},
        {"documented_examples_11_and_12_switches", documented_examples_11_and_12_switches},
        {"errors_carry_status_kind_and_message", errors_carry_status_kind_and_message},
        {"constructors_and_reading_back", constructors_and_reading_back},
        {"ownership_moves_and_frees", ownership_moves_and_frees},
        {"operators_and_out", operators_and_out},
        {"numbers", numbers},
        {"planner", planner},
        {"views", views},
        {"wrapped_memory", wrapped_memory},
        {"handler_exception_is_rethrown_after_the_call", handler_exception_is_rethrown_after_the_call},
        {"settings_and_version", settings_and_version},
    };
    std::size_t live = bc::live_count();
    int failed_tests = 0;
    for (const Test &t : tests) {
        int before = failures;
        try {
            t.run();
        } catch (const std::exception &e) {
            fail(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
        }
        bool ok = failures == before;
        failed_tests += ok ? 0 : 1;
        std::printf("test %s ... %s\n", t.name, ok ? "ok" : "FAILED");
    }
    if (bc::live_count() != live) {
        std::printf("handles leaked: %zu live, %zu before\n", bc::live_count(), live);
        failed_tests++;
    }
    int total = static_cast<int>(sizeof tests / sizeof tests[0]);
    std::printf("%d passed, %d failed (%d checks)\n", total - failed_tests, failed_tests, checks);
    return failed_tests == 0 ? 0 : 1;
}
