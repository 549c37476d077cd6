/*
 * broadcast.hpp: the C++17 interface to libbroadcast, header-only, over the C API of broadcast.h.
 *
 * It adds C++ idioms and no rules of its own: every shape, type and overlap decision, and every
 * message, is the C library's (docs/semantics.md).
 *
 *  - bc::Tensor owns one handle, freed by its destructor. Copying it is cheap and shares the
 *    elements, as in libtorch (a new handle to a view of the same geometry); clone() is the deep
 *    copy; get(), release() and Tensor::adopt() reach the C handle. A moved-from Tensor holds no
 *    handle, and using it throws bc::Error saying so. A Tensor does not convert to bool
 *    (defined() says whether it holds a handle).
 *  - Every failure throws bc::Error (a std::runtime_error). For a failing C call, what() is the
 *    library's exact message and the status, the error kind and both shapes are read from the
 *    thread's last error record right after the call, before anything else can replace it. The
 *    few failures found before any C call (a moved-from tensor, strides and shape of different
 *    lengths, ...) carry the status and kind the C API uses for them.
 *  - a + b, a - b, a * b, a / b make new tensors (bc_add, ...); a += b ... write into a
 *    (bc_add_inplace, ...); bc::add(a, b, out) writes into out (bc_add_out). The other operations
 *    of the C API have the same three forms under their C names (bc::pow, bc::maximum, bc::eq,
 *    bc::bitwise_and, ...); % (and %=) is bc::remainder, Python's %; & | ^ << >> (and &= ...) are
 *    the bitwise ones; == != < <= > >= are bc::eq ... bc::ge, giving bool tensors.
 *    bc::where(cond, a, b) chooses elements, and bc::Expr evaluates a whole expression in one
 *    pass (bc_expr_eval), with the binary, unary and three-operand operations under the same
 *    names (bc::clamp(x * s, lo, hi)). Integer / gives float32, as in the C API. A number may be an operand
 *    (t + 2.5, 2 * t, t -= 1, t << 1, t > 0, bc::pow(t, 2), bc::where(c, t, 0)): it promotes as a
 *    Python number does in PyTorch (bc_binary_scalar); bc::Tensor::scalar(2.0f) is a 0-d tensor
 *    instead, which promotes as a tensor. std::ostream << t writes PyTorch's str(t).
 *  - Reading and writing elements: to_vector<T>() copies them out as T, which must be the
 *    element type (cast_to_vector<T>() converts); data<T>() is the first element's address,
 *    at<T>(i, j, ...) one element, and elements<T>() a range (begin/end) over a contiguous
 *    tensor, each for T the element type (bc::Error otherwise) and, unless T is const, a tensor
 *    that may be written.
 *  - DLPack without copies: t.to_dlpack() (and to_dlpack_unversioned()) gives a bc::DLPackTensor,
 *    a std::unique_ptr that runs the export's deleter; bc::Tensor::from_dlpack(std::move(m))
 *    takes one from another producer.
 *  - bc::plan_binary(op, a, b) (and _inplace, _out; a number for a or b: the number forms),
 *    bc::plan_where(cond, a, b) (and with out), bc::plan_reduce(op, t, dims), bc::plan_sum_to_size,
 *    bc::plan_binary_sum_to and bc::Expr::plan(inputs) (and with out) report what a call would do
 *    from bc::Geometry values (type, shape, strides), without tensors, or throw the bc::Error the
 *    call would throw.
 *  - bc::sum, bc::mean, bc::prod, bc::amax, bc::amin (and bc::reduce with a BC_REDUCE_* code)
 *    reduce over a list of dimensions or one (bc::sum(t, {0, 1}), bc::sum(t, 0));
 *    bc::sum_to_size undoes a broadcast, and bc::binary_sum_to(BC_OP_*, a, b, shape) sums a op b
 *    to shape without making a op b.
 *  - Warnings go to bc::set_warning_handler's function; an exception it throws is caught before
 *    it could cross the C library and rethrown from the bc:: call that emitted the warning.
 *
 * Link with the C library (pkg-config broadcast, or CMake broadcast::shared / broadcast::static).
 */
#ifndef LIBBROADCAST_HPP
#define LIBBROADCAST_HPP

#include "broadcast.h"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace bc {

/// Sizes, strides, offsets and dimension lists, in elements, as the C API takes them.
using Shape = std::vector<int64_t>;

/// The element types (BC_DTYPE_*).
enum class DType : int32_t {
    Bool = BC_DTYPE_BOOL,
    UInt8 = BC_DTYPE_UINT8,
    Int8 = BC_DTYPE_INT8,
    Int16 = BC_DTYPE_INT16,
    Int32 = BC_DTYPE_INT32,
    Int64 = BC_DTYPE_INT64,
    Float16 = BC_DTYPE_FLOAT16,
    BFloat16 = BC_DTYPE_BFLOAT16,
    Float32 = BC_DTYPE_FLOAT32,
    Float64 = BC_DTYPE_FLOAT64,
};

/// "float32", "int64", ... (bc_dtype_name).
inline const char *dtype_name(DType dtype) noexcept { return bc_dtype_name(static_cast<int32_t>(dtype)); }

/// Bytes per element (bc_dtype_size).
inline std::size_t dtype_size(DType dtype) noexcept { return bc_dtype_size(static_cast<int32_t>(dtype)); }

namespace detail {
template <class T> inline constexpr bool no_dtype = false;
} // namespace detail

/// The element type that holds C++ type T: bool, float, double, and the signed integers of 1, 2, 4
/// and 8 bytes and the unsigned one of 1 byte. float16 and bfloat16 have no C++17 type: pass their
/// DType and raw bits (Tensor::from_data).
template <class T> constexpr DType dtype_of() {
    if constexpr (std::is_same_v<T, bool>) {
        return DType::Bool;
    } else if constexpr (std::is_same_v<T, float>) {
        return DType::Float32;
    } else if constexpr (std::is_same_v<T, double>) {
        return DType::Float64;
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, char> && std::is_unsigned_v<T> &&
                         sizeof(T) == 1) {
        return DType::UInt8;
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, char> && std::is_signed_v<T> &&
                         sizeof(T) <= 8 && (sizeof(T) & (sizeof(T) - 1)) == 0) {
        return sizeof(T) == 1   ? DType::Int8
               : sizeof(T) == 2 ? DType::Int16
               : sizeof(T) == 4 ? DType::Int32
                                : DType::Int64;
    } else {
        static_assert(detail::no_dtype<T>, "no libbroadcast element type holds this C++ type");
        return DType::Bool;
    }
}

/// A failed call: the status, the error as data (bc_error_info), the shapes it involves, and the
/// library's message, exactly, as what(). Every failure of a bc:: call is one; those the wrapper
/// finds before calling the library (a moved-from tensor, a wrong element type for data<T>(), ...)
/// carry the status and kind the C API has for them, -1 in the other fields, no shapes, and the
/// wrapper's message, which names the bc:: function or says what the C API would.
class Error : public std::runtime_error {
  public:
    Error(int32_t status, const bc_error_info &info, Shape shape_a, Shape shape_b,
          const std::string &message)
        : std::runtime_error(message), status_(status), info_(info), shape_a_(std::move(shape_a)),
          shape_b_(std::move(shape_b)) {}

    /// The BC_ERR_* code the call returned.
    int32_t status() const noexcept { return status_; }
    /// The BC_ERROR_KIND_* code.
    int32_t kind() const noexcept { return info_.kind; }
    /// Dimension, conflicting sizes, types of a refused cast (-1 where they do not apply).
    const bc_error_info &info() const noexcept { return info_; }
    /// The operands' shapes, where the error involves them (else empty).
    const Shape &shape_a() const noexcept { return shape_a_; }
    const Shape &shape_b() const noexcept { return shape_b_; }

  private:
    int32_t status_;
    bc_error_info info_;
    Shape shape_a_, shape_b_;
};

namespace detail {

/// An exception a warning handler threw on this thread, waiting to be rethrown once the call that
/// emitted the warning has returned.
inline std::exception_ptr &pending_handler_exception() noexcept {
    static thread_local std::exception_ptr pending;
    return pending;
}

inline Shape last_error_shape(int32_t which) {
    int64_t dims[BC_MAX_NDIM];
    int64_t ndim = -1;
    if (bc_last_error_shape(which, dims, BC_MAX_NDIM, &ndim) != BC_OK || ndim < 0) return {};
    return Shape(dims, dims + ndim);
}

/// Throws the thread's last error. Only reads of the record happen before the throw (they do not
/// change it), so the error is the one of the call that just failed.
[[noreturn]] inline void throw_last_error(int32_t status) {
    pending_handler_exception() = nullptr; // failed calls emit no warnings
    bc_error_info info{};
    if (bc_last_error_info(&info) != BC_OK) info.status = status;
    std::string message(bc_last_error_message(nullptr, 0), '\0');
    bc_last_error_message(message.data(), message.size() + 1);
    Shape a = last_error_shape(0);
    Shape b = last_error_shape(1);
    throw Error(status, info, std::move(a), std::move(b), message);
}

/// Throws a bc::Error for a failure the wrapper finds before any C call (an argument the C API
/// cannot be given, such as a moved-from Tensor): `status` and `kind` are the library's codes for
/// that failure, the other fields of the info -1, no shapes. The thread's last error record is
/// left as it was.
[[noreturn]] inline void fail(int32_t status, int32_t kind, const std::string &message) {
    bc_error_info info{status, kind, -1, -1, -1, -1, -1, -1, -1, -1};
    throw Error(status, info, {}, {}, message);
}

/// After every C call: a failure throws bc::Error; after a success, an exception the warning
/// handler threw during the call goes on from here.
inline void check(int32_t status) {
    if (status != BC_OK) throw_last_error(status);
    if (std::exception_ptr &pending = pending_handler_exception()) {
        std::exception_ptr e = pending;
        pending = nullptr;
        std::rethrow_exception(e);
    }
}

/// A pointer for a (pointer, length) argument: NULL for an empty list, as the C API accepts.
inline const int64_t *data_or_null(const Shape &s) noexcept { return s.empty() ? nullptr : s.data(); }

/// Releases memory wrapped by Tensor::wrap: deletes the owner it was handed. Runs once, on the
/// thread that frees the last view.
template <class Owner> void release_owner(void *owner) noexcept { delete static_cast<Owner *>(owner); }

/// Deletes a DLPack export through its own deleter (none: nothing to do).
struct DLPackDeleter {
    void operator()(DLManagedTensorVersioned *m) const noexcept {
        if (m != nullptr && m->deleter != nullptr) m->deleter(m);
    }
    void operator()(DLManagedTensor *m) const noexcept {
        if (m != nullptr && m->deleter != nullptr) m->deleter(m);
    }
};
} // namespace detail

/// A DLPack 1.x tensor, owned: its deleter runs when this is destroyed, unless release() hands it
/// to a consumer first (a Python capsule, another library) or Tensor::from_dlpack takes it.
using DLPackTensor = std::unique_ptr<DLManagedTensorVersioned, detail::DLPackDeleter>;
/// The older, unversioned DLPack struct, owned as DLPackTensor.
using DLPackTensorUnversioned = std::unique_ptr<DLManagedTensor, detail::DLPackDeleter>;

class Tensor;
template <class T> class Elements;

namespace detail {
template <class Call> Tensor make(Call &&call);
bc_tensor *handle(const Tensor &t);
} // namespace detail

/// One libbroadcast tensor handle, owned; the destructor frees it (bc_tensor_free).
///
/// Copying is cheap and shares the elements, as copying a libtorch tensor does: the copy is a new
/// handle to a view of the same memory with the same shape, strides and offset (bc_tensor_expand
/// to the tensor's own sizes), so a write through either is seen by both (and, as for any views,
/// writing through one while another thread reads through another is a data race). clone() is
/// the deep copy. Moving transfers the handle.
///
/// A default-constructed, moved-from or released Tensor holds no handle (defined() is false);
/// using it in a call throws bc::Error (BC_ERR_NULL_ARG, BC_ERROR_KIND_NULL_ARG) whose message
/// says which of the three it is. A Tensor does not convert to bool: `if (a == b)` would test
/// the handle, not the elements (a == b is a bool tensor), so it does not compile.
class Tensor {
  public:
    Tensor() noexcept = default;
    Tensor(Tensor &&other) noexcept
        : handle_(std::exchange(other.handle_, nullptr)),
          emptied_(std::exchange(other.emptied_, Emptied::Moved)) {}
    Tensor &operator=(Tensor &&other) noexcept {
        if (this != &other) {
            reset();
            handle_ = std::exchange(other.handle_, nullptr);
            emptied_ = std::exchange(other.emptied_, Emptied::Moved);
        }
        return *this;
    }
    /// A new handle sharing `other`'s elements (a view of the same geometry); copying a Tensor
    /// that holds no handle gives one that holds none, in the same state.
    Tensor(const Tensor &other) : emptied_(other.emptied_) {
        if (other.handle_ != nullptr) handle_ = other.view_of_all().release();
    }
    Tensor &operator=(const Tensor &other) {
        if (this != &other) *this = Tensor(other);
        return *this;
    }
    ~Tensor() { reset(); }

    /// A copy of `data` (row-major) with `shape`; the element type follows T (dtype_of).
    template <class T> Tensor(const std::vector<T> &data, const Shape &shape) {
        if constexpr (std::is_same_v<T, bool>) {
            std::vector<unsigned char> bytes(data.begin(), data.end());
            *this = from_data(DType::Bool, bytes.data(), bytes.size(), shape);
        } else {
            *this = from_data(dtype_of<T>(), data.data(), data.size() * sizeof(T), shape);
        }
    }
    template <class T>
    Tensor(std::initializer_list<T> data, const Shape &shape) : Tensor(std::vector<T>(data), shape) {}
    /// A copy of the elements of `shape` at `data` (row-major).
    template <class T> Tensor(const T *data, const Shape &shape) {
        *this = from_data(dtype_of<T>(), data, count(shape) * sizeof(T), shape);
    }

    /// A copy of `nbytes` bytes of row-major elements of `dtype` (any type, float16 and bfloat16
    /// as raw bits) (bc_tensor_from_data).
    static Tensor from_data(DType dtype, const void *data, std::size_t nbytes, const Shape &shape) {
        return detail::make([&](bc_tensor **out) {
            return bc_tensor_from_data(static_cast<int32_t>(dtype), detail::data_or_null(shape),
                                       shape.size(), data, nbytes, out);
        });
    }
    /// Unspecified elements (bc_tensor_empty).
    static Tensor empty(DType dtype, const Shape &shape) { return filled(bc_tensor_empty, dtype, shape); }
    static Tensor zeros(DType dtype, const Shape &shape) { return filled(bc_tensor_zeros, dtype, shape); }
    static Tensor ones(DType dtype, const Shape &shape) { return filled(bc_tensor_ones, dtype, shape); }
    /// Every element `value`, converted as a C cast would (bc_tensor_full).
    static Tensor full(DType dtype, const Shape &shape, double value) {
        return detail::make([&](bc_tensor **out) {
            return bc_tensor_full(static_cast<int32_t>(dtype), detail::data_or_null(shape), shape.size(),
                                  value, out);
        });
    }
    /// A 0-d tensor holding `value`, of T's element type.
    template <class T> static Tensor scalar(T value) { return Tensor(&value, Shape{}); }

    /// A view of caller memory without a copy (bc_tensor_wrap): `strides` empty means row-major.
    /// The tensor takes `owner` (any movable object, say the container of the memory) and
    /// destroys it when the last view of the memory is freed, on that thread; if the call fails,
    /// `owner` is destroyed before the exception leaves.
    template <class Owner>
    static Tensor wrap(DType dtype, void *data, std::size_t nbytes, const Shape &shape,
                       const Shape &strides, int64_t offset, Owner owner) {
        if (!strides.empty() && strides.size() != shape.size()) {
            detail::fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
                         "bc::Tensor::wrap: strides and shape differ in length");
        }
        auto held = std::make_unique<Owner>(std::move(owner));
        bc_tensor *out = nullptr;
        int32_t status = bc_tensor_wrap(static_cast<int32_t>(dtype), data, nbytes,
                                        detail::data_or_null(shape), detail::data_or_null(strides),
                                        shape.size(), offset, &detail::release_owner<Owner>, held.get(),
                                        &out);
        Tensor t = adopt(out);
        if (status == BC_OK) held.release(); // the library owns it now
        detail::check(status);
        return t;
    }
    /// The elements of `data`, without a copy: the tensor keeps the vector until the last view
    /// of it is freed.
    template <class T> static Tensor wrap(std::vector<T> data, const Shape &shape) {
        static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no element array to wrap");
        void *elements = data.data();
        std::size_t nbytes = data.size() * sizeof(T);
        return wrap(dtype_of<T>(), elements, nbytes, shape, Shape{}, 0, std::move(data));
    }

    /// A tensor over the memory a DLPack 1.x producer shares, without a copy
    /// (bc_tensor_from_dlpack_versioned). On success the tensor takes the export (its deleter runs
    /// when the last tensor over the memory is freed) and `m` is left empty; on failure `m` keeps
    /// it. With DLPACK_FLAG_BITMASK_READ_ONLY set the tensor refuses writes (BC_ERR_READ_ONLY).
    static Tensor from_dlpack(DLPackTensor &&m) {
        bc_tensor *out = nullptr;
        int32_t status = bc_tensor_from_dlpack_versioned(m.get(), &out);
        if (status == BC_OK) (void)m.release(); // the library owns it now
        Tensor t = adopt(out);
        detail::check(status);
        return t;
    }
    /// As from_dlpack, for the older unversioned struct (bc_tensor_from_dlpack): always writable.
    static Tensor from_dlpack(DLPackTensorUnversioned &&m) {
        bc_tensor *out = nullptr;
        int32_t status = bc_tensor_from_dlpack(m.get(), &out);
        if (status == BC_OK) (void)m.release();
        Tensor t = adopt(out);
        detail::check(status);
        return t;
    }
    /// Shares the elements through DLPack 1.x without a copy (bc_tensor_to_dlpack_versioned): the
    /// export keeps the memory alive until its deleter runs, even after this tensor is freed. Its
    /// flags have DLPACK_FLAG_BITMASK_READ_ONLY when the tensor must not be written (a broadcast
    /// view, memory shared read-only).
    DLPackTensor to_dlpack() const {
        DLManagedTensorVersioned *out = nullptr;
        int32_t status = bc_tensor_to_dlpack_versioned(h(), &out);
        DLPackTensor owned(out);
        detail::check(status);
        return owned;
    }
    /// As to_dlpack, through the older unversioned struct (bc_tensor_to_dlpack), which cannot say
    /// read-only: a tensor that must not be written is refused (BC_ERR_READ_ONLY).
    DLPackTensorUnversioned to_dlpack_unversioned() const {
        DLManagedTensor *out = nullptr;
        int32_t status = bc_tensor_to_dlpack(h(), &out);
        DLPackTensorUnversioned owned(out);
        detail::check(status);
        return owned;
    }

    /// Takes ownership of a handle from the C API (NULL gives an empty Tensor).
    static Tensor adopt(bc_tensor *handle) noexcept {
        Tensor t;
        t.handle_ = handle;
        return t;
    }
    /// The C handle, still owned by this Tensor (NULL when it holds none).
    bc_tensor *get() const noexcept { return handle_; }
    /// Gives up the handle: the caller frees it with bc_tensor_free.
    bc_tensor *release() noexcept {
        if (handle_ != nullptr) emptied_ = Emptied::Released;
        return std::exchange(handle_, nullptr);
    }
    /// Whether this Tensor holds a handle.
    bool defined() const noexcept { return handle_ != nullptr; }
    /// No conversion to bool: `if (t)` and `if (a == b)` do not compile. Use defined() for
    /// whether a handle is held, and the elements (bc::eq(a, b).to_vector<bool>(), ...) for
    /// comparisons.
    explicit operator bool() const = delete;

    /// A deep copy in new row-major storage (bc_tensor_clone).
    Tensor clone() const { return unary(bc_tensor_clone); }
    /// A row-major copy (bc_tensor_contiguous).
    Tensor contiguous() const { return unary(bc_tensor_contiguous); }
    /// A row-major copy converted to `dtype` with C casts (bc_tensor_to_dtype).
    Tensor to(DType dtype) const {
        return detail::make(
            [&](bc_tensor **out) { return bc_tensor_to_dtype(h(), static_cast<int32_t>(dtype), out); });
    }

    DType dtype() const { return static_cast<DType>(query<int32_t>(bc_tensor_dtype)); }
    std::size_t ndim() const { return query<std::size_t>(bc_tensor_ndim); }
    int64_t numel() const { return query<int64_t>(bc_tensor_numel); }
    int64_t offset() const { return query<int64_t>(bc_tensor_offset); }
    bool is_contiguous() const { return query<bool>(bc_tensor_is_contiguous); }
    Shape shape() const { return sizes(bc_tensor_shape); }
    /// Strides in elements; broadcast dimensions have stride 0.
    Shape strides() const { return sizes(bc_tensor_strides); }

    /// The elements in row-major order as T, which must be the tensor's element type
    /// (dtype_of<T>()): another T throws bc::Error (BC_ERR_DTYPE) instead of converting.
    template <class T> std::vector<T> to_vector() const {
        check_dtype<T>("to_vector");
        std::size_t n = static_cast<std::size_t>(numel());
        if constexpr (std::is_same_v<T, bool>) {
            std::vector<unsigned char> bytes(n);
            copy_to(bytes.data(), bytes.size());
            return std::vector<bool>(bytes.begin(), bytes.end());
        } else {
            std::vector<T> values(n);
            copy_to(values.data(), n * sizeof(T));
            return values;
        }
    }
    /// The elements in row-major order converted to T with C casts, as to() converts
    /// (bc_tensor_to_dtype), whatever the tensor's element type: float16 and bfloat16 read as
    /// float, say.
    template <class T> std::vector<T> cast_to_vector() const {
        if (dtype() == dtype_of<T>()) return to_vector<T>();
        return to(dtype_of<T>()).template to_vector<T>();
    }
    /// PyTorch's str(tensor) (bc_tensor_format).
    std::string to_string() const {
        std::size_t length = 0;
        detail::check(bc_tensor_format(h(), nullptr, 0, &length));
        std::string text(length, '\0');
        detail::check(bc_tensor_format(h(), text.data(), length + 1, &length));
        return text;
    }
    /// Where the elements are (bc_tensor_data): the first element's address, the bytes of memory
    /// from there, and whether writing through it is allowed. Valid while any tensor sharing the
    /// memory lives.
    struct Data {
        void *address;
        std::size_t nbytes;
        bool writable;
    };
    Data data() const {
        Data d{nullptr, 0, false};
        detail::check(bc_tensor_data(h(), &d.address, &d.nbytes, &d.writable));
        return d;
    }
    /// The first element's address (see data()) as T *. T must be the tensor's element type
    /// (dtype_of<T>(), const or not; else bc::Error, BC_ERR_DTYPE). A non-const T also needs a
    /// tensor that may be written (Data::writable; else bc::Error, BC_ERR_READ_ONLY): read a
    /// broadcast view, or memory shared read-only, through data<const T>(). Element (i, j, ...) is
    /// at index i * strides()[0] + j * strides()[1] + ... from it. Valid while any tensor sharing
    /// the memory lives.
    template <class T> T *data() const { return static_cast<T *>(typed_data<T>("data").address); }
    /// Element (i, j, ...) as T &, one index per dimension; a negative index counts from the end,
    /// as in Python. T as for data<T>(). Another number of indices than ndim(), or an index out
    /// of range, throws bc::Error (BC_ERR_INVALID_ARG; PyTorch's IndexError text, `index 3 is out
    /// of bounds for dimension 0 with size 3`). Each call asks the library for the geometry: in
    /// loops, prefer data<T>() with strides(), or elements<T>().
    template <class T, class... I> T &at(I... index) const {
        static_assert((std::is_integral_v<I> && ...), "bc::Tensor::at takes integer indices");
        Data d = typed_data<T>("at");
        const int64_t indices[sizeof...(I) + 1] = {static_cast<int64_t>(index)..., 0};
        const bool wrapped[sizeof...(I) + 1] = {(std::is_unsigned_v<I> && index_too_large(index))...,
                                                false};
        Shape sizes = shape(), steps = strides();
        if (sizes.size() != sizeof...(I)) {
            detail::fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
                         "bc::Tensor::at: a tensor of " + std::to_string(sizes.size()) +
                             " dimensions takes as many indices, not " + std::to_string(sizeof...(I)));
        }
        int64_t element = 0;
        for (std::size_t dim = 0; dim < sizes.size(); dim++) {
            int64_t i = indices[dim], size = sizes[dim];
            if (wrapped[dim] || i < -size || i >= size) {
                detail::fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
                             "index " +
                                 (wrapped[dim] ? std::to_string(static_cast<uint64_t>(i)) : std::to_string(i)) +
                                 " is out of bounds for dimension " +
                                 std::to_string(dim) + " with size " + std::to_string(size));
            }
            element += (i < 0 ? i + size : i) * steps[dim];
        }
        return static_cast<T *>(d.address)[element];
    }
    /// The elements of a contiguous tensor as a range of T (begin(), end(), size(), [i]) in
    /// row-major order: `for (float x : t.elements<const float>())`. T as for data<T>(); a tensor
    /// that is not contiguous throws bc::Error (BC_ERR_INVALID_ARG): iterate over contiguous(),
    /// a row-major copy, instead. The range holds a copy of the tensor (sharing the memory), so
    /// it stays valid however long the tensor it came from lives.
    template <class T> Elements<T> elements() const;

    /// Copies the elements, row-major, into `nbytes` bytes at `buffer` (bc_tensor_copy_to).
    void copy_to(void *buffer, std::size_t nbytes) const {
        detail::check(bc_tensor_copy_to(h(), buffer, nbytes));
    }

    // Views: no element is copied (docs/semantics.md, section 7).
    Tensor expand(const Shape &sizes) const { return with_shape(bc_tensor_expand, sizes); }
    Tensor broadcast_to(const Shape &shape) const { return with_shape(bc_tensor_broadcast_to, shape); }
    Tensor expand_as(const Tensor &other) const {
        return detail::make(
            [&](bc_tensor **out) { return bc_tensor_expand_as(h(), other.h(), out); });
    }
    Tensor permute(const Shape &dims) const { return with_shape(bc_tensor_permute, dims); }
    Tensor transpose(int64_t dim0, int64_t dim1) const {
        return detail::make([&](bc_tensor **out) { return bc_tensor_transpose(h(), dim0, dim1, out); });
    }
    /// t[..., start:stop:step, ...] along `dim`, with Python's rules.
    Tensor slice(int64_t dim, int64_t start, int64_t stop, int64_t step = 1) const {
        return detail::make(
            [&](bc_tensor **out) { return bc_tensor_slice(h(), dim, start, stop, step, out); });
    }
    /// `sizes` (one may be -1) over the same elements, as a view or PyTorch's error (bc_tensor_view).
    Tensor view(const Shape &sizes) const { return with_shape(bc_tensor_view, sizes); }
    /// As view() when the strides allow it, else a row-major copy; `*copied` (when given) says
    /// which (bc_tensor_reshape).
    Tensor reshape(const Shape &sizes, bool *copied = nullptr) const {
        return detail::make([&](bc_tensor **out) {
            return bc_tensor_reshape(h(), detail::data_or_null(sizes), sizes.size(), copied, out);
        });
    }
    Tensor unsqueeze(int64_t dim) const {
        return detail::make([&](bc_tensor **out) { return bc_tensor_unsqueeze(h(), dim, out); });
    }
    Tensor squeeze(int64_t dim) const {
        return detail::make([&](bc_tensor **out) { return bc_tensor_squeeze(h(), dim, out); });
    }
    /// Every size-1 dimension removed (bc_tensor_squeeze_all).
    Tensor squeeze() const { return unary(bc_tensor_squeeze_all); }
    /// Dimensions `start` to `end` merged into one (bc_tensor_flatten).
    Tensor flatten(int64_t start = 0, int64_t end = -1, bool *copied = nullptr) const {
        return detail::make(
            [&](bc_tensor **out) { return bc_tensor_flatten(h(), start, end, copied, out); });
    }
    Tensor as_strided(const Shape &shape, const Shape &strides, int64_t offset) const {
        if (strides.size() != shape.size()) {
            detail::fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
                         "bc::Tensor::as_strided: strides and shape differ in length");
        }
        return detail::make([&](bc_tensor **out) {
            return bc_tensor_as_strided(h(), detail::data_or_null(shape), detail::data_or_null(strides),
                                        shape.size(), offset, out);
        });
    }

  private:
    friend bc_tensor *detail::handle(const Tensor &t);

    /// Why a Tensor holds no handle.
    enum class Emptied : unsigned char { Never, Moved, Released };

    void reset() noexcept {
        if (handle_ != nullptr) bc_tensor_free(std::exchange(handle_, nullptr));
    }
    /// This tensor's handle for a C call; throws bc::Error when it holds none.
    bc_tensor *h() const {
        if (handle_ == nullptr) {
            const char *why = emptied_ == Emptied::Moved      ? "it was moved from"
                              : emptied_ == Emptied::Released ? "its handle was given up with release()"
                                                              : "it was default-constructed or adopted NULL";
            detail::fail(BC_ERR_NULL_ARG, BC_ERROR_KIND_NULL_ARG,
                         std::string("bc::Tensor used while it holds no tensor: ") + why);
        }
        return handle_;
    }
    /// Whether an index of an unsigned type is too large for int64_t (it would wrap to negative).
    template <class I> static bool index_too_large(I index) noexcept {
        return static_cast<uint64_t>(index) > static_cast<uint64_t>(INT64_MAX);
    }
    /// Throws bc::Error (BC_ERR_DTYPE) unless T is the element type; `what` names the caller.
    template <class T> void check_dtype(const char *what) const {
        DType want = dtype_of<std::remove_const_t<T>>(), have = dtype();
        if (have != want) {
            detail::fail(BC_ERR_DTYPE, BC_ERROR_KIND_INVALID_ARGUMENT,
                         std::string("bc::Tensor::") + what + ": the tensor's elements are " +
                             dtype_name(have) + ", not " + dtype_name(want));
        }
    }
    /// data(), after checking T (the element type, const for a tensor that may not be written).
    template <class T> Data typed_data(const char *what) const {
        static_assert(!std::is_same_v<std::remove_const_t<T>, bool> || sizeof(bool) == 1,
                      "bool elements are one byte");
        check_dtype<T>(what);
        Data d = data();
        if (!std::is_const_v<T> && !d.writable) {
            detail::fail(BC_ERR_READ_ONLY, BC_ERROR_KIND_READ_ONLY,
                         std::string("bc::Tensor::") + what +
                             ": the tensor must not be written (a broadcast view, or memory shared "
                             "read-only); read it through a const element type");
        }
        return d;
    }
    /// A new handle to a view of all of this tensor: every size kept (-1), so the strides and
    /// offset are this tensor's.
    Tensor view_of_all() const {
        Shape keep(ndim(), -1);
        return with_shape(bc_tensor_expand, keep);
    }
    /// The number of elements of `shape`, for the byte count of a copy. Negative sizes count as 0
    /// and a product that overflows saturates: the C API then refuses the shape itself.
    static std::size_t count(const Shape &shape) noexcept {
        std::size_t n = 1;
        for (int64_t d : shape) {
            std::size_t size = d < 0 ? 0 : static_cast<std::size_t>(d);
            n = (size != 0 && n > SIZE_MAX / size) ? SIZE_MAX : n * size;
        }
        return n;
    }
    using FillFn = int32_t (*)(int32_t, const int64_t *, std::size_t, bc_tensor **);
    static Tensor filled(FillFn fill, DType dtype, const Shape &shape) {
        return detail::make([&](bc_tensor **out) {
            return fill(static_cast<int32_t>(dtype), detail::data_or_null(shape), shape.size(), out);
        });
    }
    using UnaryFn = int32_t (*)(const bc_tensor *, bc_tensor **);
    Tensor unary(UnaryFn fn) const {
        return detail::make([&](bc_tensor **out) { return fn(h(), out); });
    }
    using ShapeFn = int32_t (*)(const bc_tensor *, const int64_t *, std::size_t, bc_tensor **);
    Tensor with_shape(ShapeFn fn, const Shape &shape) const {
        return detail::make(
            [&](bc_tensor **out) { return fn(h(), detail::data_or_null(shape), shape.size(), out); });
    }
    template <class T> T query(int32_t (*fn)(const bc_tensor *, T *)) const {
        T value{};
        detail::check(fn(h(), &value));
        return value;
    }
    Shape sizes(int32_t (*fn)(const bc_tensor *, int64_t *, std::size_t)) const {
        Shape s(ndim());
        detail::check(fn(h(), s.empty() ? nullptr : s.data(), s.size()));
        return s;
    }

    bc_tensor *handle_ = nullptr;
    Emptied emptied_ = Emptied::Never;
};

namespace detail {
/// `t`'s handle for a C call; throws bc::Error when it holds none (moved from, ...).
inline bc_tensor *handle(const Tensor &t) { return t.h(); }
} // namespace detail

/// Writes PyTorch's str(tensor), as to_string() (bc_tensor_format).
inline std::ostream &operator<<(std::ostream &os, const Tensor &t) { return os << t.to_string(); }

/// The elements of a contiguous tensor as a range of T, from Tensor::elements<T>(). It holds a
/// tensor sharing the memory, which keeps the elements alive.
template <class T> class Elements {
  public:
    T *begin() const noexcept { return begin_; }
    T *end() const noexcept { return begin_ + size_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T &operator[](std::size_t i) const noexcept { return begin_[i]; }
    /// The tensor the range holds (a view sharing the elements).
    const Tensor &tensor() const noexcept { return tensor_; }

  private:
    friend class Tensor;
    Elements(Tensor tensor, T *begin, std::size_t size) noexcept
        : tensor_(std::move(tensor)), begin_(begin), size_(size) {}
    Tensor tensor_;
    T *begin_;
    std::size_t size_;
};

template <class T> Elements<T> Tensor::elements() const {
    Data d = typed_data<T>("elements");
    if (!is_contiguous()) {
        detail::fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
                     "bc::Tensor::elements: the tensor is not contiguous; iterate over contiguous(), a "
                     "row-major copy");
    }
    std::size_t n = static_cast<std::size_t>(numel());
    return Elements<T>(*this, n == 0 ? nullptr : static_cast<T *>(d.address), n);
}

namespace detail {

/// Runs a C call that creates a tensor into `*out`. The result is owned before anything can
/// throw, so an exception from a warning handler frees it.
template <class Call> Tensor make(Call &&call) {
    bc_tensor *out = nullptr;
    int32_t status = call(&out);
    Tensor result = Tensor::adopt(out); // NULL on failure
    check(status);
    return result;
}

using BinaryFn = int32_t (*)(const bc_tensor *, const bc_tensor *, bc_tensor **);
using InplaceFn = int32_t (*)(bc_tensor *, const bc_tensor *);
using OutFn = int32_t (*)(const bc_tensor *, const bc_tensor *, bc_tensor *);

inline Tensor binary(BinaryFn fn, const Tensor &a, const Tensor &b) {
    return make([&](bc_tensor **out) { return fn(detail::handle(a), detail::handle(b), out); });
}
inline void binary_inplace(InplaceFn fn, Tensor &self, const Tensor &other) {
    check(fn(detail::handle(self), detail::handle(other)));
}
inline void binary_out(OutFn fn, const Tensor &a, const Tensor &b, Tensor &out) {
    check(fn(detail::handle(a), detail::handle(b), detail::handle(out)));
}

} // namespace detail

/* The operations of the C API, X(name, BC_OP_* code): a new one is one line here (the tensor forms
 * and the expression form come from it). */
#define BC_HPP_OPERATIONS(X)                                                                       \
    X(add, BC_OP_ADD)                                                                              \
    X(sub, BC_OP_SUB)                                                                              \
    X(mul, BC_OP_MUL)                                                                              \
    X(div, BC_OP_DIV)                                                                              \
    X(eq, BC_OP_EQ)                                                                                \
    X(ne, BC_OP_NE)                                                                                \
    X(lt, BC_OP_LT)                                                                                \
    X(le, BC_OP_LE)                                                                                \
    X(gt, BC_OP_GT)                                                                                \
    X(ge, BC_OP_GE)                                                                                \
    X(maximum, BC_OP_MAXIMUM)                                                                      \
    X(minimum, BC_OP_MINIMUM)                                                                      \
    X(pow, BC_OP_POW)                                                                              \
    X(remainder, BC_OP_REMAINDER)                                                                  \
    X(fmod, BC_OP_FMOD)                                                                            \
    X(floor_divide, BC_OP_FLOOR_DIVIDE)                                                            \
    X(logical_and, BC_OP_LOGICAL_AND)                                                              \
    X(logical_or, BC_OP_LOGICAL_OR)                                                                \
    X(logical_xor, BC_OP_LOGICAL_XOR)                                                              \
    X(bitwise_and, BC_OP_BITWISE_AND)                                                              \
    X(bitwise_or, BC_OP_BITWISE_OR)                                                                \
    X(bitwise_xor, BC_OP_BITWISE_XOR)                                                              \
    X(bitwise_left_shift, BC_OP_BITWISE_LEFT_SHIFT)                                                \
    X(bitwise_right_shift, BC_OP_BITWISE_RIGHT_SHIFT)                                              \
    X(atan2, BC_OP_ATAN2)                                                                          \
    X(hypot, BC_OP_HYPOT)

/* The operations that take a number operand (in at least one order), as in PyTorch. */
#define BC_HPP_NUMBER_OPERATIONS(X)                                                                \
    X(add, BC_OP_ADD)                                                                              \
    X(sub, BC_OP_SUB)                                                                              \
    X(mul, BC_OP_MUL)                                                                              \
    X(div, BC_OP_DIV)                                                                              \
    X(eq, BC_OP_EQ)                                                                                \
    X(ne, BC_OP_NE)                                                                                \
    X(lt, BC_OP_LT)                                                                                \
    X(le, BC_OP_LE)                                                                                \
    X(gt, BC_OP_GT)                                                                                \
    X(ge, BC_OP_GE)                                                                                \
    X(pow, BC_OP_POW)                                                                              \
    X(remainder, BC_OP_REMAINDER)                                                                  \
    X(fmod, BC_OP_FMOD)                                                                            \
    X(floor_divide, BC_OP_FLOOR_DIVIDE)                                                            \
    X(bitwise_and, BC_OP_BITWISE_AND)                                                              \
    X(bitwise_or, BC_OP_BITWISE_OR)                                                                \
    X(bitwise_xor, BC_OP_BITWISE_XOR)                                                              \
    X(bitwise_left_shift, BC_OP_BITWISE_LEFT_SHIFT)                                                \
    X(bitwise_right_shift, BC_OP_BITWISE_RIGHT_SHIFT)

/*
 * Elementwise operations, one line each in BC_HPP_OPERATIONS. BC_HPP_BINARY(name, code) gives
 *   bc::name(a, b)            a new tensor                  (bc_name)
 *   bc::name(a, b, out)       into an existing tensor       (bc_name_out)
 *   bc::name_inplace(x, y)    into x                        (bc_name_inplace)
 * and BC_HPP_OPERATOR(op, name) the operators `a op b` and `x op= y`, BC_HPP_COMPARISON(op, name)
 * the operator `a op b`.
 */
#define BC_HPP_BINARY(name, code)                                                                      \
    inline Tensor name(const Tensor &a, const Tensor &b) { return detail::binary(bc_##name, a, b); }  \
    inline void name(const Tensor &a, const Tensor &b, Tensor &out) {                                  \
        detail::binary_out(bc_##name##_out, a, b, out);                                                \
    }                                                                                                  \
    inline void name##_inplace(Tensor &self, const Tensor &other) {                                    \
        detail::binary_inplace(bc_##name##_inplace, self, other);                                      \
    }
#define BC_HPP_OPERATOR(op, name)                                                                      \
    inline Tensor operator op(const Tensor &a, const Tensor &b) { return name(a, b); }                 \
    inline Tensor &operator op##=(Tensor &self, const Tensor &other) {                                 \
        name##_inplace(self, other);                                                                   \
        return self;                                                                                   \
    }
#define BC_HPP_COMPARISON(op, name)                                                                    \
    inline Tensor operator op(const Tensor &a, const Tensor &b) { return name(a, b); }

BC_HPP_OPERATIONS(BC_HPP_BINARY)

/* The unary operations of the C API, X(name, BC_UNARY_* code) (bc_name), and those with an
 * in-place form, X(name): generated from the operation table (scripts/gen_ops.py). */
#define BC_HPP_UNARY_OPERATIONS(X)                                                                 \
    X(abs, BC_UNARY_ABS)                                                                           \
    X(neg, BC_UNARY_NEG)                                                                           \
    X(sign, BC_UNARY_SIGN)                                                                         \
    X(reciprocal, BC_UNARY_RECIPROCAL)                                                             \
    X(sqrt, BC_UNARY_SQRT)                                                                         \
    X(rsqrt, BC_UNARY_RSQRT)                                                                       \
    X(square, BC_UNARY_SQUARE)                                                                     \
    X(exp, BC_UNARY_EXP)                                                                           \
    X(exp2, BC_UNARY_EXP2)                                                                         \
    X(expm1, BC_UNARY_EXPM1)                                                                       \
    X(log, BC_UNARY_LOG)                                                                           \
    X(log2, BC_UNARY_LOG2)                                                                         \
    X(log10, BC_UNARY_LOG10)                                                                       \
    X(log1p, BC_UNARY_LOG1P)                                                                       \
    X(sin, BC_UNARY_SIN)                                                                           \
    X(cos, BC_UNARY_COS)                                                                           \
    X(tan, BC_UNARY_TAN)                                                                           \
    X(asin, BC_UNARY_ASIN)                                                                         \
    X(acos, BC_UNARY_ACOS)                                                                         \
    X(atan, BC_UNARY_ATAN)                                                                         \
    X(sinh, BC_UNARY_SINH)                                                                         \
    X(cosh, BC_UNARY_COSH)                                                                         \
    X(tanh, BC_UNARY_TANH)                                                                         \
    X(asinh, BC_UNARY_ASINH)                                                                       \
    X(acosh, BC_UNARY_ACOSH)                                                                       \
    X(atanh, BC_UNARY_ATANH)                                                                       \
    X(sigmoid, BC_UNARY_SIGMOID)                                                                   \
    X(erf, BC_UNARY_ERF)                                                                           \
    X(erfc, BC_UNARY_ERFC)                                                                         \
    X(floor, BC_UNARY_FLOOR)                                                                       \
    X(ceil, BC_UNARY_CEIL)                                                                         \
    X(round, BC_UNARY_ROUND)                                                                       \
    X(trunc, BC_UNARY_TRUNC)                                                                       \
    X(frac, BC_UNARY_FRAC)                                                                         \
    X(isnan, BC_UNARY_ISNAN)                                                                       \
    X(isinf, BC_UNARY_ISINF)                                                                       \
    X(isfinite, BC_UNARY_ISFINITE)                                                                 \
    X(signbit, BC_UNARY_SIGNBIT)                                                                   \
    X(logical_not, BC_UNARY_LOGICAL_NOT)                                                           \
    X(bitwise_not, BC_UNARY_BITWISE_NOT)

#define BC_HPP_UNARY_INPLACE(X)                                                                    \
    X(abs)                                                                                         \
    X(neg)                                                                                         \
    X(sign)                                                                                        \
    X(reciprocal)                                                                                  \
    X(sqrt)                                                                                        \
    X(rsqrt)                                                                                       \
    X(square)                                                                                      \
    X(exp)                                                                                         \
    X(exp2)                                                                                        \
    X(expm1)                                                                                       \
    X(log)                                                                                         \
    X(log2)                                                                                        \
    X(log10)                                                                                       \
    X(log1p)                                                                                       \
    X(sin)                                                                                         \
    X(cos)                                                                                         \
    X(tan)                                                                                         \
    X(asin)                                                                                        \
    X(acos)                                                                                        \
    X(atan)                                                                                        \
    X(sinh)                                                                                        \
    X(cosh)                                                                                        \
    X(tanh)                                                                                        \
    X(asinh)                                                                                       \
    X(acosh)                                                                                       \
    X(atanh)                                                                                       \
    X(sigmoid)                                                                                     \
    X(erf)                                                                                         \
    X(erfc)                                                                                        \
    X(floor)                                                                                       \
    X(ceil)                                                                                        \
    X(round)                                                                                       \
    X(trunc)                                                                                       \
    X(frac)                                                                                        \
    X(logical_not)                                                                                 \
    X(bitwise_not)

/*
 * Unary operations (PyTorch's torch.name(x)): bc::name(x) a new tensor (bc_name), bc::name(x, out)
 * into out (bc_name_out), bc::name_inplace(x) in place (bc_name_inplace). Floating functions give
 * float32 for integer and bool inputs; the predicates give bool.
 */
#define BC_HPP_UNARY(name, code)                                                                       \
    inline Tensor name(const Tensor &x) {                                                              \
        return detail::make([&](bc_tensor **out) { return bc_##name(detail::handle(x), out); });       \
    }                                                                                                  \
    inline void name(const Tensor &x, Tensor &out) {                                                   \
        detail::check(bc_##name##_out(detail::handle(x), detail::handle(out)));                        \
    }
#define BC_HPP_UNARY_IN(name)                                                                          \
    inline void name##_inplace(Tensor &x) { detail::check(bc_##name##_inplace(detail::handle(x))); }
BC_HPP_UNARY_OPERATIONS(BC_HPP_UNARY)
BC_HPP_UNARY_INPLACE(BC_HPP_UNARY_IN)
#undef BC_HPP_UNARY
#undef BC_HPP_UNARY_IN
#undef BC_HPP_UNARY_INPLACE
/// -x (bc::neg).
inline Tensor operator-(const Tensor &x) { return neg(x); }

// The operators of PyTorch's (and libtorch's) tensors. All are elementwise: bitwise operators and
// shifts too, % is Python's (bc::remainder: the divisor's sign, not C++'s truncation), and a
// comparison gives a bool tensor (a Tensor does not convert to bool, so `if (a == b)` does not
// compile).
BC_HPP_OPERATOR(&, bitwise_and)
BC_HPP_OPERATOR(|, bitwise_or)
BC_HPP_OPERATOR(^, bitwise_xor)
BC_HPP_OPERATOR(<<, bitwise_left_shift)
BC_HPP_OPERATOR(>>, bitwise_right_shift)
BC_HPP_OPERATOR(+, add)
BC_HPP_OPERATOR(-, sub)
BC_HPP_OPERATOR(*, mul)
BC_HPP_OPERATOR(/, div)
BC_HPP_OPERATOR(%, remainder)
BC_HPP_COMPARISON(==, eq)
BC_HPP_COMPARISON(!=, ne)
BC_HPP_COMPARISON(<, lt)
BC_HPP_COMPARISON(<=, le)
BC_HPP_COMPARISON(>, gt)
BC_HPP_COMPARISON(>=, ge)

namespace detail {

/// A C++ number as the C API's bc_scalar: a bool, an integer (as int64_t; an unsigned value above
/// INT64_MAX wraps) or a floating number (as double).
template <class N> bc_scalar number(N value) noexcept {
    if constexpr (std::is_same_v<N, bool>) {
        return bc_scalar_bool(value);
    } else if constexpr (std::is_integral_v<N>) {
        return bc_scalar_int(static_cast<int64_t>(value));
    } else {
        return bc_scalar_float(static_cast<double>(value));
    }
}
template <class N> using if_number = std::enable_if_t<std::is_arithmetic_v<N>, int>;

} // namespace detail

/*
 * With a number for an operand, promoted as PyTorch promotes a Python number (by category only:
 * an int32 tensor + 2.5 is float32, a uint8 tensor + 300 stays uint8). BC_HPP_NUMBER(name, code)
 * gives
 *   bc::name(t, n), bc::name(n, t)   new tensors                  (bc_binary_scalar, _rscalar)
 *   bc::name_inplace(t, n)           into t                       (bc_binary_scalar_inplace)
 * and BC_HPP_NUMBER_OPERATOR(op, name) the operators `t op n`, `n op t` and `t op= n`
 * (BC_HPP_NUMBER_COMPARISON(op, name): `t op n` and `n op t`). `n op t`
 * is what PyTorch computes for Python's `n op t` (bc::lt(2, t) is t > 2; bc::pow(2, t) is
 * torch.pow(2, t)). The operations in BC_HPP_NUMBER_OPERATIONS have these forms; the others
 * (maximum, minimum, atan2, hypot, the logical operations) take no number in PyTorch.
 */
#define BC_HPP_NUMBER(name, code)                                                                      \
    template <class N, detail::if_number<N> = 0> Tensor name(const Tensor &t, N n) {                   \
        return detail::make([&](bc_tensor **out) {                                                     \
            return bc_binary_scalar(code, detail::handle(t), detail::number(n), out);                  \
        });                                                                                            \
    }                                                                                                  \
    template <class N, detail::if_number<N> = 0> Tensor name(N n, const Tensor &t) {                   \
        return detail::make([&](bc_tensor **out) {                                                     \
            return bc_binary_rscalar(code, detail::number(n), detail::handle(t), out);                 \
        });                                                                                            \
    }                                                                                                  \
    template <class N, detail::if_number<N> = 0> void name##_inplace(Tensor &t, N n) {                 \
        detail::check(bc_binary_scalar_inplace(code, detail::handle(t), detail::number(n)));           \
    }
#define BC_HPP_NUMBER_COMPARISON(op, name)                                                             \
    template <class N, detail::if_number<N> = 0> Tensor operator op(const Tensor &t, N n) {            \
        return name(t, n);                                                                             \
    }                                                                                                  \
    template <class N, detail::if_number<N> = 0> Tensor operator op(N n, const Tensor &t) {            \
        return name(n, t);                                                                             \
    }
#define BC_HPP_NUMBER_OPERATOR(op, name)                                                               \
    BC_HPP_NUMBER_COMPARISON(op, name)                                                                 \
    template <class N, detail::if_number<N> = 0> Tensor &operator op##=(Tensor &t, N n) {              \
        name##_inplace(t, n);                                                                          \
        return t;                                                                                      \
    }

BC_HPP_NUMBER_OPERATIONS(BC_HPP_NUMBER)

BC_HPP_NUMBER_OPERATOR(+, add)
BC_HPP_NUMBER_OPERATOR(-, sub)
BC_HPP_NUMBER_OPERATOR(*, mul)
BC_HPP_NUMBER_OPERATOR(/, div)
BC_HPP_NUMBER_OPERATOR(&, bitwise_and)
BC_HPP_NUMBER_OPERATOR(|, bitwise_or)
BC_HPP_NUMBER_OPERATOR(^, bitwise_xor)
BC_HPP_NUMBER_OPERATOR(<<, bitwise_left_shift)
BC_HPP_NUMBER_OPERATOR(>>, bitwise_right_shift)
BC_HPP_NUMBER_OPERATOR(%, remainder)
BC_HPP_NUMBER_COMPARISON(==, eq)
BC_HPP_NUMBER_COMPARISON(!=, ne)
BC_HPP_NUMBER_COMPARISON(<, lt)
BC_HPP_NUMBER_COMPARISON(<=, le)
BC_HPP_NUMBER_COMPARISON(>, gt)
BC_HPP_NUMBER_COMPARISON(>=, ge)

#undef BC_HPP_BINARY
#undef BC_HPP_OPERATOR
#undef BC_HPP_COMPARISON
#undef BC_HPP_NUMBER
#undef BC_HPP_NUMBER_COMPARISON
#undef BC_HPP_NUMBER_OPERATOR

/// An operand described without memory, for the planner: a type, a shape, and strides in
/// elements (none: row-major).
struct Geometry {
    DType dtype;
    Shape shape;
    std::optional<Shape> strides;
};

/// What a call would do, as the planner reports it (bc_plan).
struct Plan {
    DType dtype;         ///< the result type (in place or into out: before the cast)
    DType compute_dtype; ///< the type computed in
    Shape shape;         ///< the result's shape
    Shape strides;       ///< the written tensor's strides: a new result's layout, or the target's
    uint32_t flags;      ///< BC_PLAN_WARNING_* bits, BC_PLAN_CHECKS_DIVISOR and BC_PLAN_FUSED
    int32_t loop_kind;   ///< a BC_LOOP_* code
    Shape loop_shape;    ///< the sizes iterated once dimensions are merged
    std::size_t threads; ///< threads sharing the work, the calling one included
    std::size_t alloc_bytes; ///< element memory the call would allocate
};

namespace detail {

inline bc_geometry geometry(const Geometry &g) {
    if (g.strides && g.strides->size() != g.shape.size())
        fail(BC_ERR_INVALID_ARG, BC_ERROR_KIND_INVALID_ARGUMENT,
             "bc::Geometry: strides and shape differ in length");
    return bc_geometry{static_cast<int32_t>(g.dtype), g.shape.size(), data_or_null(g.shape),
                       g.strides ? data_or_null(*g.strides) : nullptr};
}

template <class Call> Plan plan(Call &&call) {
    bc_plan p;
    check(call(&p));
    return Plan{static_cast<DType>(p.dtype),
                static_cast<DType>(p.compute_dtype),
                Shape(p.shape, p.shape + p.ndim),
                Shape(p.strides, p.strides + p.ndim),
                p.flags,
                p.loop_kind,
                Shape(p.loop_shape, p.loop_shape + p.loop_ndim),
                p.threads,
                p.alloc_bytes};
}

} // namespace detail

/// What a op b (`op` a BC_OP_* code) would do for operands of these geometries: the result's type,
/// shape and layout and how it would run (bc_plan_binary), or the bc::Error the call would throw.
inline Plan plan_binary(int32_t op, const Geometry &a, const Geometry &b) {
    bc_geometry ga = detail::geometry(a), gb = detail::geometry(b);
    return detail::plan([&](bc_plan *p) { return bc_plan_binary(op, &ga, &gb, p); });
}
/// As plan_binary, for target op= other (bc_plan_binary_inplace).
inline Plan plan_binary_inplace(int32_t op, const Geometry &target, const Geometry &other) {
    bc_geometry gt = detail::geometry(target), go = detail::geometry(other);
    return detail::plan([&](bc_plan *p) { return bc_plan_binary_inplace(op, &gt, &go, p); });
}
/// As plan_binary, for a op b into out (bc_plan_binary_out).
inline Plan plan_binary_out(int32_t op, const Geometry &a, const Geometry &b, const Geometry &out) {
    bc_geometry ga = detail::geometry(a), gb = detail::geometry(b), go = detail::geometry(out);
    return detail::plan([&](bc_plan *p) { return bc_plan_binary_out(op, &ga, &gb, &go, p); });
}

/// What t op n (`op` a BC_OP_* code, `n` a number, as bc::add(t, n)) would do (bc_plan_binary_scalar).
template <class N, detail::if_number<N> = 0> Plan plan_binary(int32_t op, const Geometry &t, N n) {
    bc_geometry gt = detail::geometry(t);
    return detail::plan([&](bc_plan *p) { return bc_plan_binary_scalar(op, &gt, detail::number(n), p); });
}
/// What n op t would do (bc_plan_binary_rscalar).
template <class N, detail::if_number<N> = 0> Plan plan_binary(int32_t op, N n, const Geometry &t) {
    bc_geometry gt = detail::geometry(t);
    return detail::plan([&](bc_plan *p) { return bc_plan_binary_rscalar(op, detail::number(n), &gt, p); });
}
/// What target op= n would do (bc_plan_binary_scalar_inplace).
template <class N, detail::if_number<N> = 0> Plan plan_binary_inplace(int32_t op, const Geometry &target, N n) {
    bc_geometry gt = detail::geometry(target);
    return detail::plan(
        [&](bc_plan *p) { return bc_plan_binary_scalar_inplace(op, &gt, detail::number(n), p); });
}
/// What bc::where(cond, a, b) would do (bc_plan_where).
inline Plan plan_where(const Geometry &cond, const Geometry &a, const Geometry &b) {
    bc_geometry gc = detail::geometry(cond), ga = detail::geometry(a), gb = detail::geometry(b);
    return detail::plan([&](bc_plan *p) { return bc_plan_where(&gc, &ga, &gb, p); });
}
/// What bc::where(cond, a, b, out) would do (bc_plan_where_out).
inline Plan plan_where(const Geometry &cond, const Geometry &a, const Geometry &b, const Geometry &out) {
    bc_geometry gc = detail::geometry(cond), ga = detail::geometry(a), gb = detail::geometry(b),
                go = detail::geometry(out);
    return detail::plan([&](bc_plan *p) { return bc_plan_where_out(&gc, &ga, &gb, &go, p); });
}

/// What bc::reduce(op, t, dims, keepdim) would do (bc_plan_reduce): compute_dtype is the type
/// accumulated in, loop_shape the outputs and the elements each reduces.
inline Plan plan_reduce(int32_t op, const Geometry &t, const Shape &dims = {}, bool keepdim = false) {
    bc_geometry gt = detail::geometry(t);
    return detail::plan([&](bc_plan *p) {
        return bc_plan_reduce(op, &gt, detail::data_or_null(dims), dims.size(), keepdim, p);
    });
}
/// What bc::sum_to_size(t, shape) would do (bc_plan_sum_to_size); a view when nothing is summed
/// (no bytes, BC_LOOP_NONE).
inline Plan plan_sum_to_size(const Geometry &t, const Shape &shape) {
    bc_geometry gt = detail::geometry(t);
    return detail::plan([&](bc_plan *p) {
        return bc_plan_sum_to_size(&gt, detail::data_or_null(shape), shape.size(), p);
    });
}
/// What bc::binary_sum_to(op, a, b, shape) would do (bc_plan_binary_sum_to).
inline Plan plan_binary_sum_to(int32_t op, const Geometry &a, const Geometry &b, const Shape &shape) {
    bc_geometry ga = detail::geometry(a), gb = detail::geometry(b);
    return detail::plan([&](bc_plan *p) {
        return bc_plan_binary_sum_to(op, &ga, &gb, detail::data_or_null(shape), shape.size(), p);
    });
}

/// Views of every tensor expanded to their common shape (bc_tensor_broadcast_tensors).
inline std::vector<Tensor>
broadcast_tensors(const std::vector<std::reference_wrapper<const Tensor>> &tensors) {
    std::vector<const bc_tensor *> in;
    in.reserve(tensors.size());
    for (const Tensor &t : tensors) in.push_back(detail::handle(t));
    std::vector<bc_tensor *> out(tensors.size(), nullptr);
    int32_t status = bc_tensor_broadcast_tensors(in.empty() ? nullptr : in.data(), in.size(),
                                                 out.empty() ? nullptr : out.data());
    std::vector<Tensor> result;
    result.reserve(out.size());
    for (bc_tensor *h : out) result.push_back(Tensor::adopt(h)); // all NULL on failure
    detail::check(status);
    return result;
}

/*
 * Reductions (docs/semantics.md, section 14): over `dims`, negative ones counting from the end, or
 * every dimension when `dims` is empty (PyTorch's dim=None), or over one dimension given as an
 * integer (bc::sum(t, 0), PyTorch's t.sum(0)); `keepdim` keeps each reduced
 * dimension as size 1. Result types as PyTorch's: sum and prod of bool and integers are int64,
 * mean of them is refused, amax and amin keep the type.
 */
/// `op` (a BC_REDUCE_* code) of `t` over `dims` (bc_reduce).
inline Tensor reduce(int32_t op, const Tensor &t, const Shape &dims = {}, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) {
        return bc_reduce(op, detail::handle(t), detail::data_or_null(dims), dims.size(), keepdim, out);
    });
}

namespace detail {
/// An integer other than bool, for the one-dimension forms of the reductions. A template, so that
/// a braced list (`{0}`, `{}`) still means the list form: `bc::sum(t, {})` reduces everything.
template <class D>
using if_dim = std::enable_if_t<std::is_integral_v<D> && !std::is_same_v<D, bool>, int>;
} // namespace detail

/// `op` of `t` over the one dimension `dim` (PyTorch's t.sum(dim)): reduce(op, t, {dim}, keepdim).
template <class D, detail::if_dim<D> = 0>
Tensor reduce(int32_t op, const Tensor &t, D dim, bool keepdim = false) {
    return reduce(op, t, Shape{static_cast<int64_t>(dim)}, keepdim);
}
#define BC_HPP_REDUCTION(name)                                                                         \
    inline Tensor name(const Tensor &t, const Shape &dims = {}, bool keepdim = false) {                \
        return detail::make([&](bc_tensor **out) {                                                     \
            return bc_##name(detail::handle(t), detail::data_or_null(dims), dims.size(), keepdim, out);\
        });                                                                                            \
    }                                                                                                  \
    template <class D, detail::if_dim<D> = 0> Tensor name(const Tensor &t, D dim, bool keepdim = false) {\
        return name(t, Shape{static_cast<int64_t>(dim)}, keepdim);                                     \
    }
BC_HPP_REDUCTION(sum)
BC_HPP_REDUCTION(mean)
BC_HPP_REDUCTION(prod)
BC_HPP_REDUCTION(amax)
BC_HPP_REDUCTION(amin)
BC_HPP_REDUCTION(logsumexp)
BC_HPP_REDUCTION(nansum)
BC_HPP_REDUCTION(nanmean)
#undef BC_HPP_REDUCTION

/// The variance of `t` over `dims` (every dimension when empty): the squared deviations from the
/// mean summed over n - correction (bc_var; PyTorch's t.var(dims, correction=, keepdim=)),
/// computed in float64 and rounded once; floating types only.
inline Tensor var(const Tensor &t, const Shape &dims = {}, double correction = 1.0, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) {
        return bc_var(detail::handle(t), detail::data_or_null(dims), dims.size(), correction, keepdim, out);
    });
}
/// The standard deviation, the square root of bc::var (bc_std).
inline Tensor std(const Tensor &t, const Shape &dims = {}, double correction = 1.0, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) {
        return bc_std(detail::handle(t), detail::data_or_null(dims), dims.size(), correction, keepdim, out);
    });
}
template <class D, detail::if_dim<D> = 0>
Tensor var(const Tensor &t, D dim, double correction = 1.0, bool keepdim = false) {
    return var(t, Shape{static_cast<int64_t>(dim)}, correction, keepdim);
}
template <class D, detail::if_dim<D> = 0>
Tensor std(const Tensor &t, D dim, double correction = 1.0, bool keepdim = false) {
    return std(t, Shape{static_cast<int64_t>(dim)}, correction, keepdim);
}

/// Whether every element over `dims` (every dimension when empty) is non-zero (bc_all): bool, or
/// uint8 for a uint8 `t`; NaN counts as non-zero.
inline Tensor all(const Tensor &t, const Shape &dims = {}, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) {
        return bc_all(detail::handle(t), detail::data_or_null(dims), dims.size(), keepdim, out);
    });
}
/// Whether some element over `dims` is non-zero (bc_any), as bc::all.
inline Tensor any(const Tensor &t, const Shape &dims = {}, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) {
        return bc_any(detail::handle(t), detail::data_or_null(dims), dims.size(), keepdim, out);
    });
}

/// The int64 index of the largest element of the row-major flattened `t` (bc_argmax): the first
/// of equal ones, the first NaN when there is one.
inline Tensor argmax(const Tensor &t, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) { return bc_argmax(detail::handle(t), nullptr, keepdim, out); });
}
/// The indices of the largest elements along `dim`.
template <class D, detail::if_dim<D> = 0> Tensor argmax(const Tensor &t, D dim, bool keepdim = false) {
    const int64_t d = static_cast<int64_t>(dim);
    return detail::make([&](bc_tensor **out) { return bc_argmax(detail::handle(t), &d, keepdim, out); });
}
/// As bc::argmax, for the smallest (bc_argmin).
inline Tensor argmin(const Tensor &t, bool keepdim = false) {
    return detail::make([&](bc_tensor **out) { return bc_argmin(detail::handle(t), nullptr, keepdim, out); });
}
template <class D, detail::if_dim<D> = 0> Tensor argmin(const Tensor &t, D dim, bool keepdim = false) {
    const int64_t d = static_cast<int64_t>(dim);
    return detail::make([&](bc_tensor **out) { return bc_argmin(detail::handle(t), &d, keepdim, out); });
}

/*
 * Three-operand operations (PyTorch's torch.lerp, addcmul, addcdiv, clamp): the operands broadcast
 * together; each has a new-tensor form, a form into `out` (last argument) and an _inplace form.
 */
/// input + weight * (end - input) (bc_lerp; a number weight: bc_lerp_scalar).
inline Tensor lerp(const Tensor &input, const Tensor &end, const Tensor &weight) {
    return detail::make([&](bc_tensor **out) {
        return bc_lerp(detail::handle(input), detail::handle(end), detail::handle(weight), out);
    });
}
inline void lerp(const Tensor &input, const Tensor &end, const Tensor &weight, Tensor &out) {
    detail::check(bc_lerp_out(detail::handle(input), detail::handle(end), detail::handle(weight), detail::handle(out)));
}
inline void lerp_inplace(Tensor &input, const Tensor &end, const Tensor &weight) {
    detail::check(bc_lerp_inplace(detail::handle(input), detail::handle(end), detail::handle(weight)));
}
template <class N, detail::if_number<N> = 0>
Tensor lerp(const Tensor &input, const Tensor &end, N weight) {
    return detail::make([&](bc_tensor **out) {
        return bc_lerp_scalar(detail::handle(input), detail::handle(end), detail::number(weight), out);
    });
}
template <class N, detail::if_number<N> = 0>
void lerp(const Tensor &input, const Tensor &end, N weight, Tensor &out) {
    detail::check(bc_lerp_scalar_out(detail::handle(input), detail::handle(end), detail::number(weight), detail::handle(out)));
}
template <class N, detail::if_number<N> = 0>
void lerp_inplace(Tensor &input, const Tensor &end, N weight) {
    detail::check(bc_lerp_scalar_inplace(detail::handle(input), detail::handle(end), detail::number(weight)));
}

#define BC_HPP_ADDC(name)                                                                              \
    template <class N = int, detail::if_number<N> = 0>                                                 \
    Tensor name(const Tensor &input, const Tensor &t1, const Tensor &t2, N value = 1) {                \
        return detail::make([&](bc_tensor **out) {                                                     \
            return bc_##name(detail::handle(input), detail::handle(t1), detail::handle(t2),            \
                             detail::number(value), out);                                              \
        });                                                                                            \
    }                                                                                                  \
    template <class N, detail::if_number<N> = 0>                                                       \
    void name(const Tensor &input, const Tensor &t1, const Tensor &t2, N value, Tensor &out) {         \
        detail::check(bc_##name##_out(detail::handle(input), detail::handle(t1), detail::handle(t2),   \
                                      detail::number(value), detail::handle(out)));                   \
    }                                                                                                  \
    template <class N = int, detail::if_number<N> = 0>                                                 \
    void name##_inplace(Tensor &input, const Tensor &t1, const Tensor &t2, N value = 1) {              \
        detail::check(bc_##name##_inplace(detail::handle(input), detail::handle(t1),                   \
                                          detail::handle(t2), detail::number(value)));                 \
    }
/// input + value * t1 * t2 (bc_addcmul), and input + value * t1 / t2 (bc_addcdiv).
BC_HPP_ADDC(addcmul)
BC_HPP_ADDC(addcdiv)
#undef BC_HPP_ADDC

/// min(max(input, min), max) with tensor bounds (bc_clamp); NaN anywhere gives NaN.
inline Tensor clamp(const Tensor &input, const Tensor &min, const Tensor &max) {
    return detail::make([&](bc_tensor **out) {
        return bc_clamp(detail::handle(input), detail::handle(min), detail::handle(max), out);
    });
}
inline void clamp(const Tensor &input, const Tensor &min, const Tensor &max, Tensor &out) {
    detail::check(bc_clamp_out(detail::handle(input), detail::handle(min), detail::handle(max), detail::handle(out)));
}
inline void clamp_inplace(Tensor &input, const Tensor &min, const Tensor &max) {
    detail::check(bc_clamp_inplace(detail::handle(input), detail::handle(min), detail::handle(max)));
}
/// clamp with number bounds (bc_clamp_scalar): bc::clamp(t, 0, 2.5); into an existing tensor of
/// the same type, bc::clamp(t, 0, 2.5, out) (bc_clamp_scalar_out).
template <class L, class H, detail::if_number<L> = 0, detail::if_number<H> = 0>
Tensor clamp(const Tensor &input, L min, H max) {
    const bc_scalar lo = detail::number(min), hi = detail::number(max);
    return detail::make([&](bc_tensor **out) { return bc_clamp_scalar(detail::handle(input), &lo, &hi, out); });
}
template <class L, class H, detail::if_number<L> = 0, detail::if_number<H> = 0>
void clamp(const Tensor &input, L min, H max, Tensor &out) {
    const bc_scalar lo = detail::number(min), hi = detail::number(max);
    detail::check(bc_clamp_scalar_out(detail::handle(input), &lo, &hi, detail::handle(out)));
}
template <class L, class H, detail::if_number<L> = 0, detail::if_number<H> = 0>
void clamp_inplace(Tensor &input, L min, H max) {
    const bc_scalar lo = detail::number(min), hi = detail::number(max);
    detail::check(bc_clamp_scalar_inplace(detail::handle(input), &lo, &hi));
}
/// max(input, min) with a number (PyTorch's clamp_min).
template <class N, detail::if_number<N> = 0> Tensor clamp_min(const Tensor &input, N min) {
    const bc_scalar lo = detail::number(min);
    return detail::make([&](bc_tensor **out) { return bc_clamp_scalar(detail::handle(input), &lo, nullptr, out); });
}
/// min(input, max) with a number (PyTorch's clamp_max).
template <class N, detail::if_number<N> = 0> Tensor clamp_max(const Tensor &input, N max) {
    const bc_scalar hi = detail::number(max);
    return detail::make([&](bc_tensor **out) { return bc_clamp_scalar(detail::handle(input), nullptr, &hi, out); });
}

/// `t` summed back to `shape`, undoing a broadcast (bc_tensor_sum_to_size, PyTorch's
/// t.sum_to_size(shape)); a view of `t` when nothing is summed.
inline Tensor sum_to_size(const Tensor &t, const Shape &shape) {
    return detail::make([&](bc_tensor **out) {
        return bc_tensor_sum_to_size(detail::handle(t), detail::data_or_null(shape), shape.size(), out);
    });
}

/// sum_to_size(a op b, shape) for a BC_OP_* code, without making `a op b` (bc_binary_sum_to).
inline Tensor binary_sum_to(int32_t op, const Tensor &a, const Tensor &b, const Shape &shape) {
    return detail::make([&](bc_tensor **out) {
        return bc_binary_sum_to(op, detail::handle(a), detail::handle(b), detail::data_or_null(shape),
                                shape.size(), out);
    });
}

/// The broadcast shape of `a` and `b` (bc_shape_broadcast).
inline Shape broadcast_shapes(const Shape &a, const Shape &b) {
    Shape out(a.size() > b.size() ? a.size() : b.size());
    std::size_t ndim = 0;
    detail::check(bc_shape_broadcast(detail::data_or_null(a), a.size(), detail::data_or_null(b), b.size(),
                                     out.empty() ? nullptr : out.data(), out.size(), &ndim));
    out.resize(ndim);
    return out;
}

/// The broadcast shape of all `shapes` (bc_shape_broadcast_n, PyTorch's broadcast_shapes).
inline Shape broadcast_shapes(const std::vector<Shape> &shapes) {
    std::vector<const int64_t *> dims;
    std::vector<std::size_t> ndims;
    std::size_t longest = 0;
    for (const Shape &s : shapes) {
        dims.push_back(detail::data_or_null(s));
        ndims.push_back(s.size());
        if (s.size() > longest) longest = s.size();
    }
    Shape out(longest);
    std::size_t ndim = 0;
    detail::check(bc_shape_broadcast_n(dims.empty() ? nullptr : dims.data(),
                                       ndims.empty() ? nullptr : ndims.data(), shapes.size(),
                                       out.empty() ? nullptr : out.data(), out.size(), &ndim));
    out.resize(ndim);
    return out;
}

/// Whether `a` and `b` broadcast together (bc_shape_is_broadcastable).
inline bool is_broadcastable(const Shape &a, const Shape &b) {
    bool yes = false;
    detail::check(bc_shape_is_broadcastable(detail::data_or_null(a), a.size(), detail::data_or_null(b),
                                            b.size(), &yes));
    return yes;
}

/// where(cond, a, b): a's element where cond is true, else b's, in a new tensor (bc_where). The
/// three broadcast together; the result type promotes a and b only; cond is bool, or uint8
/// (accepted with PyTorch's deprecation warning).
inline Tensor where(const Tensor &cond, const Tensor &a, const Tensor &b) {
    return detail::make([&](bc_tensor **out) {
        return bc_where(detail::handle(cond), detail::handle(a), detail::handle(b), out);
    });
}
/// where(cond, a, b) into out, which must have exactly the broadcast shape and the result type
/// (bc_where_out).
inline void where(const Tensor &cond, const Tensor &a, const Tensor &b, Tensor &out) {
    detail::check(
        bc_where_out(detail::handle(cond), detail::handle(a), detail::handle(b), detail::handle(out)));
}

namespace detail {

/// The type a number `n` takes beside an operand of type `dtype`, as PyTorch gives a Python number
/// (section 6 of docs/semantics.md): the result type the library plans for a 0-d `dtype` tensor
/// plus `n` (bc_plan_binary_scalar with BC_OP_ADD, whose result type is its operands' promotion).
template <class N> DType number_type(DType dtype, N n) {
    bc_geometry g{static_cast<int32_t>(dtype), 0, nullptr, nullptr};
    bc_plan p;
    check(bc_plan_binary_scalar(BC_OP_ADD, &g, number(n), &p));
    return static_cast<DType>(p.dtype);
}

/// `n` as a 0-d tensor of `dtype`: made in the type bc_scalar holds it in (bool, int64 or double)
/// and converted with C casts (bc_tensor_to_dtype), as PyTorch converts a Python number.
template <class N> Tensor number_tensor(N n, DType dtype) {
    Tensor t;
    if constexpr (std::is_same_v<N, bool>) {
        t = Tensor::scalar(n);
    } else if constexpr (std::is_integral_v<N>) {
        t = Tensor::scalar(static_cast<int64_t>(n));
    } else {
        t = Tensor::scalar(static_cast<double>(n));
    }
    return t.dtype() == dtype ? t : t.to(dtype);
}

} // namespace detail

/// where(cond, a, n) with a number for `b` (PyTorch's torch.where(cond, a, 0)): the number takes
/// the type it takes beside `a` in `a + n` (int32 with 2.5: float32; float16 with 2.5: float16) and
/// goes in as a 0-d tensor of that type, so the result type is that type too.
template <class N, detail::if_number<N> = 0> Tensor where(const Tensor &cond, const Tensor &a, N b) {
    return where(cond, a, detail::number_tensor(b, detail::number_type(a.dtype(), b)));
}
/// where(cond, n, b), with a number for `a`, as where(cond, a, n).
template <class N, detail::if_number<N> = 0> Tensor where(const Tensor &cond, N a, const Tensor &b) {
    return where(cond, detail::number_tensor(a, detail::number_type(b.dtype(), a)), b);
}
/// where(cond, n, m) with two numbers: both take the type of PyTorch's result_type(n, m) (an
/// integer and a float: float32), found from the library's promotion as above.
template <class N, class M, detail::if_number<N> = 0, detail::if_number<M> = 0>
Tensor where(const Tensor &cond, N a, M b) {
    DType type = detail::number_type(detail::number_type(DType::Bool, a), b);
    return where(cond, detail::number_tensor(a, type), detail::number_tensor(b, type));
}

/// An elementwise expression over numbered input tensors, evaluated in one pass over memory
/// (bc_expr_eval) with exactly the separate calls' results: types, rounding at each step, errors
/// and warnings. Built from Expr::input, Expr::constant and Expr::constant_int with the same
/// names as the tensor operations (bc::add, bc::pow, bc::where, ...) and the same operators:
///     bc::Expr x = bc::Expr::input(0), y = bc::Expr::input(1), z = bc::Expr::input(2);
///     bc::Tensor r = (x * y + z).eval({a, b, c}); // a * b + c
/// The library checks the program when it runs (BC_EXPR_MAX_STEPS, BC_EXPR_MAX_DEPTH, inputs).
class Expr {
  public:
    /// Input tensor number `index` of eval's inputs.
    static Expr input(int32_t index) { return Expr(step(BC_EXPR_INPUT, index, 0, 0.0)); }
    /// A constant of a floating type: a 0-d tensor of `dtype` holding `value` (rounded to it).
    static Expr constant(DType dtype, double value) {
        return Expr(step(BC_EXPR_CONST, static_cast<int32_t>(dtype), 0, value));
    }
    /// A constant of bool or an integer type: a 0-d tensor of `dtype` holding `value` (converted
    /// as a C cast: wrapping; non-zero is true).
    static Expr constant_int(DType dtype, int64_t value) {
        return Expr(step(BC_EXPR_CONST, static_cast<int32_t>(dtype), value, static_cast<double>(value)));
    }
    /// a op b, for `op` a BC_OP_* code.
    static Expr apply(int32_t op, const Expr &a, const Expr &b) {
        return Expr(step(BC_EXPR_OP, op, 0, 0.0), {&a, &b});
    }
    /// where(cond, a, b).
    static Expr where(const Expr &cond, const Expr &a, const Expr &b) {
        return Expr(step(BC_EXPR_WHERE, 0, 0, 0.0), {&cond, &a, &b});
    }
    /// op(x), for `op` a BC_UNARY_* code.
    static Expr apply_unary(int32_t op, const Expr &x) { return Expr(step(BC_EXPR_UNARY, op, 0, 0.0), {&x}); }
    /// op(input, b, c), for `op` a BC_TERNARY_* code, with addcmul's and addcdiv's `value` (an
    /// integer type gives an integer value, a floating type a float one, as the C step reads them).
    template <class N = int, detail::if_number<N> = 0>
    static Expr apply_ternary(int32_t op, const Expr &input, const Expr &b, const Expr &c, N value = 1) {
        bc_expr_step last = std::is_floating_point_v<N> && value != 0
                                ? step(BC_EXPR_TERNARY, op, 0, static_cast<double>(value))
                                : step(BC_EXPR_TERNARY, op, static_cast<int64_t>(value), 0.0);
        return Expr(last, {&input, &b, &c});
    }

    /// The value over `inputs`, in a new tensor (bc_expr_eval).
    Tensor eval(const std::vector<std::reference_wrapper<const Tensor>> &inputs) const {
        std::vector<const bc_tensor *> in = handles(inputs);
        return detail::make([&](bc_tensor **out) {
            return bc_expr_eval(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(), in.size(), out);
        });
    }
    /// The value over `inputs` written into `out`, as the last operation's _out form writes; out
    /// may be one of the inputs (bc_expr_eval_out).
    void eval(const std::vector<std::reference_wrapper<const Tensor>> &inputs, Tensor &out) const {
        std::vector<const bc_tensor *> in = handles(inputs);
        detail::check(bc_expr_eval_out(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(),
                                       in.size(), detail::handle(out)));
    }

    /// What eval(inputs) would do for inputs of these geometries (bc_plan_expr), or the
    /// bc::Error it would throw.
    Plan plan(const std::vector<Geometry> &inputs) const {
        std::vector<bc_geometry> in = geometries(inputs);
        return detail::plan([&](bc_plan *p) {
            return bc_plan_expr(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(), in.size(), p);
        });
    }
    /// What eval(inputs, out) would do (bc_plan_expr_out).
    Plan plan(const std::vector<Geometry> &inputs, const Geometry &out) const {
        std::vector<bc_geometry> in = geometries(inputs);
        bc_geometry go = detail::geometry(out);
        return detail::plan([&](bc_plan *p) {
            return bc_plan_expr_out(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(), in.size(),
                                    &go, p);
        });
    }

    /// The reduction `op` (a BC_REDUCE_* code) over `dims` of the value over `inputs`: eval then
    /// bc::reduce, bit for bit, without making the value when the expression runs as one pass
    /// (bc_expr_reduce).
    Tensor reduce(int32_t op, const std::vector<std::reference_wrapper<const Tensor>> &inputs,
                  const Shape &dims = {}, bool keepdim = false) const {
        std::vector<const bc_tensor *> in = handles(inputs);
        return detail::make([&](bc_tensor **out) {
            return bc_expr_reduce(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(), in.size(), op,
                                  detail::data_or_null(dims), dims.size(), keepdim, out);
        });
    }
    /// What reduce(op, inputs, dims, keepdim) would do (bc_plan_expr_reduce); flags has
    /// BC_PLAN_FUSED when it runs as one pass.
    Plan plan_reduce(int32_t op, const std::vector<Geometry> &inputs, const Shape &dims = {},
                     bool keepdim = false) const {
        std::vector<bc_geometry> in = geometries(inputs);
        return detail::plan([&](bc_plan *p) {
            return bc_plan_expr_reduce(steps_.data(), steps_.size(), in.empty() ? nullptr : in.data(), in.size(),
                                       op, detail::data_or_null(dims), dims.size(), keepdim, p);
        });
    }

    /// The program, postfix, as the C API takes it.
    const std::vector<bc_expr_step> &steps() const noexcept { return steps_; }

  private:
    static bc_expr_step step(int32_t kind, int32_t arg, int64_t int_value, double float_value) {
        return bc_expr_step{kind, arg, int_value, float_value};
    }
    explicit Expr(bc_expr_step last, std::initializer_list<const Expr *> operands = {}) {
        std::size_t n = 1;
        for (const Expr *e : operands) n += e->steps_.size();
        steps_.reserve(n);
        for (const Expr *e : operands) steps_.insert(steps_.end(), e->steps_.begin(), e->steps_.end());
        steps_.push_back(last);
    }
    static std::vector<bc_geometry> geometries(const std::vector<Geometry> &inputs) {
        std::vector<bc_geometry> out;
        out.reserve(inputs.size());
        for (const Geometry &g : inputs) out.push_back(detail::geometry(g));
        return out;
    }
    static std::vector<const bc_tensor *>
    handles(const std::vector<std::reference_wrapper<const Tensor>> &inputs) {
        std::vector<const bc_tensor *> in;
        in.reserve(inputs.size());
        for (const Tensor &t : inputs) in.push_back(detail::handle(t));
        return in;
    }

    std::vector<bc_expr_step> steps_;
};

/// where(cond, a, b) in an expression.
inline Expr where(const Expr &cond, const Expr &a, const Expr &b) { return Expr::where(cond, a, b); }

// The operations in expressions: bc::name(x, y) for every operation, and the operators the
// tensors have.
#define BC_HPP_EXPR(name, code)                                                                     \
    inline Expr name(const Expr &a, const Expr &b) { return Expr::apply(code, a, b); }
#define BC_HPP_EXPR_OPERATOR(op, name)                                                              \
    inline Expr operator op(const Expr &a, const Expr &b) { return name(a, b); }
BC_HPP_OPERATIONS(BC_HPP_EXPR)
BC_HPP_EXPR_OPERATOR(+, add)
BC_HPP_EXPR_OPERATOR(-, sub)
BC_HPP_EXPR_OPERATOR(*, mul)
BC_HPP_EXPR_OPERATOR(/, div)
BC_HPP_EXPR_OPERATOR(&, bitwise_and)
BC_HPP_EXPR_OPERATOR(|, bitwise_or)
BC_HPP_EXPR_OPERATOR(^, bitwise_xor)
BC_HPP_EXPR_OPERATOR(<<, bitwise_left_shift)
BC_HPP_EXPR_OPERATOR(>>, bitwise_right_shift)
BC_HPP_EXPR_OPERATOR(%, remainder)
BC_HPP_EXPR_OPERATOR(==, eq)
BC_HPP_EXPR_OPERATOR(!=, ne)
BC_HPP_EXPR_OPERATOR(<, lt)
BC_HPP_EXPR_OPERATOR(<=, le)
BC_HPP_EXPR_OPERATOR(>, gt)
BC_HPP_EXPR_OPERATOR(>=, ge)
#undef BC_HPP_EXPR
#undef BC_HPP_EXPR_OPERATOR

// The unary operations in expressions: bc::name(x) for every one (bc::sqrt(x * x + y * y)), and
// unary minus.
#define BC_HPP_EXPR_UNARY(name, code)                                                               \
    inline Expr name(const Expr &x) { return Expr::apply_unary(code, x); }
BC_HPP_UNARY_OPERATIONS(BC_HPP_EXPR_UNARY)
#undef BC_HPP_EXPR_UNARY
#undef BC_HPP_UNARY_OPERATIONS
inline Expr operator-(const Expr &x) { return neg(x); }

// The three-operand operations in expressions, as the tensor forms with three tensors
// (bc::clamp(x * s, lo, hi)); a number operand is an Expr::constant (a 0-d tensor).
inline Expr lerp(const Expr &input, const Expr &end, const Expr &weight) {
    return Expr::apply_ternary(BC_TERNARY_LERP, input, end, weight);
}
inline Expr clamp(const Expr &input, const Expr &min, const Expr &max) {
    return Expr::apply_ternary(BC_TERNARY_CLAMP, input, min, max);
}
template <class N = int, detail::if_number<N> = 0>
Expr addcmul(const Expr &input, const Expr &t1, const Expr &t2, N value = 1) {
    return Expr::apply_ternary(BC_TERNARY_ADDCMUL, input, t1, t2, value);
}
template <class N = int, detail::if_number<N> = 0>
Expr addcdiv(const Expr &input, const Expr &t1, const Expr &t2, N value = 1) {
    return Expr::apply_ternary(BC_TERNARY_ADDCDIV, input, t1, t2, value);
}
#undef BC_HPP_OPERATIONS
#undef BC_HPP_NUMBER_OPERATIONS

// Settings: process-wide, as in the C API.
inline void set_broadcast_warning(bool enabled) { detail::check(bc_set_broadcast_warning(enabled)); }
inline bool broadcast_warning() noexcept { return bc_get_broadcast_warning(); }
inline void set_legacy_fallback(bool enabled) { detail::check(bc_set_legacy_fallback(enabled)); }
inline bool legacy_fallback() noexcept { return bc_get_legacy_fallback(); }
inline void set_num_threads(std::size_t threads) { detail::check(bc_set_num_threads(threads)); }
inline std::size_t num_threads() noexcept { return bc_get_num_threads(); }
inline void set_parallel_threshold(std::size_t elements) {
    detail::check(bc_set_parallel_threshold(elements));
}
/// The calling thread's streaming policy: BC_STREAMING_AUTO (the default), _ALWAYS or _NEVER.
inline void set_streaming(std::int32_t mode) { detail::check(bc_set_streaming(mode)); }
inline std::int32_t streaming() noexcept { return bc_get_streaming(); }
/// The library's version, "MAJOR.MINOR.PATCH" (BC_VERSION_STRING of the header it was built with).
inline const char *version() noexcept { return bc_version(); }
/// Live handles in the process (bc_tensor_live_count), for leak checks.
inline std::size_t live_count() noexcept { return bc_tensor_live_count(); }

/// Receives each warning's text (without "UserWarning: "), on the thread of the call that warns.
using WarningHandler = std::function<void(std::string_view)>;

namespace detail {

inline void warning_trampoline(void *handler, const char *message) noexcept {
    try {
        (*static_cast<WarningHandler *>(handler))(std::string_view(message));
    } catch (...) {
        // No exception may cross the C library: keep the first, for check() to rethrow.
        std::exception_ptr &pending = pending_handler_exception();
        if (!pending) pending = std::current_exception();
    }
}

/// Every handler ever installed. The library stops calling a handler once another replaces it,
/// but when two threads install handlers at once, which one it held before each swap is not known
/// here; so none is destroyed: they stay (reachable) until the process exits, as does the registry.
struct HandlerRegistry {
    std::mutex mutex;
    std::vector<std::unique_ptr<WarningHandler>> handlers;
};
inline HandlerRegistry &handler_registry() {
    static HandlerRegistry *const registry = new HandlerRegistry;
    return *registry;
}

} // namespace detail

/// Sends warnings to `handler` (an empty one restores the default, standard error). An exception
/// the handler throws is rethrown from the bc:: call that emitted the warning, after that call
/// has finished (its result, if any, is freed). Called from inside a warning handler it throws
/// bc::Error (BC_ERR_INVALID_ARG) and changes nothing, as the C function refuses.
inline void set_warning_handler(WarningHandler handler) {
    if (!handler) {
        detail::check(bc_set_warning_handler(nullptr, nullptr));
        return;
    }
    detail::HandlerRegistry &registry = detail::handler_registry();
    WarningHandler *installed = nullptr;
    {
        std::lock_guard<std::mutex> guard(registry.mutex);
        registry.handlers.push_back(std::make_unique<WarningHandler>(std::move(handler)));
        installed = registry.handlers.back().get();
    }
    detail::check(bc_set_warning_handler(&detail::warning_trampoline, installed));
}

} // namespace bc

#endif /* LIBBROADCAST_HPP */
