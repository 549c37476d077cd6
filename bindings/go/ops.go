package broadcast

// #include "shims.h"
import "C"

import "strconv"

// Op is a binary elementwise operation, with PyTorch's semantics (torch.<name>): integer
// arithmetic wraps; Float16 and BFloat16 compute in float32 and round each operation. Each has
// three forms: Apply (a new result), InPlace (into the first operand) and Out (into a caller's
// tensor). Its values are the library's own codes.
type Op int32

// The operations.
const (
	Add Op = 0 // a + b (bools: or)
	Sub Op = 1 // a - b (not bool)
	Mul Op = 2 // a * b (bools: and)
	Div Op = 3 // a / b, true division: integer and bool operands give Float32

	Eq Op = 4 // a == b (Bool result; in place: 0 or 1 in the target's type)
	Ne Op = 5 // a != b (Bool result; true where either is NaN)
	Lt Op = 6 // a < b (Bool result)
	Le Op = 7 // a <= b (Bool result)
	Gt Op = 8 // a > b (Bool result)
	Ge Op = 9 // a >= b (Bool result)

	Maximum Op = 10 // the larger element; NaN where either is NaN; bools: or
	Minimum Op = 11 // the smaller element; NaN where either is NaN; bools: and
	Pow     Op = 12 // a to the power b (not bool); integers wrap

	Remainder   Op = 13 // Python's a % b, with the sign of b; an integer zero divisor is ErrValue
	Fmod        Op = 14 // C's fmod(a, b), with the sign of a; an integer zero divisor is ErrValue
	FloorDivide Op = 15 // Python's a // b, rounded down; an integer zero divisor is ErrValue

	LogicalAnd Op = 16 // both non-zero (Bool result; NaN is true)
	LogicalOr  Op = 17 // either non-zero (Bool result)
	LogicalXor Op = 18 // exactly one non-zero (Bool result)

	BitwiseAnd        Op = 19 // a & b, integers and bool only
	BitwiseOr         Op = 20 // a | b, integers and bool only
	BitwiseXor        Op = 21 // a ^ b, integers and bool only
	BitwiseLeftShift  Op = 22 // a << b, integers only; 0 when b is negative or at least the bit width
	BitwiseRightShift Op = 23 // a >> b (arithmetic when signed), integers only

	Atan2 Op = 24 // atan2(a, b); integer and bool operands give Float32
	Hypot Op = 25 // hypot(a, b), floating types only
)

// opNames are PyTorch's names of the operations, indexed by code.
var opNames = [...]string{"add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge",
	"maximum", "minimum", "pow", "remainder", "fmod", "floor_divide", "logical_and",
	"logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
	"bitwise_left_shift", "bitwise_right_shift", "atan2", "hypot"}

// String is the operation's name in PyTorch and the library ("add", "floor_divide", ...), or
// "Op(n)" for a code this package does not know.
func (op Op) String() string {
	if op >= 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

// Apply returns a op b in a new tensor of the broadcast shape and PyTorch's result type.
func (op Op) Apply(a, b *Tensor) (*Tensor, error) {
	ha, hb, ok := open2(a, b)
	if !ok {
		return nil, errClosed()
	}
	r := C.gobc_binary(C.int32_t(op), ha, hb)
	keep(a, b)
	return owned(r)
}

// InPlace computes target op= other into target's elements. It is allowed exactly when other
// broadcasts to target's shape and the result type can be cast to target's; when it fails,
// target is unchanged.
func (op Op) InPlace(target, other *Tensor) error {
	ht, ho, ok := open2(target, other)
	if !ok {
		return errClosed()
	}
	r := C.gobc_binary_inplace(C.int32_t(op), ht, ho)
	keep(target, other)
	return check(r)
}

// Out writes a op b into out (destination first, as in math/big), which must have exactly the
// broadcast shape and a type the result type can be cast to; when it fails, out is unchanged.
func (op Op) Out(out, a, b *Tensor) error {
	ha, hb, ok := open2(a, b)
	ho := out.handle()
	if !ok || (ho == 0 && out != nil) {
		return errClosed()
	}
	r := C.gobc_binary_out(C.int32_t(op), ha, hb, ho)
	keep(out, a, b)
	return check(r)
}

// Where returns where(cond, a, b) in a new tensor: a's element where cond is true, else b's
// (torch.where). The three operands broadcast together; the result type promotes a and b only;
// cond is Bool, or Uint8 (accepted with PyTorch's deprecation warning).
func Where(cond, a, b *Tensor) (*Tensor, error) {
	ha, hb, ok := open2(a, b)
	hc := cond.handle()
	if !ok || (hc == 0 && cond != nil) {
		return nil, errClosed()
	}
	r := C.gobc_where(hc, ha, hb)
	keep(cond, a, b)
	return owned(r)
}

// WhereOut writes where(cond, a, b) into out (destination first, as Op.Out), which must have
// exactly the broadcast shape and the result type; when it fails, out is unchanged.
func WhereOut(out, cond, a, b *Tensor) error {
	hs, err := refs4(out, cond, a, b)
	if err != nil {
		return err
	}
	r := C.gobc_where_out(hs[1], hs[2], hs[3], hs[0])
	keep(out, cond, a, b)
	return check(r)
}
