package broadcast

// #include <stdlib.h>
// #include "shims.h"
import "C"

import (
	"runtime"
	"unsafe"
)

// check turns a shim's outcome into a Go error (nil on success), freeing the captured record.
func check(r C.gobc_res) error {
	if r.status == C.BC_OK {
		return nil
	}
	return newError(Status(r.status), r.err)
}

// failure turns a hot shim's failure record (shims.h) into an *Error, or nil for none. (A
// separate function from failed, so that the check for nil is inlined.)
func failure(rec *C.gobc_err) error {
	if rec == nil {
		return nil
	}
	return failed(rec)
}

// failed turns a hot shim's failure record into an *Error and frees it; one without a message is
// a static record of the status alone (no memory to capture the failure), not freed.
func failed(rec *C.gobc_err) *Error {
	if rec.msg == nil {
		return newError(Status(rec.status), nil)
	}
	return newError(Status(rec.status), rec)
}

// owned turns a shim's outcome into a new owned tensor.
func owned(r C.gobc_res) (*Tensor, error) {
	if err := check(r); err != nil {
		return nil, err
	}
	return newTensor(r.out, int64(r.nbytes)), nil
}

// ints turns a shim's dimensions into a Go slice ([]int{} for 0-d, never nil on success).
func ints(d *C.gobc_dims) ([]int, error) {
	if d.status != C.BC_OK {
		return nil, newError(Status(d.status), d.err)
	}
	out := make([]int, int(d.ndim))
	for i := range out {
		out[i] = int(d.dims[i])
	}
	return out, nil
}

// dims passes a []int to C as (const int64_t *, size_t) for the length of one call: without a
// copy where int is 64 bits wide (the Go memory holds no pointers, so cgo allows it), and
// (NULL, 0) for an empty shape.
func dims(s []int) (*C.int64_t, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	if unsafe.Sizeof(int(0)) == unsafe.Sizeof(C.int64_t(0)) {
		return (*C.int64_t)(unsafe.Pointer(&s[0])), C.size_t(len(s))
	}
	c := make([]C.int64_t, len(s))
	for i, v := range s {
		c[i] = C.int64_t(v)
	}
	return &c[0], C.size_t(len(s))
}

// keep is runtime.KeepAlive for several tensors: none of them may be finalized before the C
// call that used their handles has returned.
func keep(ts ...*Tensor) {
	for _, t := range ts {
		runtime.KeepAlive(t)
	}
}

// newError builds an *Error from a captured record and frees the record. A NULL record (no
// memory to capture the failure) gives the status alone, described by bc_status_str.
func newError(s Status, rec *C.gobc_err) *Error {
	if rec == nil {
		return &Error{Status: s, Kind: KindNone, Dim: -1, SizeA: -1, SizeB: -1, Arg: -1,
			DTypeA: -1, DTypeB: -1, Message: s.Error()}
	}
	defer C.free(unsafe.Pointer(rec))
	in := &rec.info
	return &Error{
		Status:  s,
		Kind:    ErrorKind(in.kind),
		Dim:     int(in.dim),
		SizeA:   int(in.size_a),
		SizeB:   int(in.size_b),
		Arg:     int(in.arg),
		DTypeA:  DType(in.dtype_a),
		DTypeB:  DType(in.dtype_b),
		ShapeA:  errShape(rec.ndim_a, rec.shape_a[:]),
		ShapeB:  errShape(rec.ndim_b, rec.shape_b[:]),
		Message: C.GoStringN(rec.msg, C.int(rec.msg_len)),
	}
}

func errShape(ndim C.int64_t, dims []C.int64_t) []int {
	if ndim < 0 || int(ndim) > len(dims) {
		return nil
	}
	out := make([]int, int(ndim))
	for i := range out {
		out[i] = int(dims[i])
	}
	return out
}
