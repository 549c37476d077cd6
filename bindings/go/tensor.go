package broadcast

// #include "shims.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Tensor owns one libbroadcast handle. Close frees it (a small result's a little later, with
// others: see the package documentation, Memory); a finalizer frees it too if a
// Tensor becomes unreachable while still open, after a garbage collection (the second one for a
// small result, which gets its finalizer only if it outlives its first collection), which the
// package brings about when the storage of open tensors grows (see the package documentation,
// Memory). Close (or defer Close) is still the better way: nothing waits for a collection.
//
// A Tensor may be used from several goroutines at once, except that one being written (the
// target of an in-place operation, or an Out destination) must not be used by another goroutine
// at the same time. Every method and function that can fail returns an *Error when given a closed
// Tensor (status ErrInvalidHandle, kind KindInvalidHandle, message "tensor is closed"); the
// accessors that return no error (DType, Shape, ...) each say what they return for one.
type Tensor struct {
	// The handle, as a number: it is a token the library checks, not an address, and
	// may fall inside the Go heap's address range, so it is never held in a pointer type. Set
	// when the tensor is made and never changed: st tells whether it is still this tensor's.
	h uintptr
	// st is where the tensor is in its life (young.go): stYoung, stYoungClosed, stArmed or
	// stClosed. Changed only by compare-and-swap once the tensor is shared, so that exactly one
	// party frees the handle; always read and written through sync/atomic's functions (an
	// atomic.Int32's methods would put Close over the compiler's inlining budget).
	st int32
	// nb is the bytes of storage the library allocated for this tensor (0 for a view), counted
	// while it is open (unclosed.go), as packBytes packs them: in 4 bytes, so that a Tensor takes
	// 16 bytes, not 24 (the allocation of a small result's Tensor is a good part of the cost the
	// package adds to it).
	nb uint32
}

// bigBytes marks a storage count packed in MiB: those of 2 GiB and more.
const bigBytes = 1 << 31

// packBytes packs the storage count n for Tensor.nb: exactly below 2 GiB, else in whole MiB
// (rounded down; up to 2 PiB). The count that is added when a tensor opens and subtracted when it
// closes is the packed one, both times.
func packBytes(n int64) uint32 {
	switch {
	case n <= 0:
		return 0
	case n < bigBytes:
		return uint32(n)
	case n>>20 < bigBytes:
		return bigBytes | uint32(n>>20)
	}
	return bigBytes | (bigBytes - 1)
}

// nbytes is the storage count of t (Tensor.nb).
func (t *Tensor) nbytes() int64 {
	if t.nb < bigBytes {
		return int64(t.nb)
	}
	return int64(t.nb&^bigBytes) << 20
}

// newTensor owns the handle h, whose new storage takes nbytes (counted by adopt).
func newTensor(h C.uintptr_t, nbytes int64) *Tensor {
	t := &Tensor{h: uintptr(h), nb: packBytes(nbytes)}
	adopt(t)
	return t
}

// Close frees the handle. It may be called any number of times, from any goroutine; only the
// first call frees. (The handle of a small result closed while young is freed a little later:
// young.go. Nothing can use it meanwhile, and LiveCount frees those first.)
func (t *Tensor) Close() {
	// Inlined: a young tensor's Close is one compare-and-swap (young.go frees its handle).
	if t != nil && atomic.CompareAndSwapInt32(&t.st, stYoung, stYoungClosed) {
		return
	}
	t.closeOther()
}

// closeOther is Close of nil, or of a tensor not young when Close began.
func (t *Tensor) closeOther() {
	if t == nil {
		return
	}
	for {
		switch atomic.LoadInt32(&t.st) {
		case stYoung:
			if atomic.CompareAndSwapInt32(&t.st, stYoung, stYoungClosed) {
				return
			}
		case stArmed:
			if t.free() {
				runtime.SetFinalizer(t, nil)
			}
			return
		default:
			return // closed already
		}
	}
}

// free frees the handle of an armed tensor unless it is closed already (Close and the
// finalizer: only one of them frees it), and reports whether it did.
func (t *Tensor) free() bool {
	if !atomic.CompareAndSwapInt32(&t.st, stArmed, stClosed) {
		return false
	}
	C.gobc_free(C.uintptr_t(t.h))
	if t.nbytes() > 0 {
		closed(t.nbytes())
	}
	if hook := freeHook.Load(); hook != nil {
		(*hook)(t.h)
	}
	return true
}

// freeHook, when set, sees every handle the package frees (tests count frees with it).
var freeHook atomic.Pointer[func(uintptr)]

// handle is the handle for one C call (0 for a nil or closed tensor). The caller keeps t alive
// until the call returns (keep). Calls that report errors take the handle through ref.
func (t *Tensor) handle() C.uintptr_t {
	if t == nil {
		return 0
	}
	if debugGC {
		runtime.GC() // -tags bcdebug: a missing keep shows up as a freed handle
	}
	if atomic.LoadInt32(&t.st) >= stYoungClosed {
		return 0
	}
	return C.uintptr_t(t.h)
}

// ref is the handle for one C call, or the *Error for a closed tensor. A nil *Tensor passes as
// NULL, which the library refuses with ErrNullArg and a message naming the argument. The
// caller keeps t alive until the call returns (keep).
func (t *Tensor) ref() (C.uintptr_t, error) {
	h := t.handle()
	if h == 0 && t != nil {
		return 0, errClosed()
	}
	return h, nil
}

// errClosed is the failure of every call given a closed tensor.
func errClosed() *Error { return goError(ErrInvalidHandle, KindInvalidHandle, "tensor is closed") }

// refs are the handles of ts for one C call (as ref), in an array never empty (so that C can be
// given &hs[0]; C reads only len(ts) of them).
func refs(ts ...*Tensor) ([]C.uintptr_t, error) {
	hs := make([]C.uintptr_t, len(ts)+1)
	for i, t := range ts {
		h, err := t.ref()
		if err != nil {
			return nil, err
		}
		hs[i] = h
	}
	return hs, nil
}

// open2 is the handles of a and b for one C call (as ref); ok is false when either is closed, and
// the call then returns errClosed(). Unlike refs4 it is inlined: a binary operation into out took
// a tenth of its time in refs4. A third operand is checked beside it, as t.handle() != 0 || t ==
// nil.
func open2(a, b *Tensor) (ha, hb C.uintptr_t, ok bool) {
	ha, hb = a.handle(), b.handle()
	return ha, hb, (ha != 0 || a == nil) && (hb != 0 || b == nil)
}

// refs4 is refs for the fixed operands of one operation (at most four), without an allocation.
func refs4(ts ...*Tensor) (hs [4]C.uintptr_t, err error) {
	for i, t := range ts {
		if hs[i], err = t.ref(); err != nil {
			return hs, err
		}
	}
	return hs, nil
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
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_copy(what, h, C.int32_t(dtype))
	keep(t)
	return owned(r)
}

// query runs a query that fails only on a closed tensor (or one closed during the call); it then
// gives ok false.
func (t *Tensor) query(what C.int) (v int64, ok bool) {
	h := t.handle()
	if h == 0 {
		return 0, false
	}
	r := C.gobc_query(what, h)
	keep(t)
	if err := check(r); err != nil {
		return 0, false
	}
	return int64(r.val), true
}

// DType is the element type; DType(-1) (whose String is "unknown") for a closed tensor.
func (t *Tensor) DType() DType {
	v, ok := t.query(0)
	if !ok {
		return -1
	}
	return DType(v)
}

// NDim is the number of dimensions (0 for a 0-d tensor); -1 for a closed tensor.
func (t *Tensor) NDim() int {
	v, ok := t.query(1)
	if !ok {
		return -1
	}
	return int(v)
}

// Numel is the number of elements (1 for a 0-d tensor); -1 for a closed tensor.
func (t *Tensor) Numel() int {
	v, ok := t.query(2)
	if !ok {
		return -1
	}
	return int(v)
}

// Offset is the offset of the first element in the storage, in elements; -1 for a closed
// tensor.
func (t *Tensor) Offset() int {
	v, ok := t.query(3)
	if !ok {
		return -1
	}
	return int(v)
}

// IsContiguous is whether t is row-major without gaps; false for a closed tensor.
func (t *Tensor) IsContiguous() bool {
	v, _ := t.query(4)
	return v != 0
}

// Shape is the sizes of the dimensions ([]int{} for a 0-d tensor); nil for a closed tensor.
func (t *Tensor) Shape() []int { return t.dims(0) }

// Strides are the strides in elements (0 along broadcast dimensions); nil for a closed tensor.
func (t *Tensor) Strides() []int { return t.dims(1) }

func (t *Tensor) dims(strides C.int) []int {
	h := t.handle()
	if h == 0 {
		return nil
	}
	d := C.gobc_tensor_dims(h, strides)
	keep(t)
	s, err := ints(&d)
	if err != nil {
		return nil
	}
	return s
}

// CopyTo copies t's elements in row-major order into dst, which must have at least Numel
// elements, and whose element type must be t's dtype (else an *Error with status ErrDType).
func CopyTo[T Elem](t *Tensor, dst []T) error {
	if err := checkElem[T](t); err != nil {
		return err
	}
	return copyTo(t, dst)
}

// copyTo is CopyTo once the element type is checked.
func copyTo[T Elem](t *Tensor, dst []T) error {
	h, err := t.ref()
	if err != nil {
		return err
	}
	var ptr unsafe.Pointer
	if len(dst) > 0 {
		ptr = unsafe.Pointer(&dst[0])
	}
	var z T
	nbytes := C.size_t(uintptr(len(dst)) * unsafe.Sizeof(z))
	r := C.gobc_copy_to(h, ptr, nbytes)
	keep(t)
	runtime.KeepAlive(dst)
	return check(r)
}

// Data returns a copy of t's elements in row-major order. T must be the Go type of t's dtype
// (see Elem), else the *Error has status ErrDType.
func Data[T Elem](t *Tensor) ([]T, error) {
	if err := checkElem[T](t); err != nil {
		return nil, err
	}
	n := t.Numel()
	if n < 0 {
		return nil, errClosed()
	}
	out := make([]T, n)
	if err := copyTo(t, out); err != nil {
		return nil, err
	}
	return out, nil
}

// At returns the element of t at the given indices, one per dimension (none for a 0-d tensor),
// each from 0 to its dimension's size - 1. T must be the Go type of t's dtype (see Elem), else
// the *Error has status ErrDType; indices of the wrong number or out of range give an *Error
// with status ErrInvalidArg.
func At[T Elem](t *Tensor, idx ...int) (T, error) {
	var v T
	if err := checkElem[T](t); err != nil {
		return v, err
	}
	shape := t.Shape()
	if len(idx) != len(shape) {
		return v, goError(ErrInvalidArg, KindInvalidArgument, fmt.Sprintf(
			"At takes one index per dimension: %d given for a tensor of %d dimensions", len(idx), len(shape)))
	}
	for d, i := range idx {
		if i < 0 || i >= shape[d] {
			return v, goError(ErrInvalidArg, KindInvalidArgument, fmt.Sprintf(
				"index %d is out of bounds for dimension %d with size %d", i, d, shape[d]))
		}
	}
	h, err := t.ref()
	if err != nil {
		return v, err
	}
	p, n := dims(idx)
	r := C.gobc_at(h, p, n, unsafe.Pointer(&v))
	keep(t)
	return v, check(r)
}

// checkElem is nil when t is open and its elements are Go values of type T; else the *Error:
// for a mismatch, status ErrDType with DTypeA t's dtype and DTypeB T's.
func checkElem[T Elem](t *Tensor) error {
	if t == nil {
		return goError(ErrNullArg, KindNullArg, "tensor is nil")
	}
	if _, err := t.ref(); err != nil {
		return err
	}
	want, have := DTypeOf[T](), t.DType()
	if have == want {
		return nil
	}
	if have < 0 {
		return errClosed() // closed since the check above
	}
	e := goError(ErrDType, KindNone, fmt.Sprintf("cannot read %s elements as %s", have, want))
	e.DTypeA, e.DTypeB = have, want
	return e
}

// LiveCount is the number of live handles in the process (bc_tensor_live_count), for leak checks.
// The handles of closed tensors that wait to be freed (young.go) are freed first, so they are not
// counted.
func LiveCount() int {
	sweepYoung()
	return liveHandles()
}

// liveHandles is bc_tensor_live_count, without the sweep.
func liveHandles() int { return int(C.bc_tensor_live_count()) }

// IsLive is whether t's handle is live (false once closed, and for nil).
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
