package broadcast

// #include "shims.h"
import "C"

import "strconv"

// Reduction is a reduction over dimensions, with PyTorch's semantics: Sum and Prod of Bool and
// integers give Int64, Mean of them is refused, Amax and Amin keep the type. Its values are the
// library's own codes.
type Reduction int32

// The reductions.
const (
	Sum  Reduction = 0 // the sum of the elements
	Mean Reduction = 1 // the sum divided by the number of elements; floating types only
	Prod Reduction = 2 // the product of the elements
	Amax Reduction = 3 // the largest element; NaN if any element is NaN; refused over nothing
	Amin Reduction = 4 // the smallest element; NaN if any element is NaN; refused over nothing
)

var reductionNames = [...]string{"sum", "mean", "prod", "amax", "amin"}

// String is the reduction's name in PyTorch and the library ("sum", "mean", ...), or
// "Reduction(n)" for a code this package does not know.
func (r Reduction) String() string {
	if r >= 0 && int(r) < len(reductionNames) {
		return reductionNames[r]
	}
	return "Reduction(" + strconv.Itoa(int(r)) + ")"
}

// Apply reduces t over the dimensions listed in over (negative ones count from the end; none
// means every dimension, as PyTorch's dim=None), keeping each reduced dimension as size 1 when
// keepdim is true (bc_reduce).
func (r Reduction) Apply(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	p, n := dims(over)
	res := C.gobc_reduce(C.int32_t(r), h, p, n, C.bool(keepdim))
	keep(t)
	return owned(res)
}

// SumToSize returns t summed back to shape, undoing a broadcast (PyTorch's t.sum_to_size(shape),
// bc_tensor_sum_to_size): a view of t when nothing is summed.
func (t *Tensor) SumToSize(shape ...int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	p, n := dims(shape)
	res := C.gobc_sum_to_size(h, p, n)
	keep(t)
	return owned(res)
}

// SumTo returns a op b summed to shape without making a op b (bc_binary_sum_to): what Apply
// followed by SumToSize gives, errors and bits, reading the inputs once.
func (op Op) SumTo(a, b *Tensor, shape ...int) (*Tensor, error) {
	hs, err := refs4(a, b)
	if err != nil {
		return nil, err
	}
	p, n := dims(shape)
	res := C.gobc_binary_sum_to(C.int32_t(op), hs[0], hs[1], p, n)
	keep(a, b)
	return owned(res)
}
