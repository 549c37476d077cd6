package broadcast

// #include "shims.h"
import "C"

// Op is a binary elementwise operation (a BC_OP_* code). Each has three forms: Apply (a new
// result), InPlace (into the first operand) and Out (into a caller's tensor). A new operation of
// the C API is one line in the list below.
type Op int32

// The operations.
const (
	Add Op = C.BC_OP_ADD
	Sub Op = C.BC_OP_SUB
	Mul Op = C.BC_OP_MUL
	Div Op = C.BC_OP_DIV // true division: integer and bool operands give Float32
)

// Apply returns a op b in a new tensor of the broadcast shape and PyTorch's result type.
func (op Op) Apply(a, b *Tensor) (*Tensor, error) {
	r := C.gobc_binary(C.int32_t(op), a.handle(), b.handle())
	keep(a, b)
	return owned(r)
}

// InPlace computes target op= other into target's elements. It is allowed exactly when other
// broadcasts to target's shape and the result type can be cast to target's; when it fails,
// target is unchanged.
func (op Op) InPlace(target, other *Tensor) error {
	r := C.gobc_binary_inplace(C.int32_t(op), target.handle(), other.handle())
	keep(target, other)
	return check(r)
}

// Out writes a op b into out (destination first, as in math/big), which must have exactly the
// broadcast shape and a type the result type can be cast to; when it fails, out is unchanged.
func (op Op) Out(out, a, b *Tensor) error {
	r := C.gobc_binary_out(C.int32_t(op), a.handle(), b.handle(), out.handle())
	keep(out, a, b)
	return check(r)
}
