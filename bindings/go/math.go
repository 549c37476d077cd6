package broadcast

// #include "shims.h"
import "C"

import (
	"strconv"
	"unsafe"
)

// UnaryOp is an elementwise operation of one tensor (torch.<name>(x)): the floating functions
// (Sqrt, Exp, Sin, ...) give Float32 for integer and Bool inputs and keep a floating input's
// type; the predicates (Isnan, Isinf, Isfinite, Signbit, LogicalNot) give Bool; the others keep
// the input's type. Each has three forms: Apply, InPlace and Out. Its constants are generated
// from the library's table (unary_ops.go).
type UnaryOp int32

// String is the operation's name in PyTorch and the library ("sqrt", "logical_not", ...), or
// "UnaryOp(n)" for a code this package does not know.
func (op UnaryOp) String() string {
	if op >= 0 && int(op) < len(unaryNames) {
		return unaryNames[op]
	}
	return "UnaryOp(" + strconv.Itoa(int(op)) + ")"
}

// HasInPlace reports whether the operation has an in-place form (PyTorch has none for Isnan,
// Isinf, Isfinite and Signbit, whose result is Bool).
func (op UnaryOp) HasInPlace() bool {
	return op >= 0 && int(op) < len(unaryInPlace) && unaryInPlace[op]
}

// Apply returns op(x) in a new tensor of x's shape and PyTorch's result type.
func (op UnaryOp) Apply(x *Tensor) (*Tensor, error) {
	h, err := x.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_unary(0, C.int32_t(op), h, 0)
	keep(x)
	return owned(r)
}

// InPlace computes x = op(x); the result type must be castable to x's type. When it fails, x is
// unchanged.
func (op UnaryOp) InPlace(x *Tensor) error {
	h, err := x.ref()
	if err != nil {
		return err
	}
	r := C.gobc_unary(1, C.int32_t(op), h, 0)
	keep(x)
	return check(r)
}

// Out writes op(x) into out (destination first), which must have x's shape and a type the
// operation accepts there; when it fails, out is unchanged.
func (op UnaryOp) Out(out, x *Tensor) error {
	hs, err := refs4(x, out)
	if err != nil {
		return err
	}
	r := C.gobc_unary(2, C.int32_t(op), hs[0], hs[1])
	keep(out, x)
	return check(r)
}

// Var returns the variance of t over the dimensions in over (none: every dimension): the sum of
// squared deviations from the mean over n - correction (1: Bessel's correction; 0: the
// population variance), computed in float64 and rounded once; floating types only. With
// correction at least n the result is inf or NaN, and the library warns (Warnings).
func Var(t *Tensor, correction float64, keepdim bool, over ...int) (*Tensor, error) {
	return varStd(false, t, correction, keepdim, over)
}

// Std returns the standard deviation, the square root of Var.
func Std(t *Tensor, correction float64, keepdim bool, over ...int) (*Tensor, error) {
	return varStd(true, t, correction, keepdim, over)
}

func varStd(isStd bool, t *Tensor, correction float64, keepdim bool, over []int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	p, n := dims(over)
	r := C.gobc_var_std(C.bool(isStd), h, p, n, C.double(correction), C.bool(keepdim))
	keep(t)
	return owned(r)
}

func reduceMore(which int, t *Tensor, keepdim bool, over []int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	p, n := dims(over)
	if len(over) == 0 {
		p = nil // every dimension
	}
	r := C.gobc_reduce_more(C.int(which), h, p, n, C.bool(keepdim))
	keep(t)
	return owned(r)
}

// All reports whether every element over the dimensions in over (none: every dimension) is
// non-zero (NaN counts as non-zero): Bool, or Uint8 for a Uint8 t; an empty slice gives true.
func All(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	return reduceMore(0, t, keepdim, over)
}

// Any reports whether some element is non-zero, as All; an empty slice gives false.
func Any(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	return reduceMore(1, t, keepdim, over)
}

// Logsumexp returns log(sum(exp(t))) over the dimensions in over (none: every dimension), as
// max + log(sum(exp(t - max))) in float64, rounded once; integers and Bool give Float32.
func Logsumexp(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	return reduceMore(2, t, keepdim, over)
}

// Nansum returns the sum with NaN counted as 0, as Sum.Apply otherwise.
func Nansum(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	return reduceMore(3, t, keepdim, over)
}

// Nanmean returns the mean of the non-NaN elements (NaN where there are none); floating types
// only.
func Nanmean(t *Tensor, keepdim bool, over ...int) (*Tensor, error) {
	return reduceMore(4, t, keepdim, over)
}

func argExtreme(isMax bool, t *Tensor, keepdim bool, dim []int) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	if len(dim) > 1 {
		return nil, goError(ErrInvalidArg, KindInvalidArgument, "at most one dimension")
	}
	var d C.int64_t
	var p *C.int64_t
	if len(dim) == 1 {
		d = C.int64_t(dim[0])
		p = (*C.int64_t)(unsafe.Pointer(&d))
	}
	r := C.gobc_arg_extreme(C.bool(isMax), h, p, C.bool(keepdim))
	keep(t)
	return owned(r)
}

// Argmax returns the Int64 index of the largest element along dim (at most one; none: the
// index in the row-major flattened t): the first of equal ones, the first NaN when there is one.
func Argmax(t *Tensor, keepdim bool, dim ...int) (*Tensor, error) {
	return argExtreme(true, t, keepdim, dim)
}

// Argmin returns the Int64 index of the smallest element, as Argmax.
func Argmin(t *Tensor, keepdim bool, dim ...int) (*Tensor, error) {
	return argExtreme(false, t, keepdim, dim)
}

// ternary runs a three-operand operation: form 0 new, 1 in place (into input), 2 into out.
func ternary(form, which int, input, b, c, out *Tensor, value Number) (*Tensor, error) {
	hs, err := refs4(input, b, c, out)
	if err != nil {
		return nil, err
	}
	r := C.gobc_ternary(C.int(form), C.int(which), hs[0], hs[1], hs[2], value.c, hs[3])
	keep(input, b, c, out)
	if form == 0 {
		return owned(r)
	}
	return nil, check(r)
}

var one = NumberOf(1)

// Lerp returns input + weight * (end - input) (torch.lerp), the three broadcast together;
// floating types only, end (and weight unless 0-d) of input's type.
func Lerp(input, end, weight *Tensor) (*Tensor, error) {
	return ternary(0, 0, input, end, weight, nil, one)
}

// LerpInPlace computes input = Lerp(input, end, weight); input's shape must be the broadcast one.
func LerpInPlace(input, end, weight *Tensor) error {
	_, err := ternary(1, 0, input, end, weight, nil, one)
	return err
}

// LerpOut writes Lerp(input, end, weight) into out (destination first).
func LerpOut(out, input, end, weight *Tensor) error {
	_, err := ternary(2, 0, input, end, weight, out, one)
	return err
}

func lerpNumber(form int, input, end *Tensor, weight Number, out *Tensor) (*Tensor, error) {
	hs, err := refs4(input, end, out)
	if err != nil {
		return nil, err
	}
	r := C.gobc_lerp_scalar(C.int(form), hs[0], hs[1], weight.c, hs[2])
	keep(input, end, out)
	if form == 0 {
		return owned(r)
	}
	return nil, check(r)
}

// LerpNumber is Lerp with a number weight.
func LerpNumber(input, end *Tensor, weight Number) (*Tensor, error) {
	return lerpNumber(0, input, end, weight, nil)
}

// LerpNumberInPlace is LerpInPlace with a number weight.
func LerpNumberInPlace(input, end *Tensor, weight Number) error {
	_, err := lerpNumber(1, input, end, weight, nil)
	return err
}

// LerpNumberOut is LerpOut with a number weight.
func LerpNumberOut(out, input, end *Tensor, weight Number) error {
	_, err := lerpNumber(2, input, end, weight, out)
	return err
}

// Addcmul returns input + value * t1 * t2 (torch.addcmul), the three tensors broadcast and
// promoted together.
func Addcmul(input, t1, t2 *Tensor, value Number) (*Tensor, error) {
	return ternary(0, 1, input, t1, t2, nil, value)
}

// AddcmulInPlace computes input = Addcmul(input, t1, t2, value).
func AddcmulInPlace(input, t1, t2 *Tensor, value Number) error {
	_, err := ternary(1, 1, input, t1, t2, nil, value)
	return err
}

// AddcmulOut writes Addcmul(input, t1, t2, value) into out (destination first).
func AddcmulOut(out, input, t1, t2 *Tensor, value Number) error {
	_, err := ternary(2, 1, input, t1, t2, out, value)
	return err
}

// Addcdiv returns input + value * t1 / t2 (torch.addcdiv); t1 and t2 may not both be integers.
func Addcdiv(input, t1, t2 *Tensor, value Number) (*Tensor, error) {
	return ternary(0, 2, input, t1, t2, nil, value)
}

// AddcdivInPlace computes input = Addcdiv(input, t1, t2, value).
func AddcdivInPlace(input, t1, t2 *Tensor, value Number) error {
	_, err := ternary(1, 2, input, t1, t2, nil, value)
	return err
}

// AddcdivOut writes Addcdiv(input, t1, t2, value) into out (destination first).
func AddcdivOut(out, input, t1, t2 *Tensor, value Number) error {
	_, err := ternary(2, 2, input, t1, t2, out, value)
	return err
}

// Clamp returns min(max(input, min), max) (torch.clamp) with tensor bounds, either nil for none
// (not both); NaN anywhere gives NaN.
func Clamp(input, min, max *Tensor) (*Tensor, error) {
	return ternary(0, 3, input, min, max, nil, one)
}

// ClampInPlace computes input = Clamp(input, min, max).
func ClampInPlace(input, min, max *Tensor) error {
	_, err := ternary(1, 3, input, min, max, nil, one)
	return err
}

// ClampOut writes Clamp(input, min, max) into out (destination first).
func ClampOut(out, input, min, max *Tensor) error {
	_, err := ternary(2, 3, input, min, max, out, one)
	return err
}

func clampNumber(form int, input *Tensor, min, max *Number, out *Tensor) (*Tensor, error) {
	hs, err := refs4(input, out)
	if err != nil {
		return nil, err
	}
	var lo, hi Number
	if min != nil {
		lo = *min
	}
	if max != nil {
		hi = *max
	}
	r := C.gobc_clamp_scalar(C.int(form), hs[0], C.bool(min != nil), lo.c, C.bool(max != nil), hi.c, hs[1])
	keep(input, out)
	if form == 0 {
		return owned(r)
	}
	return nil, check(r)
}

// ClampNumber is Clamp with number bounds, either nil for none.
func ClampNumber(input *Tensor, min, max *Number) (*Tensor, error) {
	return clampNumber(0, input, min, max, nil)
}

// ClampNumberInPlace is ClampInPlace with number bounds.
func ClampNumberInPlace(input *Tensor, min, max *Number) error {
	_, err := clampNumber(1, input, min, max, nil)
	return err
}

// ClampNumberOut is ClampOut with number bounds.
func ClampNumberOut(out, input *Tensor, min, max *Number) error {
	_, err := clampNumber(2, input, min, max, out)
	return err
}
