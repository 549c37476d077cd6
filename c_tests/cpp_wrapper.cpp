// cpp_wrapper.cpp: include/broadcast.hpp, the C++ interface, over the C library. Built as C++17
// and as C++20 with -Wall -Wextra -Wpedantic -Werror together with cpp_wrapper_other.cpp (a second
// translation unit including the header), and run under AddressSanitizer/UBSan and valgrind by
// scripts/sanitizers.sh like every C program of the suite.
//
// It checks the twelve documented examples of docs/semantics.md (section 3) through the C++ API,
// that errors carry the library's status, kind, shapes and exact message, ownership (every handle
// freed: bc::live_count() is back where it started; copies share the elements; a moved-from
// tensor says so), the operators (comparisons and % too, with numbers) and views, wrapped memory
// released exactly once, exceptions from a warning handler, the reductions, printing, where with
// numbers, typed element access and iteration, and DLPack. Expected values are PyTorch's (its data
// rows, its documented behaviour) or worked out by hand; the expression tests compare the fused
// form with the separate calls.
#include "broadcast.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
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

    // A Tensor that holds no handle is refused before any C call, saying why.
    bc::Tensor none;
    CHECK(!none.defined());
    e = EXPECT_ERROR(none.shape());
    CHECK(e.status() == BC_ERR_NULL_ARG && e.kind() == BC_ERROR_KIND_NULL_ARG);
    CHECK(std::string(e.what()) ==
          "bc::Tensor used while it holds no tensor: it was default-constructed or adopted NULL");

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
    // to_vector<T> takes the element type only; cast_to_vector<T> converts (bc_tensor_to_dtype).
    bc::Error wrong_type = EXPECT_ERROR(a.to_vector<double>());
    CHECK(wrong_type.status() == BC_ERR_DTYPE &&
          std::string(wrong_type.what()) == "bc::Tensor::to_vector: the tensor's elements are int32, not float64");
    CHECK(EXPECT_ERROR(a.to_vector<int64_t>()).status() == BC_ERR_DTYPE);
    CHECK(EXPECT_ERROR(a.to_vector<bool>()).status() == BC_ERR_DTYPE);
    CHECK(a.cast_to_vector<double>() == (std::vector<double>{1, 2, 3, 4, 5, 6}));
    CHECK(bc::Tensor({-1.5f, 2.75f}, {2}).cast_to_vector<int32_t>() == (std::vector<int32_t>{-1, 2})); // C casts

    const double raw[3] = {0.5, 1.5, 2.5};
    bc::Tensor d(raw, {3});
    CHECK(d.dtype() == bc::DType::Float64 && d.to_vector<double>() == (std::vector<double>{0.5, 1.5, 2.5}));

    bc::Tensor flags(std::vector<bool>{true, false, true}, {3});
    CHECK(flags.dtype() == bc::DType::Bool && flags.to_vector<bool>() == (std::vector<bool>{true, false, true}));

    const uint16_t half_bits[2] = {0x3c00, 0xc000}; // float16 1.0 and -2.0
    bc::Tensor h = bc::Tensor::from_data(bc::DType::Float16, half_bits, sizeof half_bits, {2});
    CHECK(h.dtype() == bc::DType::Float16 && h.cast_to_vector<float>() == (std::vector<float>{1.0f, -2.0f}));

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
        CHECK(!a.defined() && b.defined() && bc::live_count() == before + 1); // a moved-from Tensor is empty
        a = b.clone();
        CHECK(bc::live_count() == before + 2);
        a = ones({3}); // the clone is freed
        CHECK(bc::live_count() == before + 2);
        bc_tensor *raw = b.release();
        CHECK(!b.defined() && bc::live_count() == before + 2);
        bc::Tensor c = bc::Tensor::adopt(raw);
        CHECK(c.get() == raw);
    }
    CHECK(bc::live_count() == before);
}

// Copies share the elements (libtorch's semantics): a new handle, a view of the same geometry.
void copies_share_memory() {
    std::size_t before = bc::live_count();
    {
        bc::Tensor a({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
        bc::Tensor t = a.transpose(0, 1).slice(0, 1, 3); // strides (1, 3), offset 1
        bc::Tensor c = t;                                 // copy construction
        CHECK(c.defined() && t.defined() && c.get() != t.get() && bc::live_count() == before + 3);
        CHECK(c.shape() == (bc::Shape{2, 2}) && c.strides() == (bc::Shape{1, 3}) && c.offset() == 1);
        CHECK(c.data().address == t.data().address);
        c += 10.0f; // written through the copy: seen by the original and by a
        CHECK(t.to_vector<float>() == (std::vector<float>{12, 15, 13, 16}));
        CHECK(a.to_vector<float>() == (std::vector<float>{1, 12, 13, 4, 15, 16}));
        bc::Tensor d = bc::Tensor::zeros(bc::DType::Int8, {1});
        d = a; // copy assignment frees d's old handle
        CHECK(d.dtype() == bc::DType::Float32 && d.data().address == a.data().address);
        CHECK(bc::live_count() == before + 4);
        bc::Tensor &same = d;
        d = same; // self-assignment keeps it
        CHECK(d.defined() && d.to_vector<float>() == a.to_vector<float>());
        // A broadcast view's copy is a broadcast view (not writable), as the original.
        bc::Tensor e = bc::Tensor({1.0f, 2.0f}, {2}).expand({3, 2});
        bc::Tensor f = e;
        CHECK(f.strides() == (bc::Shape{0, 1}) && !f.data().writable);
        // Copies of tensors that hold no handle hold none.
        bc::Tensor none;
        bc::Tensor none2 = none;
        CHECK(!none2.defined());
        std::vector<bc::Tensor> many(3, a); // copyable: standard containers work
        CHECK(many[2].data().address == a.data().address);
    }
    CHECK(bc::live_count() == before);
}

void moved_from_tensor_says_so() {
    bc::Tensor a = ones({2});
    bc::Tensor b = std::move(a);
    bc::Error e = EXPECT_ERROR(a + b);
    CHECK(e.status() == BC_ERR_NULL_ARG && e.kind() == BC_ERROR_KIND_NULL_ARG);
    CHECK(std::string(e.what()) == "bc::Tensor used while it holds no tensor: it was moved from");
    e = EXPECT_ERROR(b += a);
    CHECK(std::string(e.what()) == "bc::Tensor used while it holds no tensor: it was moved from");
    CHECK(all_equal(b, 1.0f)); // unchanged
    e = EXPECT_ERROR(a.numel());
    CHECK(std::string(e.what()) == "bc::Tensor used while it holds no tensor: it was moved from");
    e = EXPECT_ERROR(bc::sum(a));
    CHECK(e.status() == BC_ERR_NULL_ARG);
    bc::Tensor c;
    c = std::move(b); // move assignment empties b the same way
    e = EXPECT_ERROR(b.shape());
    CHECK(std::string(e.what()) == "bc::Tensor used while it holds no tensor: it was moved from");
    bc_tensor *raw = c.release();
    e = EXPECT_ERROR(c.to_string());
    CHECK(std::string(e.what()) ==
          "bc::Tensor used while it holds no tensor: its handle was given up with release()");
    bc_tensor_free(raw);
    a = ones({1}); // a moved-from Tensor can be assigned again
    CHECK(a.defined() && a.numel() == 1);
    // No conversion to bool, so `if (a == b)` cannot mean "holds a handle".
    static_assert(!std::is_constructible_v<bool, bc::Tensor>);
    static_assert(!std::is_convertible_v<bc::Tensor, bool>);
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
    // Strides of another length than the shape: refused before the C call, as a bc::Error.
    e = EXPECT_ERROR(bc::plan_binary(BC_OP_ADD, bc::Geometry{bc::DType::Float32, {2}, bc::Shape{1, 1}}, y));
    CHECK(e.status() == BC_ERR_INVALID_ARG && e.kind() == BC_ERROR_KIND_INVALID_ARGUMENT);
    CHECK(std::string(e.what()) == "bc::Geometry: strides and shape differ in length");
    // Numbers as operands, and where.
    p = bc::plan_binary(BC_OP_ADD, i, 2.5);
    CHECK(p.dtype == bc::DType::Float32 && p.shape == i.shape && p.compute_dtype == bc::DType::Float32);
    p = bc::plan_binary(BC_OP_POW, 2, bc::Geometry{bc::DType::Float32, {2, 3}, bc::Shape{1, 2}});
    CHECK(p.strides == (bc::Shape{3, 1})); // torch.pow(2, t) is row-major
    e = EXPECT_ERROR(bc::plan_binary_inplace(BC_OP_ADD, i, 2.5));
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "result type Float can't be cast to the desired output type Int");
    bc::Geometry cond{bc::DType::Bool, {2, 1}, std::nullopt}, d{bc::DType::Float64, {}, std::nullopt};
    p = bc::plan_where(cond, f, d);
    CHECK(p.dtype == bc::DType::Float32 && p.shape == (bc::Shape{2, 3}) && p.strides == (bc::Shape{3, 1}));
    CHECK(p.alloc_bytes == 6u * 4u + 4u && p.flags == 0); // the result, and d as a float32
    p = bc::plan_where(cond, f, d, g);
    CHECK(p.alloc_bytes == 4u);
    e = EXPECT_ERROR(bc::plan_where(cond, f, d, i));
    CHECK(e.status() == BC_ERR_DTYPE);
    // Reductions: float16 sums accumulate in float32; 4 outputs of 6 elements.
    bc::Geometry h{bc::DType::Float16, {6, 4}, std::nullopt};
    p = bc::plan_reduce(BC_REDUCE_SUM, h, {0});
    CHECK(p.dtype == bc::DType::Float16 && p.compute_dtype == bc::DType::Float32 && p.shape == (bc::Shape{4}));
    CHECK(p.loop_shape == (bc::Shape{4, 6}) && p.alloc_bytes == 4u * 2u);
    e = EXPECT_ERROR(bc::plan_reduce(BC_REDUCE_MEAN, i));
    CHECK(e.status() == BC_ERR_DTYPE &&
          std::string(e.what()) == "mean(): could not infer output dtype. Input dtype must be either a "
                                   "floating point or complex dtype. Got: Int");
    p = bc::plan_sum_to_size(g, {1, 3});
    CHECK(p.shape == (bc::Shape{1, 3}) && p.alloc_bytes == 3u * 4u && p.loop_shape == (bc::Shape{3, 2}));
    p = bc::plan_sum_to_size(g, {2, 3}); // nothing summed: a view
    CHECK(p.alloc_bytes == 0u && p.loop_kind == BC_LOOP_NONE && p.strides == (bc::Shape{3, 1}));
    e = EXPECT_ERROR(bc::plan_sum_to_size(g, {1, 4}));
    CHECK(e.status() == BC_ERR_SHAPE && std::string(e.what()) == "size {[1, 4]} is not expandable to size {[2, 3]}.");
    // The fused form against its call.
    p = bc::plan_binary_sum_to(BC_OP_MUL, g, f, {3});
    bc::Tensor s = bc::binary_sum_to(BC_OP_MUL, bc::Tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3}),
                                     bc::Tensor({1.0f, 2.0f, 3.0f}, {3}), {3});
    CHECK(p.dtype == s.dtype() && p.shape == s.shape() && p.strides == s.strides());
    CHECK(p.loop_shape == (bc::Shape{3, 2}) && p.alloc_bytes == 3u * 4u);
    e = EXPECT_ERROR(bc::plan_binary_sum_to(BC_OP_SUB, cond, cond, {1}));
    CHECK(e.status() == BC_ERR_DTYPE);
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
    // call, as a bc::Error.
    bc::Error refused = EXPECT_ERROR((void)a.as_strided({2}, {}, 0));
    CHECK(refused.status() == BC_ERR_INVALID_ARG && refused.kind() == BC_ERROR_KIND_INVALID_ARGUMENT);
    CHECK(std::string(refused.what()) == "bc::Tensor::as_strided: strides and shape differ in length");
    CHECK(refused.info().dim == -1 && refused.shape_a().empty());
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
    // Strides of another length than the shape: a bc::Error, the owner destroyed too.
    int mismatched = 0;
    e = EXPECT_ERROR(bc::Tensor::wrap(bc::DType::Float32, small, sizeof small, {2}, {1, 1}, 0,
                                      CountedOwner(&mismatched, {})));
    CHECK(e.status() == BC_ERR_INVALID_ARG && std::string(e.what()) == "bc::Tensor::wrap: strides and shape differ in length");
    CHECK(mismatched == 1);

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

void reductions() {
    bc::Tensor a({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
    CHECK(bc::sum(a, {0}).to_vector<float>() == (std::vector<float>{5, 7, 9}));
    CHECK(bc::sum(a, {-1}).to_vector<float>() == (std::vector<float>{6, 15}));
    bc::Tensor all = bc::sum(a);
    CHECK(all.ndim() == 0 && all.to_vector<float>() == std::vector<float>{21});
    CHECK(bc::sum(a, {1}, true).shape() == (bc::Shape{2, 1}));
    CHECK(bc::sum(a, {0, 1}, true).shape() == (bc::Shape{1, 1}));
    CHECK(bc::mean(a).to_vector<float>() == std::vector<float>{3.5f});
    CHECK(bc::prod(a, {1}).to_vector<float>() == (std::vector<float>{6, 120}));
    CHECK(bc::amax(a, {0}).to_vector<float>() == (std::vector<float>{4, 5, 6}));
    CHECK(bc::amin(a).to_vector<float>() == std::vector<float>{1});
    CHECK(bc::reduce(BC_REDUCE_PROD, a, {0}).to_vector<float>() == (std::vector<float>{4, 10, 18}));
    // One dimension as an integer (PyTorch's a.sum(0)); a braced list is still the list form, and
    // an empty one still reduces everything.
    CHECK(bc::sum(a, 0).to_vector<float>() == (std::vector<float>{5, 7, 9}));
    CHECK(bc::sum(a, -1).to_vector<float>() == (std::vector<float>{6, 15}));
    CHECK(bc::sum(a, 1, true).shape() == (bc::Shape{2, 1}));
    CHECK(bc::sum(a, int64_t{0}).shape() == bc::Shape{3} && bc::sum(a, std::size_t{1}).shape() == bc::Shape{2});
    CHECK(bc::sum(a, {}).ndim() == 0 && bc::sum(a, {}).to_vector<float>() == std::vector<float>{21});
    CHECK(bc::mean(a, 0).to_vector<float>() == (std::vector<float>{2.5f, 3.5f, 4.5f}));
    CHECK(bc::prod(a, 1).to_vector<float>() == (std::vector<float>{6, 120}));
    CHECK(bc::amax(a, 1).to_vector<float>() == (std::vector<float>{3, 6}) && bc::amin(a, 0, true).shape() == (bc::Shape{1, 3}));
    CHECK(bc::reduce(BC_REDUCE_SUM, a, 1).to_vector<float>() == (std::vector<float>{6, 15}));
    bc::Error dim = EXPECT_ERROR(bc::sum(a, 2)); // the C library's range check
    CHECK(dim.status() == BC_ERR_INVALID_ARG && dim.kind() == BC_ERROR_KIND_DIM_OUT_OF_RANGE);

    // PyTorch's types: integer sums are int64, integer means are refused.
    bc::Tensor ints({int32_t{1}, int32_t{2}, int32_t{3}}, {3});
    bc::Tensor s = bc::sum(ints);
    CHECK(s.dtype() == bc::DType::Int64 && s.to_vector<int64_t>() == std::vector<int64_t>{6});
    CHECK(bc::amax(ints).dtype() == bc::DType::Int32);
    bc::Error e = EXPECT_ERROR(bc::mean(ints));
    CHECK(e.status() == BC_ERR_DTYPE && e.kind() == BC_ERROR_KIND_REDUCE_DTYPE);
    CHECK(std::string(e.what()) == "mean(): could not infer output dtype. Input dtype must be either "
                                   "a floating point or complex dtype. Got: Int");
    e = EXPECT_ERROR(bc::sum(a, {0, -2}));
    CHECK(e.status() == BC_ERR_INVALID_ARG);
    CHECK(std::string(e.what()) == "dim 0 appears multiple times in the list of dims");
    e = EXPECT_ERROR(bc::amax(bc::Tensor::zeros(bc::DType::Float32, {0, 2}), {0}));
    CHECK(e.status() == BC_ERR_SHAPE);
    CHECK(std::string(e.what()) == "amax(): Expected reduction dim 0 to have non-zero size.");
}

void sum_to_size_and_the_fused_form() {
    bc::Tensor a({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
    bc::Tensor b({1.0f, 2.0f, 3.0f}, {3});
    bc::Tensor cols = bc::sum_to_size(a, {1, 3});
    CHECK(cols.shape() == (bc::Shape{1, 3}) && cols.to_vector<float>() == (std::vector<float>{5, 7, 9}));
    CHECK(bc::sum_to_size(a, {3}).shape() == (bc::Shape{3}));
    CHECK(bc::sum_to_size(a, {2, 3}).to_vector<float>() == a.to_vector<float>()); // a view of a
    bc::Error e = EXPECT_ERROR(bc::sum_to_size(a, {1, 4}));
    CHECK(e.status() == BC_ERR_SHAPE && e.kind() == BC_ERROR_KIND_NOT_EXPANDABLE);
    CHECK(std::string(e.what()) == "size {[1, 4]} is not expandable to size {[2, 3]}.");
    CHECK(e.shape_a() == (bc::Shape{1, 4}) && e.shape_b() == (bc::Shape{2, 3}));

    // a * b = [[1, 4, 9], [4, 10, 18]], summed over the rows.
    bc::Tensor fused = bc::binary_sum_to(BC_OP_MUL, a, b, {3});
    CHECK(fused.to_vector<float>() == (std::vector<float>{5, 14, 27}));
    CHECK(fused.to_vector<float>() == bc::sum_to_size(a * b, {3}).to_vector<float>());
    // A comparison sums its bools to int64: a > b is false in row 0, true in row 1.
    bc::Tensor gt = bc::binary_sum_to(BC_OP_GT, a, b, {3});
    CHECK(gt.dtype() == bc::DType::Int64 && gt.to_vector<int64_t>() == (std::vector<int64_t>{1, 1, 1}));
    e = EXPECT_ERROR(bc::binary_sum_to(BC_OP_ADD, a, bc::Tensor({1.0f, 2.0f}, {2}), {3}));
    CHECK(e.status() == BC_ERR_SHAPE);
    CHECK(std::string(e.what()) ==
          "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1");
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

// ---- the further operations, where and expressions (docs/semantics.md, sections 11 and 12) --------
// Rows of tests/data/pytorch/ops_values.jsonl and where.jsonl (PyTorch 2.15 CPU), cited by line.

bc::Tensor half(bc::DType dtype, const std::vector<uint16_t> &bits, const bc::Shape &shape) {
    return bc::Tensor::from_data(dtype, bits.data(), bits.size() * 2, shape);
}

void more_operations_against_pytorch_rows() {
    // ops_values.jsonl:3333: float16 5.5 % int32 -4 -> float16 -2.5 (the divisor's sign).
    bc::Tensor r = bc::remainder(half(bc::DType::Float16, {0x4580}, {}), bc::Tensor(std::vector<int32_t>{-4}, {}));
    CHECK(r.dtype() == bc::DType::Float16 && r.ndim() == 0 && r.cast_to_vector<float>() == std::vector<float>{-2.5f});
    // :3779: fmod_ in place, float32 [-7, 9, -4, 9] fmod [-5] (the dividend's sign).
    bc::Tensor x(std::vector<float>{-7, 9, -4, 9}, {4});
    bc::fmod_inplace(x, bc::Tensor(std::vector<float>{-5}, {1}));
    CHECK(x.to_vector<float>() == (std::vector<float>{-2, 4, -4, 4}));
    // :4079: int8 -8 // [0] refused: ZeroDivisionError, BC_ERR_VALUE.
    bc::Error e = EXPECT_ERROR(bc::floor_divide(bc::Tensor(std::vector<int8_t>{-8}, {}), bc::Tensor(std::vector<int8_t>{0}, {1})));
    CHECK(e.status() == BC_ERR_VALUE && e.kind() == BC_ERROR_KIND_ZERO_DIVISION && std::string(e.what()) == "ZeroDivisionError");
    // :7033: int64 (1,) >> int32 (2,3): shifts by 100, -1 and INT32_MIN, 0 and 31.
    bc::Tensor big(std::vector<int64_t>{2406827583581979317}, {1});
    bc::Tensor by(std::vector<int32_t>{100, 100, -1, -2147483647 - 1, 0, 31}, {2, 3});
    r = big >> by;
    CHECK(r.dtype() == bc::DType::Int64 && r.shape() == (bc::Shape{2, 3}));
    CHECK(r.to_vector<int64_t>() == (std::vector<int64_t>{0, 0, 0, 0, 2406827583581979317, 1120766430}));
    // :6670: int8 [6, 58] << [-3, 8] -> [0, 0].
    r = bc::Tensor(std::vector<int8_t>{6, 58}, {2}) << bc::Tensor(std::vector<int8_t>{-3, 8}, {2});
    CHECK(r.dtype() == bc::DType::Int8 && r.to_vector<int8_t>() == (std::vector<int8_t>{0, 0}));
    // :6300: int64 [-3, 6] ^ uint8 [1, 1] -> int64 [-4, 7]; the same into out and in place.
    bc::Tensor l(std::vector<int64_t>{-3, 6}, {2});
    bc::Tensor m(std::vector<uint8_t>{1, 1}, {2});
    CHECK((l ^ m).to_vector<int64_t>() == (std::vector<int64_t>{-4, 7}));
    bc::Tensor out = bc::Tensor::zeros(bc::DType::Int64, {2});
    bc::bitwise_xor(l, m, out);
    CHECK(out.to_vector<int64_t>() == (std::vector<int64_t>{-4, 7}));
    l ^= m;
    CHECK(l.to_vector<int64_t>() == (std::vector<int64_t>{-4, 7}));
    // :1853: float32 [3] >= bool (2,3) -> bool (2,3), all true.
    r = bc::ge(bc::Tensor(std::vector<float>{3}, {1}),
               bc::Tensor(std::vector<bool>{true, true, false, true, true, true}, {2, 3}));
    CHECK(r.dtype() == bc::DType::Bool && r.shape() == (bc::Shape{2, 3}));
    CHECK(r.to_vector<bool>() == std::vector<bool>(6, true));
    // :2222: maximum(int16 128, float32 7) -> float32 128.
    r = bc::maximum(bc::Tensor(std::vector<int16_t>{128}, {}), bc::Tensor(std::vector<float>{7}, {}));
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == std::vector<float>{128});
    // :775: lt_ in place: int64 3590666969352184465 < float16 98.125 writes 0 into the int64.
    bc::Tensor i64(std::vector<int64_t>{3590666969352184465}, {});
    bc::lt_inplace(i64, half(bc::DType::Float16, {0x5622}, {}));
    CHECK(i64.dtype() == bc::DType::Int64 && i64.to_vector<int64_t>() == std::vector<int64_t>{0});
    // :7776: hypot(float32 [3], float16 [-4]) -> float32 [5].
    r = bc::hypot(bc::Tensor(std::vector<float>{3}, {1}), half(bc::DType::Float16, {0xc400}, {1}));
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == std::vector<float>{5});
    // :2967: pow_ in place: bfloat16 3 ** int32 -2 -> bfloat16 0.111328125.
    bc::Tensor b16 = half(bc::DType::BFloat16, {0x4040}, {});
    bc::pow_inplace(b16, bc::Tensor(std::vector<int32_t>{-2}, {}));
    CHECK(b16.dtype() == bc::DType::BFloat16 && b16.cast_to_vector<float>() == std::vector<float>{0.111328125f});
    // :2244: maximum into a bool from float16: the cast is refused, the target unchanged.
    bc::Tensor flag(std::vector<bool>{true}, {});
    e = EXPECT_ERROR(bc::maximum_inplace(flag, half(bc::DType::Float16, {0xc700}, {})));
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "result type Half can't be cast to the desired output type Bool");
    CHECK(flag.to_vector<bool>() == std::vector<bool>{true});
    // :6705: int8 << float32 has no kernel.
    e = EXPECT_ERROR(bc::Tensor(std::vector<int8_t>{44}, {}) << bc::Tensor(std::vector<float>{-8}, {}));
    CHECK(e.status() == BC_ERR_DTYPE && e.kind() == BC_ERROR_KIND_NOT_IMPLEMENTED);
    CHECK(std::string(e.what()) == "\"lshift_cpu\" not implemented for 'Float'");
    // Comparison operators give tensors, and a tensor does not convert to bool.
    static_assert(std::is_same_v<std::invoke_result_t<std::equal_to<>, const bc::Tensor &, const bc::Tensor &>,
                                 bc::Tensor>);
    static_assert(std::is_same_v<std::invoke_result_t<std::less<>, const bc::Tensor &, int>, bc::Tensor>);
    static_assert(!std::is_constructible_v<bool, std::invoke_result_t<std::less<>, bc::Tensor, bc::Tensor>>);
}

void where_against_pytorch_rows() {
    // where.jsonl:51: bool (4,1), float16 (4,1), float16 (1,) -> float16 (4,1).
    bc::Tensor cond(std::vector<bool>{true, true, false, true}, {4, 1});
    bc::Tensor a = half(bc::DType::Float16, {0x4300, 0x4300, 0x4680, 0xc700}, {4, 1});
    bc::Tensor b = half(bc::DType::Float16, {0xc200}, {1});
    bc::Tensor r = bc::where(cond, a, b);
    CHECK(r.dtype() == bc::DType::Float16 && r.shape() == (bc::Shape{4, 1}));
    CHECK(r.cast_to_vector<float>() == (std::vector<float>{3.5f, 3.5f, -3.0f, -7.0f}));
    bc::Tensor out = bc::Tensor::zeros(bc::DType::Float16, {4, 1});
    bc::where(cond, a, b, out);
    CHECK(out.cast_to_vector<float>() == (std::vector<float>{3.5f, 3.5f, -3.0f, -7.0f}));
    // :60: bool (2,), float16 [inf], uint8 128 (0-d) -> float16 [inf, inf].
    r = bc::where(bc::Tensor(std::vector<bool>{true, true}, {2}), half(bc::DType::Float16, {0x7c00}, {1}),
                  bc::Tensor(std::vector<uint8_t>{128}, {}));
    CHECK(r.dtype() == bc::DType::Float16 && r.cast_to_vector<float>() == std::vector<float>(2, INFINITY));
    // :7: bool, float64 1e10, int64 -8 (all 0-d) -> float64 1e10.
    r = bc::where(bc::Tensor(std::vector<bool>{true}, {}), bc::Tensor(std::vector<double>{1e10}, {}),
                  bc::Tensor(std::vector<int64_t>{-8}, {}));
    CHECK(r.dtype() == bc::DType::Float64 && r.ndim() == 0 && r.to_vector<double>() == std::vector<double>{1e10});
    // :93: a float64 condition is refused.
    bc::Error e = EXPECT_ERROR(bc::where(bc::Tensor(std::vector<double>{-1.75}, {}),
                                         bc::Tensor(std::vector<int64_t>{3, -1, -9, -7}, {4}),
                                         bc::Tensor(std::vector<int8_t>{3, -3, 6, -5}, {4})));
    CHECK(e.status() == BC_ERR_DTYPE && e.kind() == BC_ERROR_KIND_WHERE_CONDITION);
    CHECK(std::string(e.what()) == "where expected condition to be a boolean tensor, but got a tensor with dtype Double");
    // Into out of another type: PyTorch wants the type exactly; out unchanged.
    bc::Tensor wrong = bc::Tensor::full(bc::DType::Float32, {4, 1}, 9.0);
    e = EXPECT_ERROR(bc::where(cond, a, b, wrong));
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "Expected out type to be Half but got Float");
    CHECK(all_equal(wrong, 9.0f));
}

bool same(const bc::Tensor &x, const bc::Tensor &y) {
    return x.dtype() == y.dtype() && x.shape() == y.shape() && x.cast_to_vector<double>() == y.cast_to_vector<double>();
}

void expressions_match_separate_calls() {
    bc::Tensor a(std::vector<float>{0.5f, -1.25f, 3, 1e-3f}, {4, 1});
    bc::Tensor b(std::vector<int16_t>{3, -2, 7}, {3});
    bc::Tensor c(std::vector<float>{-6, -4.5, -3, -1.5, 0, 1.5, 3, 4.5, 6, 7.5, 9, 10.5}, {4, 3});
    bc::Expr x = bc::Expr::input(0), y = bc::Expr::input(1), z = bc::Expr::input(2);
    // where(a*b + c > 0.1, c ** 2, maximum(a, c) - 0.3), then (a & 6) << 1 on integers.
    bc::Expr e = bc::where(bc::gt(x * y + z, bc::Expr::constant(bc::DType::Float64, 0.1)),
                           bc::pow(z, bc::Expr::constant_int(bc::DType::Int64, 2)),
                           bc::maximum(x, z) - bc::Expr::constant(bc::DType::Float64, 0.3));
    CHECK(e.steps().size() == 16 && e.steps().back().kind == BC_EXPR_WHERE);
    bc::Tensor want = bc::where(bc::gt(a * b + c, bc::Tensor(std::vector<double>{0.1}, {})),
                                bc::pow(c, bc::Tensor(std::vector<int64_t>{2}, {})),
                                bc::maximum(a, c) - bc::Tensor(std::vector<double>{0.3}, {}));
    CHECK(same(e.eval({a, b, c}), want));
    bc::Tensor out = bc::Tensor::zeros(bc::DType::Float32, {4, 3});
    e.eval({a, b, c}, out);
    CHECK(same(out, want));
    bc::Expr bits = (x & bc::Expr::constant_int(bc::DType::Int16, 6)) << y;
    bc::Tensor n(std::vector<int16_t>{7, 5, -1}, {3});
    CHECK(same(bits.eval({n, b}), (n & bc::Tensor(std::vector<int16_t>{6}, {})) << b));
    // A failing step throws the separate call's error; a malformed program is refused.
    bc::Tensor two(std::vector<float>{1, 2}, {2});
    bc::Error err = EXPECT_ERROR((x * bc::Expr::constant(bc::DType::Float32, 2) + y).eval({c, two}));
    bc::Error separate = EXPECT_ERROR(c + two);
    CHECK(err.status() == BC_ERR_SHAPE && std::string(err.what()) == separate.what());
    err = EXPECT_ERROR((x + bc::Expr::input(3)).eval({a, b}));
    CHECK(err.status() == BC_ERR_INVALID_ARG);
    // Planned from geometries alone (bc_plan_expr): the result, or the same error.
    bc::Geometry ga{bc::DType::Float32, {4, 1}, std::nullopt}, gb{bc::DType::Int16, {3}, std::nullopt},
        gc{bc::DType::Float32, {4, 3}, std::nullopt}, gtwo{bc::DType::Float32, {2}, std::nullopt};
    bc::Plan p = e.plan({ga, gb, gc});
    CHECK(p.dtype == bc::DType::Float32 && p.shape == (bc::Shape{4, 3}) && p.strides == (bc::Shape{3, 1}));
    CHECK(e.plan({ga, gb, gc}, gc).alloc_bytes < p.alloc_bytes); // no result to allocate
    err = EXPECT_ERROR((x * bc::Expr::constant(bc::DType::Float32, 2) + y).plan({gc, gtwo}));
    CHECK(err.status() == BC_ERR_SHAPE && std::string(err.what()) == separate.what());
    err = EXPECT_ERROR((x + bc::Expr::input(3)).plan({ga, gb}));
    CHECK(err.status() == BC_ERR_INVALID_ARG);
}

void expressions_with_unary_and_ternary_steps() {
    bc::Tensor a(std::vector<float>{3, -1.5f, 0.25f, 4}, {4, 1});
    bc::Tensor b(std::vector<float>{4, 2, -8}, {3});
    bc::Expr x = bc::Expr::input(0), y = bc::Expr::input(1), u = bc::Expr::input(2), v = bc::Expr::input(3);
    bc::Expr norm = bc::sqrt(x * x + y * y);
    CHECK(norm.steps().back().kind == BC_EXPR_UNARY && norm.steps().back().arg == BC_UNARY_SQRT);
    CHECK(same(norm.eval({a, b}), bc::sqrt(a * a + b * b)));
    CHECK(same((-bc::exp(x)).eval({a}), -bc::exp(a)));
    // clamp(a * s, lo, hi) with tensor bounds, in one program.
    bc::Tensor s(std::vector<float>{2.5f}, {}), lo(std::vector<float>{-1, 0, 1}, {3}), hi(std::vector<float>{5}, {1});
    bc::Expr clamped = bc::clamp(x * y, u, v);
    CHECK(clamped.steps().size() == 6 && clamped.steps().back().kind == BC_EXPR_TERNARY &&
          clamped.steps().back().arg == BC_TERNARY_CLAMP);
    CHECK(same(clamped.eval({a, s, lo, hi}), bc::clamp(a * s, lo, hi)));
    // addcmul's and addcdiv's value: an integer one on int32, a float one on float32.
    bc::Tensor n(std::vector<int32_t>{1, -2, 3}, {3});
    bc::Expr twice = bc::addcmul(x, x, x, 2);
    CHECK(twice.steps().back().int_value == 2 && twice.steps().back().float_value == 0.0);
    CHECK(same(twice.eval({n}), bc::addcmul(n, n, n, 2)));
    CHECK(same(bc::addcdiv(x, y, y, 0.5).eval({a, b}), bc::addcdiv(a, b, b, 0.5)));
    bc::Tensor w(std::vector<float>{0.75f}, {});
    CHECK(same(bc::lerp(x, y, u).eval({a, b, w}), bc::lerp(a, b, w)));
    // A failing ternary step throws the separate call's error ((4,1) against (2,1)).
    bc::Tensor wrong(std::vector<float>{1, 2}, {2, 1});
    bc::Error err = EXPECT_ERROR(clamped.eval({a, s, wrong, hi}));
    bc::Error separate = EXPECT_ERROR(bc::clamp(a * s, wrong, hi));
    CHECK(err.status() == separate.status() && std::string(err.what()) == separate.what());
}

// ---- C++ idioms: printing, comparison and % operators, where with numbers ------------------------

void printing_to_a_stream() {
    std::ostringstream os;
    os << bc::Tensor({1, 2, 3, 4}, {2, 2}) << "|" << bc::Tensor({0.5f, 1.5f}, {2});
    // PyTorch 2.x: str(torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)), str(torch.tensor([0.5, 1.5])).
    CHECK(os.str() == "tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)|tensor([0.5000, 1.5000])");
    std::ostringstream empty;
    empty << bc::Tensor::zeros(bc::DType::Float64, {0, 3});
    CHECK(empty.str() == "tensor([], size=(0, 3), dtype=torch.float64)");
    bc::Tensor gone = ones({1});
    bc::Tensor taker = std::move(gone);
    std::ostringstream none;
    bc::Error e = EXPECT_ERROR(none << gone);
    CHECK(e.status() == BC_ERR_NULL_ARG && none.str().empty());
}

std::vector<bool> bools(const bc::Tensor &t) {
    if (t.dtype() != bc::DType::Bool) return {};
    return t.to_vector<bool>();
}

void comparison_and_remainder_operators() {
    using B = std::vector<bool>;
    bc::Tensor a({int32_t{1}, int32_t{5}, int32_t{3}}, {3});
    bc::Tensor b({int32_t{2}, int32_t{5}, int32_t{1}}, {3});
    CHECK(bools(a == b) == (B{false, true, false}));
    CHECK(bools(a != b) == (B{true, false, true}));
    CHECK(bools(a < b) == (B{true, false, false}));
    CHECK(bools(a <= b) == (B{true, true, false}));
    CHECK(bools(a > b) == (B{false, false, true}));
    CHECK(bools(a >= b) == (B{false, true, true}));
    // With numbers, both orders: 3 < a is a > 3.
    CHECK(bools(a == 3) == (B{false, false, true}) && bools(3 != a) == (B{true, true, false}));
    CHECK(bools(3 < a) == (B{false, true, false}) && bools(a >= 3.0) == (B{false, true, true}));
    CHECK(bools(2.5 > a) == (B{true, false, false}) && bools(a <= 1) == (B{true, false, false}));
    // They broadcast: (3,1) < (3,) is (3,3).
    bc::Tensor lt = a.view({3, 1}) < b;
    CHECK(lt.shape() == (bc::Shape{3, 3}) &&
          bools(lt) == (B{true, true, false, false, false, false, false, true, false}));
    // Float comparisons: NaN is unequal to everything, itself included.
    bc::Tensor f({NAN, 1.0f}, {2});
    CHECK(bools(f == f) == (B{false, true}) && bools(f != f) == (B{true, false}));

    // % is Python's (the divisor's sign), not C++'s: -7 % 3 is 2, 7 % -3 is -2.
    using I = std::vector<int32_t>;
    bc::Tensor x({int32_t{-7}, int32_t{7}}, {2});
    CHECK((x % 3).to_vector<int32_t>() == (I{2, 1}) && (x % -3).to_vector<int32_t>() == (I{-1, -2}));
    CHECK((-7 % bc::Tensor({int32_t{3}, int32_t{-3}}, {2})).to_vector<int32_t>() == (I{2, -1}));
    CHECK((x % bc::Tensor({int32_t{-3}}, {1})).to_vector<int32_t>() == (I{-1, -2}));
    bc::Tensor r = bc::Tensor(std::vector<float>{5.5f}, {1}) % -4;
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == std::vector<float>{-2.5f});
    x %= 3;
    CHECK(x.to_vector<int32_t>() == (I{2, 1}));
    x %= bc::Tensor({int32_t{-2}}, {});
    CHECK(x.to_vector<int32_t>() == (I{0, -1}));
    bc::Error e = EXPECT_ERROR(x % 0); // an integer zero divisor: ZeroDivisionError
    CHECK(e.status() == BC_ERR_VALUE && e.kind() == BC_ERROR_KIND_ZERO_DIVISION);

    // The same operators in expressions.
    bc::Expr p = bc::Expr::input(0), q = bc::Expr::input(1);
    CHECK(bools((p < q).eval({a, b})) == (B{true, false, false}));
    CHECK(bools((p == q).eval({a, b})) == (B{false, true, false}));
    CHECK(((p % q).eval({a, b})).to_vector<int32_t>() == (I{1, 0, 0}));
}

void where_with_numbers() {
    bc::Tensor cond(std::vector<bool>{true, false, true}, {3});
    // int32 with a float number: float32 (PyTorch: torch.where(cond, int32 tensor, 2.5) is float32).
    bc::Tensor r = bc::where(cond, bc::Tensor({int32_t{1}, int32_t{2}, int32_t{3}}, {3}), 2.5);
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == (std::vector<float>{1, 2.5f, 3}));
    // A number first; int8 with an int stays int8.
    r = bc::where(cond, 7, bc::Tensor(std::vector<int8_t>{-1, -2, -3}, {3}));
    CHECK(r.dtype() == bc::DType::Int8 && r.to_vector<int8_t>() == (std::vector<int8_t>{7, -2, 7}));
    // bool with an int: int64.
    r = bc::where(cond, bc::Tensor(std::vector<bool>{true, true, false}, {3}), 5);
    CHECK(r.dtype() == bc::DType::Int64 && r.to_vector<int64_t>() == (std::vector<int64_t>{1, 5, 0}));
    // float16 with a float stays float16: 0.1 rounds to float16's 0.0999755859375 (bits 0x2e66).
    r = bc::where(cond, half(bc::DType::Float16, {0x3c00, 0x3c00, 0x3c00}, {3}), 0.1);
    CHECK(r.dtype() == bc::DType::Float16);
    std::vector<uint16_t> bits(3);
    r.copy_to(bits.data(), 6);
    CHECK(bits == (std::vector<uint16_t>{0x3c00, 0x2e66, 0x3c00}));
    // A 0-d tensor beside a float64 number: float32 0-d stays float32.
    r = bc::where(cond, bc::Tensor::scalar(1.5f), -1.0);
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == (std::vector<float>{1.5f, -1, 1.5f}));
    // An int64 beyond 2^53 goes in exactly (not through a double).
    r = bc::where(cond, bc::Tensor::zeros(bc::DType::Int64, {3}), int64_t{9007199254740993});
    CHECK(r.to_vector<int64_t>() == (std::vector<int64_t>{0, 9007199254740993, 0}));
    // Two numbers: result_type(int, int) is int64, (int, float) float32, (bool, bool) bool.
    r = bc::where(cond, 1, 0);
    CHECK(r.dtype() == bc::DType::Int64 && r.to_vector<int64_t>() == (std::vector<int64_t>{1, 0, 1}));
    r = bc::where(cond, 1, 0.5);
    CHECK(r.dtype() == bc::DType::Float32 && r.to_vector<float>() == (std::vector<float>{1, 0.5f, 1}));
    r = bc::where(cond, false, true);
    CHECK(r.dtype() == bc::DType::Bool && r.to_vector<bool>() == (std::vector<bool>{false, true, false}));
    r = bc::where(cond.view({3, 1}), 2.0f, bc::Tensor({0.0f, 1.0f}, {2})); // broadcast (3,1) with (2,)
    CHECK(r.shape() == (bc::Shape{3, 2}) && r.to_vector<float>() == (std::vector<float>{2, 2, 0, 1, 2, 2}));
    // The C library's errors: a float condition.
    bc::Error e = EXPECT_ERROR(bc::where(bc::Tensor({1.0f}, {1}), 1, 0));
    CHECK(e.status() == BC_ERR_DTYPE && e.kind() == BC_ERROR_KIND_WHERE_CONDITION);
}

// ---- typed access to the elements ---------------------------------------------------------------

void typed_element_access() {
    using I = std::vector<int32_t>;
    bc::Tensor a({1, 2, 3, 4, 5, 6}, {2, 3}); // int32
    int32_t *p = a.data<int32_t>();
    CHECK(p[0] == 1 && p[5] == 6);
    p[4] = 50; // written through the pointer: the tensor's memory
    CHECK(a.to_vector<int32_t>() == (I{1, 2, 3, 4, 50, 6}));
    const int32_t *cp = a.data<const int32_t>();
    CHECK(cp == p);
    bc::Error e = EXPECT_ERROR(a.data<float>());
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "bc::Tensor::data: the tensor's elements are int32, not float32");
    CHECK(EXPECT_ERROR(a.data<const int64_t>()).status() == BC_ERR_DTYPE);
    CHECK(EXPECT_ERROR(a.data<uint8_t>()).status() == BC_ERR_DTYPE);

    // at: one index per dimension, negative from the end, through the strides and offset.
    CHECK(a.at<int32_t>(1, 2) == 6 && a.at<int32_t>(0, 0) == 1 && a.at<int32_t>(-1, -3) == 4);
    a.at<int32_t>(0, 1) = 20;
    CHECK(a.to_vector<int32_t>() == (I{1, 20, 3, 4, 50, 6}));
    bc::Tensor t = a.transpose(0, 1); // t[2][1] is a[1][2]
    CHECK(t.at<const int32_t>(2, 1) == 6 && t.at<int32_t>(1, 0) == 20);
    bc::Tensor s = a.slice(1, 1, 3); // [[20, 3], [50, 6]], offset 1
    CHECK(s.at<int32_t>(1, 0) == 50 && s.at<int32_t>(0, -1) == 3);
    e = EXPECT_ERROR(a.at<int32_t>(2, 0));
    CHECK(e.status() == BC_ERR_INVALID_ARG && std::string(e.what()) == "index 2 is out of bounds for dimension 0 with size 2");
    e = EXPECT_ERROR(a.at<int32_t>(0, -4));
    CHECK(std::string(e.what()) == "index -4 is out of bounds for dimension 1 with size 3");
    e = EXPECT_ERROR(a.at<int32_t>(std::size_t{0}, ~std::size_t{0})); // not -1 after a cast
    CHECK(std::string(e.what()) == "index 18446744073709551615 is out of bounds for dimension 1 with size 3");
    CHECK(a.at<int32_t>(std::size_t{1}, uint8_t{2}) == 6);
    e = EXPECT_ERROR(a.at<int32_t>(1));
    CHECK(e.status() == BC_ERR_INVALID_ARG &&
          std::string(e.what()) == "bc::Tensor::at: a tensor of 2 dimensions takes as many indices, not 1");
    e = EXPECT_ERROR(a.at<float>(0, 0));
    CHECK(e.status() == BC_ERR_DTYPE && std::string(e.what()) == "bc::Tensor::at: the tensor's elements are int32, not float32");
    CHECK(bc::Tensor::scalar(2.5).at<double>() == 2.5); // a 0-d tensor takes no index
    CHECK(EXPECT_ERROR(bc::Tensor::zeros(bc::DType::Float32, {0}).at<float>(0)).status() == BC_ERR_INVALID_ARG);

    // A tensor that must not be written gives only const access.
    bc::Tensor ex = bc::Tensor({1.0f, 2.0f}, {2}).expand({3, 2});
    e = EXPECT_ERROR(ex.data<float>());
    CHECK(e.status() == BC_ERR_READ_ONLY && e.kind() == BC_ERROR_KIND_READ_ONLY);
    CHECK(EXPECT_ERROR(ex.at<float>(0, 0)).status() == BC_ERR_READ_ONLY);
    CHECK(ex.at<const float>(2, 1) == 2.0f && ex.data<const float>()[1] == 2.0f);

    // bool elements are one byte, 0 or 1.
    bc::Tensor flags(std::vector<bool>{true, false}, {2});
    CHECK(flags.at<bool>(0) && !flags.at<bool>(1));
    flags.data<bool>()[1] = true;
    CHECK(flags.to_vector<bool>() == (std::vector<bool>{true, true}));
}

void iterating_over_elements() {
    bc::Tensor a({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
    float total = 0;
    for (float x : a.elements<const float>()) total += x;
    CHECK(total == 10.0f);
    for (float &x : a.elements<float>()) x *= 2;
    CHECK(a.to_vector<float>() == (std::vector<float>{2, 4, 6, 8}));
    bc::Elements<float> el = a.elements<float>();
    CHECK(el.size() == 4 && !el.empty() && el[3] == 8.0f && el.end() - el.begin() == 4);
    CHECK(std::accumulate(el.begin(), el.end(), 0.0f) == 20.0f);
    CHECK(el.tensor().data().address == a.data().address);
    // The range holds the memory: a temporary tensor's elements stay valid through the loop.
    std::vector<float> seen;
    for (float x : (a + 1.0f).elements<const float>()) seen.push_back(x);
    CHECK(seen == (std::vector<float>{3, 5, 7, 9}));
    // Checked: the type, and the layout (row-major only).
    bc::Error e = EXPECT_ERROR(a.elements<double>());
    CHECK(e.status() == BC_ERR_DTYPE);
    e = EXPECT_ERROR(a.transpose(0, 1).elements<const float>());
    CHECK(e.status() == BC_ERR_INVALID_ARG &&
          std::string(e.what()) ==
              "bc::Tensor::elements: the tensor is not contiguous; iterate over contiguous(), a row-major copy");
    seen.clear();
    for (float x : a.transpose(0, 1).contiguous().elements<const float>()) seen.push_back(x);
    CHECK(seen == (std::vector<float>{2, 6, 4, 8}));
    CHECK(bc::Tensor::zeros(bc::DType::Float32, {0, 3}).elements<const float>().empty());
    std::vector<int64_t> longs;
    for (int64_t v : bc::sum(bc::Tensor({1, 2, 3, 4}, {2, 2}), {0}).elements<const int64_t>()) longs.push_back(v);
    CHECK(longs == (std::vector<int64_t>{4, 6})); // sum of int32 is int64, as in PyTorch
}

// ---- DLPack ---------------------------------------------------------------------------------------

void dlpack_exports_and_imports() {
    int released = 0;
    float *memory = nullptr;
    {
        std::vector<float> values{1, 2, 3, 4, 5, 6};
        memory = values.data();
        bc::Tensor t = bc::Tensor::wrap(bc::DType::Float32, memory, 6 * sizeof(float), {2, 3}, {}, 0,
                                        CountedOwner(&released, std::move(values)));
        bc::DLPackTensor m = t.slice(1, 1, 3).to_dlpack(); // [[2, 3], [5, 6]]: strides (3, 1)
        CHECK(m != nullptr && m->version.major == 1 && (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) == 0);
        CHECK(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 2);
        CHECK(m->dl_tensor.strides[0] == 3 && m->dl_tensor.strides[1] == 1 && m->dl_tensor.byte_offset == 0);
        CHECK(m->dl_tensor.dtype.code == kDLFloat && m->dl_tensor.dtype.bits == 32 && m->dl_tensor.device.device_type == kDLCPU);
        CHECK(m->dl_tensor.data == memory + 1);
        t = bc::Tensor(); // the export keeps the memory
        CHECK(released == 0);
        // Imported back: a tensor over the same memory, which takes the export.
        bc::Tensor u = bc::Tensor::from_dlpack(std::move(m));
        CHECK(m == nullptr && u.shape() == (bc::Shape{2, 2}) && u.data().address == memory + 1);
        u += 10.0f;
        CHECK(memory[1] == 12.0f && memory[5] == 16.0f && memory[3] == 4.0f);
        CHECK(released == 0);
    }
    CHECK(released == 1); // the import freed with u, its deleter released the memory

    // A broadcast view is exported read-only, and the import refuses writes; the unversioned
    // struct, which cannot say read-only, refuses it.
    bc::Tensor e = bc::Tensor({1.0f, 2.0f}, {2}).expand({3, 2});
    bc::DLPackTensor ro = e.to_dlpack();
    CHECK((ro->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0 && ro->dl_tensor.strides[0] == 0);
    bc::Tensor imported = bc::Tensor::from_dlpack(std::move(ro));
    bc::Error err = EXPECT_ERROR(imported += 1.0f);
    CHECK(err.status() == BC_ERR_READ_ONLY && err.kind() == BC_ERROR_KIND_READ_ONLY);
    // Contiguous memory shared read-only: typed access is const only.
    bc::DLPackTensor flagged = bc::Tensor({1.0f, 2.0f}, {2}).to_dlpack();
    flagged->flags |= DLPACK_FLAG_BITMASK_READ_ONLY;
    bc::Tensor frozen = bc::Tensor::from_dlpack(std::move(flagged));
    CHECK(EXPECT_ERROR(frozen.elements<float>()).status() == BC_ERR_READ_ONLY);
    CHECK(EXPECT_ERROR(frozen.at<float>(0)).status() == BC_ERR_READ_ONLY);
    CHECK(frozen.elements<const float>().size() == 2 && frozen.at<const float>(1) == 2.0f);
    err = EXPECT_ERROR(e.to_dlpack_unversioned());
    CHECK(err.status() == BC_ERR_READ_ONLY && err.kind() == BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT);

    // The unversioned struct, both ways.
    bc::Tensor w({int64_t{7}, int64_t{8}}, {2});
    bc::DLPackTensorUnversioned old = w.to_dlpack_unversioned();
    CHECK(old->dl_tensor.dtype.code == kDLInt && old->dl_tensor.dtype.bits == 64 && old->dl_tensor.shape[0] == 2);
    bc::Tensor back = bc::Tensor::from_dlpack(std::move(old));
    CHECK(old == nullptr && back.to_vector<int64_t>() == (std::vector<int64_t>{7, 8}));

    // A refused import leaves the export with the caller, whose deleter still runs once.
    int kept = 0;
    {
        std::vector<float> values{1, 2};
        float *p = values.data();
        bc::DLPackTensor m = bc::Tensor::wrap(bc::DType::Float32, p, 2 * sizeof(float), {2}, {}, 0,
                                              CountedOwner(&kept, std::move(values)))
                                 .to_dlpack();
        m->version.major = 2; // a version this library does not take
        err = EXPECT_ERROR(bc::Tensor::from_dlpack(std::move(m)));
        CHECK(err.status() == BC_ERR_INVALID_ARG && m != nullptr && kept == 0);
    }
    CHECK(kept == 1);
    // A moved-from tensor is refused as elsewhere.
    bc::Tensor gone = std::move(back);
    CHECK(EXPECT_ERROR(back.to_dlpack()).status() == BC_ERR_NULL_ARG);
}

struct Test {
    const char *name;
    void (*run)();
};

} // namespace

// Unary operations, the further reductions and the three-operand operations: values against
// C++'s own arithmetic (float32 sqrt and division are correctly rounded, as the library's), the
// result types PyTorch gives, and errors as bc::Error.
static void math_operations() {
    bc::Tensor x(std::vector<float>{1, 4, 9, 2}, {2, 2});
    CHECK(bc::sqrt(x).to_vector<float>() == (std::vector<float>{1, 2, 3, std::sqrt(2.0f)}));
    CHECK(bc::abs(-x).to_vector<float>() == (std::vector<float>{1, 4, 9, 2}));
    bc::Tensor i(std::vector<int32_t>{1, 4}, {2});
    CHECK(bc::sqrt(i).dtype() == bc::DType::Float32 && bc::isnan(i).dtype() == bc::DType::Bool);
    bc::Tensor out = bc::Tensor::zeros(bc::DType::Float64, {2, 2});
    bc::reciprocal(x, out);
    CHECK(out.to_vector<double>() == (std::vector<double>{1.0, 1.0f / 4, 1.0f / 9, 0.5}));
    try {
        bc::sqrt_inplace(i);
        CHECK(false);
    } catch (const bc::Error &e) {
        CHECK(e.status() == BC_ERR_DTYPE);
        CHECK(std::string(e.what()) == "result type Float can't be cast to the desired output type Int");
    }
    // Population and sample deviations of columns {1, 9} and {4, 2}.
    CHECK(bc::std(x, 0, 0.0).to_vector<float>() == (std::vector<float>{4, 1}));
    CHECK(bc::var(x, 0).to_vector<float>() == (std::vector<float>{32, 2}));
    CHECK(bc::argmax(x).at<const int64_t>() == 2 && bc::argmin(x, 1).to_vector<int64_t>() == (std::vector<int64_t>{0, 1}));
    CHECK(bc::all(x).at<const bool>() && !bc::any(x - x).at<const bool>());
    CHECK(bc::clamp(x, 2, 5).to_vector<float>() == (std::vector<float>{2, 4, 5, 2}));
    bc::Tensor clamped = bc::Tensor::zeros(bc::DType::Float32, {2, 2});
    bc::clamp(x, 2, 5, clamped); // number bounds into an existing tensor (bc_clamp_scalar_out)
    CHECK(clamped.to_vector<float>() == (std::vector<float>{2, 4, 5, 2}));
    CHECK(bc::lerp(x, x * 3.0f, 0.5).to_vector<float>() == (std::vector<float>{2, 8, 18, 4}));
    CHECK(bc::addcmul(x, x, x, 2).to_vector<float>() == (std::vector<float>{3, 36, 171, 10}));
    bc::addcdiv_inplace(x, x, x);
    CHECK(x.to_vector<float>() == (std::vector<float>{2, 5, 10, 3}));
}

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
        {"copies_share_memory", copies_share_memory},
        {"moved_from_tensor_says_so", moved_from_tensor_says_so},
        {"operators_and_out", operators_and_out},
        {"numbers", numbers},
        {"planner", planner},
        {"views", views},
        {"wrapped_memory", wrapped_memory},
        {"handler_exception_is_rethrown_after_the_call", handler_exception_is_rethrown_after_the_call},
        {"reductions", reductions},
        {"sum_to_size_and_the_fused_form", sum_to_size_and_the_fused_form},
        {"settings_and_version", settings_and_version},
        {"more_operations_against_pytorch_rows", more_operations_against_pytorch_rows},
        {"where_against_pytorch_rows", where_against_pytorch_rows},
        {"expressions_match_separate_calls", expressions_match_separate_calls},
        {"expressions_with_unary_and_ternary_steps", expressions_with_unary_and_ternary_steps},
        {"printing_to_a_stream", printing_to_a_stream},
        {"comparison_and_remainder_operators", comparison_and_remainder_operators},
        {"where_with_numbers", where_with_numbers},
        {"typed_element_access", typed_element_access},
        {"iterating_over_elements", iterating_over_elements},
        {"dlpack_exports_and_imports", dlpack_exports_and_imports},
        {"math_operations", math_operations},
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
