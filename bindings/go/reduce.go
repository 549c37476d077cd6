package broadcast

// #include "shims.h"
import "C"

// Reduction is a reduction over dimensions (a BC_REDUCE_* code), with PyTorch's semantics as
// include/broadcast.h and docs/semantics.md (section 14) document them: Sum and Prod of Bool and
// integers give Int64, Mean of them is refused, Amax and Amin keep the type.
type Reduction int32

// The reductions.
const (
	Sum  Reduction = C.BC_REDUCE_SUM
	Mean Reduction = C.BC_REDUCE_MEAN // floating types only
	Prod Reduction = C.BC_REDUCE_PROD
	Amax Reduction = C.BC_REDUCE_AMAX // NaN if any element is NaN; refused over nothing
	Amin Reduction = C.BC_REDUCE_AMIN // NaN if any element is NaN; refused over nothing
)

// The error kinds of reductions, with the numbers of include/broadcast.h.
const (
	KindDimOutOfRange  ErrorKind = C.BC_ERROR_KIND_DIM_OUT_OF_RANGE
	KindDimRepeated    ErrorKind = C.BC_ERROR_KIND_DIM_REPEATED
	KindEmptyReduction ErrorKind = C.BC_ERROR_KIND_EMPTY_REDUCTION
	KindReduceDType    ErrorKind = C.BC_ERROR_KIND_REDUCE_DTYPE
	KindNotExpandable  ErrorKind = C.BC_ERROR_KIND_NOT_EXPANDABLE
)

// Apply reduces t over the dimensions listed in over (negative ones count from the end; none
// means every dimension, as PyTorch's dim=None), keeping each reduced dimension as size 1 when
// keepdim is true (bc_reduce).
func (r Reduction) Apply(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	p, n := dims(over)
	res := C.gobc_reduce(C.int32_t(r), t.handle(), p, n, C.bool(keepdim))
	keep(t)
	return owned(res)
}

// SumToSize returns t summed back to shape, undoing a broadcast (PyTorch's t.sum_to_size(shape),
// bc_tensor_sum_to_size): a view of t when nothing is summed.
func (t *Tensor) SumToSize(shape ...int) (*Tensor, error) {
	p, n := dims(shape)
	res := C.gobc_sum_to_size(t.handle(), p, n)
	keep(t)
	return owned(res)
}

// SumTo returns a op b summed to shape without making a op b (bc_binary_sum_to): what Apply
// followed by SumToSize gives, errors and bits, reading the inputs once.
func (op Op) SumTo(a, b *Tensor, shape ...int) (*Tensor, error) {
	p, n := dims(shape)
	res := C.gobc_binary_sum_to(C.int32_t(op), a.handle(), b.handle(), p, n)
	keep(a, b)
	return owned(res)
}
