package broadcast

// #include "shims.h"
import "C"

// Number is a number given to an operation in place of a tensor: a Python number, in PyTorch's
// terms. It takes part in type promotion by its category only (an Int32 tensor plus 2.5 is
// Float32; a Uint8 tensor plus 300 stays Uint8, and 300 wraps to 44), then is cast to the type
// computed in like any operand. Make one with NumberOf.
type Number struct {
	c C.bc_scalar
}

// NumberOf makes a Number of a Go bool, integer or float: a bool is a bool, an integer an integer
// (int64), a float a floating number (float64).
func NumberOf[N bool | int | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | float32 | float64](v N) Number {
	switch x := any(v).(type) {
	case bool:
		return Number{C.bc_scalar_bool(C.bool(x))}
	case float32:
		return Number{C.bc_scalar_float(C.double(x))}
	case float64:
		return Number{C.bc_scalar_float(C.double(x))}
	case int:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case int8:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case int16:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case int32:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case int64:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case uint8:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	case uint16:
		return Number{C.bc_scalar_int(C.int64_t(x))}
	default:
		return Number{C.bc_scalar_int(C.int64_t(x.(uint32)))}
	}
}

// ApplyNumber returns t op s in a new tensor (PyTorch's t op s with a Python number s). Every Op
// takes a number except Maximum, Minimum, Atan2, Hypot and the logical operations, which refuse
// it with PyTorch's TypeError text (ErrInvalidArg), as PyTorch does.
func (op Op) ApplyNumber(t *Tensor, s Number) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_binary_scalar(0, C.int32_t(op), h, s.c)
	keep(t)
	return owned(r)
}

// ApplyNumberFirst returns s op t in a new tensor, as PyTorch computes s op t: t op s for the
// operations Python hands to the tensor (add, mul, eq, ne, the bitwise ones), the mirrored
// comparison for the ordered ones (2 < t is t > 2), op(s, t) otherwise (torch.div(s, t)); Fmod
// refuses a number first, as PyTorch does.
func (op Op) ApplyNumberFirst(s Number, t *Tensor) (*Tensor, error) {
	h, err := t.ref()
	if err != nil {
		return nil, err
	}
	r := C.gobc_binary_scalar(1, C.int32_t(op), h, s.c)
	keep(t)
	return owned(r)
}

// InPlaceNumber computes target op= s into target's elements; the result type must cast to
// target's (an Int32 tensor times 2.5 is refused). When it fails, target is unchanged.
func (op Op) InPlaceNumber(target *Tensor, s Number) error {
	h, err := target.ref()
	if err != nil {
		return err
	}
	r := C.gobc_binary_scalar(2, C.int32_t(op), h, s.c)
	keep(target)
	return check(r)
}
