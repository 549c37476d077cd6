package broadcast

// #include <stdlib.h>
// #include "shims.h"
import "C"

import "fmt"

// Version is the library's version ("MAJOR.MINOR.PATCH").
func Version() string { return C.GoString(C.bc_version()) }

// The library must be at least as new as the header this package was compiled against, within
// the same major version: an older one may lack functions the package calls.
func init() {
	lib, hdr := Version(), C.BC_VERSION_STRING
	var maj, min int
	if _, err := fmt.Sscanf(lib, "%d.%d", &maj, &min); err != nil || maj != C.BC_VERSION_MAJOR ||
		min < C.BC_VERSION_MINOR {
		panic("broadcast: libbroadcast " + lib + " is loaded, but this package was built against " +
			hdr + " (check LD_LIBRARY_PATH or the rpath)")
	}
}

// SetBroadcastWarning turns the broadcast warning on or off (off by default): operands of
// different shapes that broadcast and have the same number of elements then warn.
func SetBroadcastWarning(on bool) { C.bc_set_broadcast_warning(C.bool(on)) }

// BroadcastWarning is whether the broadcast warning is on.
func BroadcastWarning() bool { return bool(C.bc_get_broadcast_warning()) }

// SetLegacyFallback turns the legacy 1-D pointwise fallback on or off (off by default): operands
// that do not broadcast but have the same number of elements are then computed element by
// element, the result takes the first operand's shape, and a warning is emitted.
func SetLegacyFallback(on bool) { C.bc_set_legacy_fallback(C.bool(on)) }

// LegacyFallback is whether the legacy 1-D fallback is on.
func LegacyFallback() bool { return bool(C.bc_get_legacy_fallback()) }

// SetNumThreads sets how many threads large operations use; 0 means all cores (the default).
func SetNumThreads(n uint) { C.bc_set_num_threads(C.size_t(n)) }

// NumThreads is the number of threads large operations use (never 0).
func NumThreads() int { return int(C.bc_get_num_threads()) }

// SetParallelThreshold sets the number of result elements below which an operation stays on the
// calling thread; 0 restores the default.
func SetParallelThreshold(elements uint) { C.bc_set_parallel_threshold(C.size_t(elements)) }

// BroadcastShapes returns the broadcast of shapes a and b, or the library's error.
func BroadcastShapes(a, b []int) ([]int, error) {
	pa, na := dims(a)
	pb, nb := dims(b)
	d := C.gobc_shape_broadcast(pa, na, pb, nb)
	return ints(&d)
}

// BroadcastShapesN returns the broadcast of any number of shapes (PyTorch's broadcast_shapes).
func BroadcastShapesN(shapes ...[]int) ([]int, error) {
	var flat []int
	ndims := make([]C.size_t, len(shapes)+1) // never empty, so &ndims[0] exists
	for i, s := range shapes {
		flat = append(flat, s...)
		ndims[i] = C.size_t(len(s))
	}
	p, _ := dims(flat)
	d := C.gobc_shape_broadcast_n(p, &ndims[0], C.size_t(len(shapes)))
	return ints(&d)
}

// IsBroadcastable is whether shapes a and b broadcast together. Not broadcastable is an answer,
// not an error: the error is for invalid shapes (a negative size).
func IsBroadcastable(a, b []int) (bool, error) {
	pa, na := dims(a)
	pb, nb := dims(b)
	r := C.gobc_shape_is_broadcastable(pa, na, pb, nb)
	return r.val != 0, check(r)
}
