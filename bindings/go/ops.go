package broadcast

// #include "shims.h"
import "C"

// Op is a binary elementwise operation (a BC_OP_* code, with PyTorch's semantics as documented
// in include/broadcast.h). Each has three forms: Apply (a new result), InPlace (into the first
// operand) and Out (into a caller's tensor). A new operation of the C API is one line in the list
// below.
type Op int32

// The operations.
const (
	Add Op = C.BC_OP_ADD
	Sub Op = C.BC_OP_SUB
	Mul Op = C.BC_OP_MUL
	Div Op = C.BC_OP_DIV // true division: integer and bool operands give Float32

	// Comparisons give Bool (in place: 0 or 1 in the target's type).
	Eq Op = C.BC_OP_EQ
	Ne Op = C.BC_OP_NE
	Lt Op = C.BC_OP_LT
	Le Op = C.BC_OP_LE
	Gt Op = C.BC_OP_GT
	Ge Op = C.BC_OP_GE

	Maximum Op = C.BC_OP_MAXIMUM // NaN where either is NaN
	Minimum Op = C.BC_OP_MINIMUM // NaN where either is NaN
	Pow     Op = C.BC_OP_POW

	// Integer divisors of zero are refused with ErrValue.
	Remainder   Op = C.BC_OP_REMAINDER    // Python's a % b: the sign of b
	Fmod        Op = C.BC_OP_FMOD         // C's fmod(a, b): the sign of a
	FloorDivide Op = C.BC_OP_FLOOR_DIVIDE // Python's a // b

	// Logical operations give Bool (in place: 0 or 1 in the target's type).
	LogicalAnd Op = C.BC_OP_LOGICAL_AND
	LogicalOr  Op = C.BC_OP_LOGICAL_OR
	LogicalXor Op = C.BC_OP_LOGICAL_XOR

	// Bitwise operations and shifts take integers (and bool, except the shifts).
	BitwiseAnd        Op = C.BC_OP_BITWISE_AND
	BitwiseOr         Op = C.BC_OP_BITWISE_OR
	BitwiseXor        Op = C.BC_OP_BITWISE_XOR
	BitwiseLeftShift  Op = C.BC_OP_BITWISE_LEFT_SHIFT
	BitwiseRightShift Op = C.BC_OP_BITWISE_RIGHT_SHIFT

	Atan2 Op = C.BC_OP_ATAN2 // integer and bool operands give Float32
	Hypot Op = C.BC_OP_HYPOT // floating types only
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

// Where returns where(cond, a, b) in a new tensor: a's element where cond is true, else b's
// (torch.where). The three operands broadcast together; the result type promotes a and b only;
// cond is Bool, or Uint8 (accepted with PyTorch's deprecation warning).
func Where(cond, a, b *Tensor) (*Tensor, error) {
	r := C.gobc_where(cond.handle(), a.handle(), b.handle())
	keep(cond, a, b)
	return owned(r)
}

// WhereOut writes where(cond, a, b) into out (destination first, as Op.Out), which must have
// exactly the broadcast shape and the result type; when it fails, out is unchanged.
func WhereOut(out, cond, a, b *Tensor) error {
	r := C.gobc_where_out(cond.handle(), a.handle(), b.handle(), out.handle())
	keep(out, cond, a, b)
	return check(r)
}
