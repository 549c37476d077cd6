package broadcast

// #include "shims.h"
import "C"

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Tensor owns one libbroadcast handle. Close frees it; a finalizer frees it too if a Tensor
// becomes unreachable while still open, but the garbage collector does not see the memory the
// library holds, so call Close (or defer it) for anything large.
//
// A Tensor may be used from several goroutines at once, except that one being written (the
// target of an in-place operation, or an Out destination) must not be used by another goroutine
// at the same time. A closed Tensor is passed to the library as NULL: operations on it fail with
// ErrNullArg, and the accessors (Shape, DType, ...) panic.
type Tensor struct {
	// The handle, as a number: it is a token, not an address (see include/broadcast.h), and
	// may fall inside the Go heap's address range, so it is never held in a pointer type.
	h atomic.Uintptr
}

func newTensor(h C.uintptr_t) *Tensor {
	t := &Tensor{}
	t.h.Store(uintptr(h))
	runtime.SetFinalizer(t, (*Tensor).free)
	return t
}

// Close frees the handle. It may be called any number of times, from any goroutine; only the
// first call frees.
func (t *Tensor) Close() {
	if t != nil && t.free() {
		runtime.SetFinalizer(t, nil)
	}
}

// free swaps the handle to 0 and frees the old one if it was live: Close and the finalizer can
// never both free it.
func (t *Tensor) free() bool {
	h := t.h.Swap(0)
	if h == 0 {
		return false
	}
	C.gobc_free(C.uintptr_t(h))
	if hook := freeHook.Load(); hook != nil {
		(*hook)(h)
	}
	return true
}

// freeHook, when set, sees every handle the package frees (tests count frees with it).
var freeHook atomic.Pointer[func(uintptr)]

// handle is the handle for one C call (0 for a nil or closed tensor). The caller keeps t alive
// until the call returns (keep).
func (t *Tensor) handle() C.uintptr_t {
	if t == nil {
		return 0
	}
	if debugGC {
		runtime.GC() // -tags bcdebug: a missing keep shows up as a freed handle
	}
	return C.uintptr_t(t.h.Load())
}

// Empty returns a new tensor whose elements are unspecified (bc_tensor_empty).
func Empty(dtype DType, shape ...int) (*Tensor, error) { return create(0, dtype, shape, 0) }

// Zeros returns a new tensor of zeros (false for Bool).
func Zeros(dtype DType, shape ...int) (*Tensor, error) { return create(1, dtype, shape, 0) }

// Ones returns a new tensor of ones (true for Bool).
func Ones(dtype DType, shape ...int) (*Tensor, error) { return create(2, dtype, shape, 0) }

// Full returns a new tensor with every element value, converted to dtype as a C cast would.
func Full(dtype DType, value float64, shape ...int) (*Tensor, error) {
	return create(3, dtype, shape, value)
}

func create(fill C.int, dtype DType, shape []int, value float64) (*Tensor, error) {
	p, n := dims(shape)
	return owned(C.gobc_new(fill, C.int32_t(dtype), p, n, C.double(value)))
}

// FromSlice returns a new tensor of the given shape holding a copy of data, in row-major order
// (len(data) must be the number of elements). An empty shape is a 0-d tensor of one element.
func FromSlice[T Elem](shape []int, data []T) (*Tensor, error) {
	p, n := dims(shape)
	var ptr unsafe.Pointer
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	var z T
	nbytes := C.size_t(uintptr(len(data)) * unsafe.Sizeof(z))
	r := C.gobc_from_data(C.int32_t(DTypeOf[T]()), p, n, ptr, nbytes)
	runtime.KeepAlive(data)
	return owned(r)
}

// Scalar returns a new 0-d tensor holding v.
func Scalar[T Elem](v T) (*Tensor, error) { return FromSlice(nil, []T{v}) }

// Clone returns a deep copy in new row-major storage.
func (t *Tensor) Clone() (*Tensor, error) { return t.copy(0, 0) }

// Contiguous returns a row-major copy (always a copy, in new storage).
func (t *Tensor) Contiguous() (*Tensor, error) { return t.copy(1, 0) }

// ToDType returns a row-major copy converted to dtype with C-style casts (floating to integer
// truncates; to Bool is != 0; to Float16 and BFloat16 rounds to nearest even).
func (t *Tensor) ToDType(dtype DType) (*Tensor, error) { return t.copy(2, dtype) }

func (t *Tensor) copy(what C.int, dtype DType) (*Tensor, error) {
	r := C.gobc_copy(what, t.handle(), C.int32_t(dtype))
	keep(t)
	return owned(r)
}

// query runs a query that can only fail on a closed or foreign handle: that is a programming
// error, reported by a panic.
func (t *Tensor) query(what C.int) int64 {
	r := C.gobc_query(what, t.handle())
	keep(t)
	if err := check(r); err != nil {
		panic(err)
	}
	return int64(r.val)
}

// DType is the element type.
func (t *Tensor) DType() DType { return DType(t.query(0)) }

// NDim is the number of dimensions (0 for a 0-d tensor).
func (t *Tensor) NDim() int { return int(t.query(1)) }

// Numel is the number of elements (1 for a 0-d tensor).
func (t *Tensor) Numel() int { return int(t.query(2)) }

// Offset is the offset of the first element in the storage, in elements.
func (t *Tensor) Offset() int { return int(t.query(3)) }

// IsContiguous is whether t is row-major without gaps.
func (t *Tensor) IsContiguous() bool { return t.query(4) != 0 }

// Shape is the sizes of the dimensions ([]int{} for a 0-d tensor).
func (t *Tensor) Shape() []int { return t.dims(0) }

// Strides are the strides in elements (0 along broadcast dimensions).
func (t *Tensor) Strides() []int { return t.dims(1) }

func (t *Tensor) dims(strides C.int) []int {
	d := C.gobc_tensor_dims(t.handle(), strides)
	keep(t)
	s, err := ints(&d)
	if err != nil {
		panic(err)
	}
	return s
}

// String describes the tensor briefly, such as "float32(4, 4)", or "closed tensor".
func (t *Tensor) String() string {
	if t == nil || t.h.Load() == 0 {
		return "closed tensor"
	}
	dims := make([]string, 0, t.NDim())
	for _, d := range t.Shape() {
		dims = append(dims, strconv.Itoa(d))
	}
	return t.DType().String() + "(" + strings.Join(dims, ", ") + ")"
}

// CopyTo copies t's elements in row-major order into dst, which must have at least Numel
// elements, and whose element type must be t's dtype.
func CopyTo[T Elem](t *Tensor, dst []T) error {
	if want := DTypeOf[T](); t.DType() != want {
		return dtypeMismatch(t, want)
	}
	var ptr unsafe.Pointer
	if len(dst) > 0 {
		ptr = unsafe.Pointer(&dst[0])
	}
	var z T
	nbytes := C.size_t(uintptr(len(dst)) * unsafe.Sizeof(z))
	r := C.gobc_copy_to(t.handle(), ptr, nbytes)
	keep(t)
	runtime.KeepAlive(dst)
	return check(r)
}

// Data returns a copy of t's elements in row-major order; T must be the Go type of t's dtype.
func Data[T Elem](t *Tensor) ([]T, error) {
	if want := DTypeOf[T](); t.DType() != want {
		return nil, dtypeMismatch(t, want)
	}
	out := make([]T, t.Numel())
	if err := CopyTo(t, out); err != nil {
		return nil, err
	}
	return out, nil
}

func dtypeMismatch(t *Tensor, want DType) error {
	return fmt.Errorf("broadcast: elements of a %s tensor read as %s: %w", t.DType(), want, ErrInvalidArg)
}

// Expand returns a view of t expanded to sizes (PyTorch's expand): size-1 dimensions repeat with
// stride 0, new leading dimensions may be added, and -1 keeps a size.
func (t *Tensor) Expand(sizes ...int) (*Tensor, error) { return t.view(0, sizes, nil, 0) }

// BroadcastTo is Expand under NumPy's name.
func (t *Tensor) BroadcastTo(shape ...int) (*Tensor, error) { return t.Expand(shape...) }

// Permute returns a view whose dimension i is dimension dims[i] of t (negative counts from the end).
func (t *Tensor) Permute(dims ...int) (*Tensor, error) { return t.view(1, dims, nil, 0) }

// AsStrided returns any view over t's storage: shape, strides (in elements, not negative) and an
// absolute offset from the start of the storage.
func (t *Tensor) AsStrided(shape, strides []int, offset int) (*Tensor, error) {
	if len(strides) != len(shape) {
		return nil, fmt.Errorf("broadcast: AsStrided with %d sizes and %d strides: %w",
			len(shape), len(strides), ErrInvalidArg)
	}
	return t.view(2, shape, strides, offset)
}

func (t *Tensor) view(what C.int, a, b []int, offset int) (*Tensor, error) {
	pa, n := dims(a)
	pb, _ := dims(b)
	r := C.gobc_view(what, t.handle(), pa, pb, n, C.int64_t(offset))
	keep(t)
	return owned(r)
}

// ExpandAs returns a view of t expanded to other's shape.
func (t *Tensor) ExpandAs(other *Tensor) (*Tensor, error) {
	r := C.gobc_expand_as(t.handle(), other.handle())
	keep(t, other)
	return owned(r)
}

// Transpose returns a view with dimensions dim0 and dim1 swapped (negative counts from the end).
func (t *Tensor) Transpose(dim0, dim1 int) (*Tensor, error) {
	r := C.gobc_transpose(t.handle(), C.int64_t(dim0), C.int64_t(dim1))
	keep(t)
	return owned(r)
}

// Slice returns the view t[..., start:stop:step, ...] along dim, with Python's rules (negative
// start and stop count from the end and are clamped; step is at least 1).
func (t *Tensor) Slice(dim, start, stop, step int) (*Tensor, error) {
	r := C.gobc_slice(t.handle(), C.int64_t(dim), C.int64_t(start), C.int64_t(stop), C.int64_t(step))
	keep(t)
	return owned(r)
}

// BroadcastTensors returns views of ts expanded to their common shape: all of them, or an error
// and none.
func BroadcastTensors(ts ...*Tensor) ([]*Tensor, error) {
	outs := make([]C.uintptr_t, len(ts)+1) // never empty, so &outs[0] exists
	r := C.gobc_broadcast_tensors(handles(ts), C.size_t(len(ts)), &outs[0])
	keep(ts...)
	if err := check(r); err != nil {
		return nil, err
	}
	res := make([]*Tensor, len(ts))
	for i := range res {
		res[i] = newTensor(outs[i])
	}
	return res, nil
}

// handles passes the handles of ts to C as an array of uintptr_t for the length of one call
// (Go memory holding no pointers; NULL when ts is empty). The caller keeps ts alive.
func handles(ts []*Tensor) *C.uintptr_t {
	if len(ts) == 0 {
		return nil
	}
	hs := make([]C.uintptr_t, len(ts))
	for i, t := range ts {
		hs[i] = t.handle()
	}
	return &hs[0]
}

// LiveCount is the number of live handles in the process (bc_tensor_live_count), for leak checks.
func LiveCount() int { return int(C.bc_tensor_live_count()) }

// IsLive is whether t's handle is live (false once closed).
func (t *Tensor) IsLive() bool {
	live := C.gobc_is_live(t.handle())
	keep(t)
	return bool(live)
}

// Must returns v, or panics with err if it is not nil: for calls whose failure would be a bug in
// the program, as template.Must and regexp.MustCompile are used.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
