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

// BroadcastTo returns a view of t expanded to shape, as Expand (NumPy's and PyTorch's
// broadcast_to).
func (t *Tensor) BroadcastTo(shape ...int) (*Tensor, error) { return t.view(3, shape, nil, 0) }

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

// View returns a view of t with the shape sizes (PyTorch's view): the same elements in
// row-major order, without a copy. One size may be -1, inferred from the number of elements.
// When t's strides do not allow such a view (a transposed tensor flattened), the *Error has
// kind KindViewStrides: use Reshape.
func (t *Tensor) View(sizes ...int) (*Tensor, error) { return t.view(4, sizes, nil, 0) }

// Reshape returns t with the shape sizes (PyTorch's reshape): a view, as View, when t's strides
// allow one, else a row-major copy that no longer shares t's elements. One size may be -1.
func (t *Tensor) Reshape(sizes ...int) (*Tensor, error) { return t.view(5, sizes, nil, 0) }

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

// Unsqueeze returns a view of t with a dimension of size 1 inserted at dim (PyTorch's
// unsqueeze), from -(NDim+1) to NDim, negative counting from the end of the result.
func (t *Tensor) Unsqueeze(dim int) (*Tensor, error) { return t.dimView(0, dim, 0) }

// Squeeze returns a view of t without dimension dim when its size is 1, else a view of t as it
// is (PyTorch's squeeze(dim)); negative dim counts from the end.
func (t *Tensor) Squeeze(dim int) (*Tensor, error) { return t.dimView(1, dim, 0) }

// SqueezeAll returns a view of t without any of its size-1 dimensions (PyTorch's squeeze()).
func (t *Tensor) SqueezeAll() (*Tensor, error) { return t.dimView(2, 0, 0) }

// Flatten returns t with dimensions start to end (both included; negative counts from the end)
// merged into one (PyTorch's flatten): a view when t's strides allow one, else a copy, as
// Reshape. A 0-d tensor becomes 1-d.
func (t *Tensor) Flatten(start, end int) (*Tensor, error) { return t.dimView(3, start, end) }

func (t *Tensor) dimView(what C.int, d0, d1 int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_dim_view(what, h, C.int64_t(d0), C.int64_t(d1))
	keep(t)
	return owned(r)
}

// ExpandAs returns a view of t expanded to other's shape.
func (t *Tensor) ExpandAs(other *Tensor) (*Tensor, error) {
	hs, err := refs4(t, other)
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
		res[i] = newTensor(outs[i], 0)
	}
	return res, nil
}
