package broadcast

// #include "shims.h"
import "C"

import "fmt"

// Views share their tensor's elements: writing through one is seen by the other. Each is a
// tensor of its own, to Close on its own; closing the tensor a view was made from does not
// invalidate the view.

// Expand returns a view of t expanded to sizes (PyTorch's expand): size-1 dimensions repeat with
// stride 0, new leading dimensions may be added, and -1 keeps a size.
func (t *Tensor) Expand(sizes ...int) (*Tensor, error) { return t.view(0, sizes, nil, 0) }

// BroadcastTo is Expand under NumPy's name.
func (t *Tensor) BroadcastTo(shape ...int) (*Tensor, error) { return t.Expand(shape...) }

// Permute returns a view whose dimension i is dimension dims[i] of t (negative counts from the
// end); dims lists every dimension of t once.
func (t *Tensor) Permute(dims ...int) (*Tensor, error) { return t.view(1, dims, nil, 0) }

// AsStrided returns any view over t's storage: shape, strides (in elements, not negative) and an
// absolute offset from the start of the storage. Every element must lie inside the storage.
func (t *Tensor) AsStrided(shape, strides []int, offset int) (*Tensor, error) {
	if len(strides) != len(shape) {
		return nil, goError(ErrInvalidArg, KindInvalidArgument, fmt.Sprintf(
			"AsStrided takes one stride per size: %d sizes and %d strides", len(shape), len(strides)))
	}
	return t.view(2, shape, strides, offset)
}

func (t *Tensor) view(what C.int, a, b []int, offset int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	pa, n := dims(a)
	pb, _ := dims(b)
	r := C.gobc_view(what, h, pa, pb, n, C.int64_t(offset))
	keep(t)
	return owned(r)
}

// ExpandAs returns a view of t expanded to other's shape.
func (t *Tensor) ExpandAs(other *Tensor) (*Tensor, error) {
	hs, err := refs(t, other)
	if err != nil {
		return nil, err
	}
	r := C.gobc_expand_as(hs[0], hs[1])
	keep(t, other)
	return owned(r)
}

// Transpose returns a view with dimensions dim0 and dim1 swapped (negative counts from the end).
func (t *Tensor) Transpose(dim0, dim1 int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_transpose(h, C.int64_t(dim0), C.int64_t(dim1))
	keep(t)
	return owned(r)
}

// Slice returns the view t[..., start:stop:step, ...] along dim, with Python's rules (negative
// start and stop count from the end and are clamped; step is at least 1).
func (t *Tensor) Slice(dim, start, stop, step int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_slice(h, C.int64_t(dim), C.int64_t(start), C.int64_t(stop), C.int64_t(step))
	keep(t)
	return owned(r)
}

// BroadcastTensors returns views of ts expanded to their common shape: all of them, or an error
// and none.
func BroadcastTensors(ts ...*Tensor) ([]*Tensor, error) {
	hs, err := refs(ts...)
	if err != nil {
		return nil, err
	}
	outs := make([]C.uintptr_t, len(ts)+1) // never empty, so &outs[0] exists
	r := C.gobc_broadcast_tensors(&hs[0], C.size_t(len(ts)), &outs[0])
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
