package broadcast

// #include "shims.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// DataPointer returns the address of t's first element (element (0, 0, ...), after the offset),
// the number of bytes from there to the end of t's storage, and whether writing through the
// address is allowed (not for memory shared read-only, nor for a broadcast view, whose elements
// share memory). Element (i0, i1, ...) lies at ptr + (i0*Strides()[0] + i1*Strides()[1] + ...) *
// DType().Size(). For a tensor without elements, ptr must not be read or written.
//
// The memory is the library's, outside Go's heap: it stays valid, and does not move, for as long
// as t, a view of t, a tensor t is a view of, or a DLPack export of any of them is live. Keep t
// alive while using ptr (runtime.KeepAlive(t) after the last use), and do not write while
// another goroutine runs an operation reading or writing the same memory.
func (t *Tensor) DataPointer() (ptr unsafe.Pointer, nbytes int, writable bool, err error) {
	h, err := t.ref()
	if err != nil {
		return nil, 0, false, err
	}
	var data unsafe.Pointer
	var w C.bool
	r := C.gobc_data(h, &data, &w)
	keep(t)
	if err := check(r); err != nil {
		return nil, 0, false, err
	}
	return data, int(r.val), bool(w), nil
}

// ToDLPack shares t through DLPack 1.x without copying, for another library that takes DLPack
// tensors: the result is a *DLManagedTensorVersioned (DLPack's C struct) that keeps t's memory
// alive until its deleter is called, exactly once, by whoever consumes it; t itself may be
// closed before that. Its read-only flag is set when t must not be written. Give it to one
// consumer only; never free it from Go.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) { return t.toDLPack(0) }

// ToDLPackUnversioned shares t through the older, unversioned DLPack struct (a *DLManagedTensor),
// as ToDLPack does. That struct cannot mark a tensor read-only, so a tensor that must not be
// written is refused (ErrReadOnly, KindReadOnlyLegacyExport): use ToDLPack, or export a
// Contiguous copy.
func (t *Tensor) ToDLPackUnversioned() (unsafe.Pointer, error) { return t.toDLPack(1) }

func (t *Tensor) toDLPack(what C.int) (unsafe.Pointer, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	var m unsafe.Pointer
	r := C.gobc_dlpack(what, h, nil, &m)
	keep(t)
	if err := check(r); err != nil {
		return nil, err
	}
	return m, nil
}

// FromDLPack returns a tensor over the memory a DLPack 1.x producer shares, without copying: m
// is a *DLManagedTensorVersioned (DLPack's C struct, in C memory) describing CPU memory of one of
// the ten dtypes, with strides not negative. With DLPack's read-only flag, the tensor and its
// views refuse writes (ErrReadOnly). On success the library owns m and calls its deleter once,
// when the last tensor over the memory is closed; on failure the caller still owns m.
func FromDLPack(m unsafe.Pointer) (*Tensor, error) { return fromDLPack(2, m) }

// FromDLPackUnversioned is FromDLPack for the older, unversioned struct (a *DLManagedTensor),
// which has no read-only flag: the tensor is writable.
func FromDLPackUnversioned(m unsafe.Pointer) (*Tensor, error) { return fromDLPack(3, m) }

func fromDLPack(what C.int, m unsafe.Pointer) (*Tensor, error) {
	return owned(C.gobc_dlpack(what, 0, m, nil))
}

// WrapC returns a tensor over memory outside Go's heap (from C.malloc, or owned by another C
// library), without a copy: element (i0, i1, ...) is at data + (offset + i0*strides[0] + ...) *
// dtype.Size(). Strides and offset count elements and may not be negative; nil strides mean
// row-major. Every element must lie within the nbytes bytes at data, and data must be aligned
// to the element size. The library may read the memory and, through in-place and Out
// operations, write it.
//
// release, when not nil, is a C function void release(void *userData) (for example
// unsafe.Pointer(C.free) with userData the buffer): it runs exactly once, when the last tensor
// sharing the memory (this one and every view of it) is closed, on the thread that closes it.
// Until then the memory must stay valid. When WrapC fails, release is not called and the
// memory stays the caller's. Memory from Go's heap must not be given: cgo does not let C keep
// it past a call.
func WrapC(dtype DType, data unsafe.Pointer, nbytes int, shape, strides []int, offset int,
	release, userData unsafe.Pointer) (*Tensor, error) {
	if strides != nil && len(strides) != len(shape) {
		return nil, goError(ErrInvalidArg, KindInvalidArgument, fmt.Sprintf(
			"WrapC takes one stride per size (or nil strides): %d sizes and %d strides", len(shape), len(strides)))
	}
	ps, n := dims(shape)
	pt, _ := dims(strides)
	return owned(C.gobc_wrap(C.int32_t(dtype), data, C.size_t(nbytes), ps, pt, n, C.int64_t(offset),
		release, userData))
}
