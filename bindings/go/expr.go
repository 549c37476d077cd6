package broadcast

// #include "shims.h"
import "C"

// Expr is an elementwise expression over numbered input tensors, evaluated by the library in one
// pass over memory (bc_expr_eval) with exactly the results of the separate calls: the same types,
// rounding at each step, errors and warnings. Build it from Input, Const and ConstInt with
// Op.Of, WhereOf and the three-operand LerpOf, AddcmulOf, AddcdivOf and ClampOf; a*b + c over
// inputs 0, 1, 2 is
//
//	e := broadcast.Add.Of(broadcast.Mul.Of(broadcast.Input(0), broadcast.Input(1)), broadcast.Input(2))
//	res, err := e.Eval(a, b, c)
//
// An Expr is a value: building never changes its operands, and one Expr may be evaluated any
// number of times, from any goroutine. The library checks the program when it is evaluated
// (ExprMaxSteps steps, ExprMaxDepth values waiting, input numbers in range).
type Expr struct {
	steps []C.bc_expr_step // postfix, as bc_expr_step arrays are
}

// The limits the library puts on an expression.
const (
	ExprMaxSteps = 64 // the most steps an expression may have
	ExprMaxDepth = 16 // the most values an expression may have waiting at once
)

func step(kind C.int32_t, arg C.int32_t, i int64, f float64) Expr {
	return Expr{[]C.bc_expr_step{{kind: kind, arg: arg, int_value: C.int64_t(i), float_value: C.double(f)}}}
}

// Input is input tensor number i of Eval's inputs.
func Input(i int) Expr {
	if int(int32(i)) != i {
		i = -1 // out of range for the library too, rather than wrapped into range
	}
	return step(C.BC_EXPR_INPUT, C.int32_t(i), 0, 0)
}

// Const is a constant of a floating dtype: a 0-d tensor of dtype d holding v (rounded to d). It
// promotes as a 0-d tensor does.
func Const(d DType, v float64) Expr { return step(C.BC_EXPR_CONST, C.int32_t(d), 0, v) }

// ConstInt is a constant of Bool or an integer dtype: a 0-d tensor of dtype d holding v
// (converted as a C cast: wrapping; non-zero is true).
func ConstInt(d DType, v int64) Expr { return step(C.BC_EXPR_CONST, C.int32_t(d), v, float64(v)) }

// cat is the steps of parts in turn, then last, in a new slice.
func cat(last C.bc_expr_step, parts ...Expr) Expr {
	n := 1
	for _, p := range parts {
		n += len(p.steps)
	}
	s := make([]C.bc_expr_step, 0, n)
	for _, p := range parts {
		s = append(s, p.steps...)
	}
	return Expr{append(s, last)}
}

// Of is the expression a op b.
func (op Op) Of(a, b Expr) Expr {
	return cat(C.bc_expr_step{kind: C.BC_EXPR_OP, arg: C.int32_t(op)}, a, b)
}

// WhereOf is the expression where(cond, a, b).
func WhereOf(cond, a, b Expr) Expr {
	return cat(C.bc_expr_step{kind: C.BC_EXPR_WHERE}, cond, a, b)
}

// LerpOf is the expression lerp(input, end, weight), as Lerp computes it. A number weight is a
// Const, a 0-d tensor: it promotes as Lerp's 0-d weight tensor does, not as LerpNumber's number
// (Float16 tensors read a Float64 constant rounded to Float16).
func LerpOf(input, end, weight Expr) Expr {
	return ternaryOf(C.BC_TERNARY_LERP, Number{}, input, end, weight)
}

// AddcmulOf is the expression input + value * t1 * t2, as Addcmul computes it.
func AddcmulOf(input, t1, t2 Expr, value Number) Expr {
	return ternaryOf(C.BC_TERNARY_ADDCMUL, value, input, t1, t2)
}

// AddcdivOf is the expression input + value * t1 / t2, as Addcdiv computes it.
func AddcdivOf(input, t1, t2 Expr, value Number) Expr {
	return ternaryOf(C.BC_TERNARY_ADDCDIV, value, input, t1, t2)
}

// ClampOf is the expression min(max(input, min), max), as Clamp computes it with both bounds.
// Number bounds are Consts, 0-d tensors: an Int32 tensor clamped by Float64 constants is
// Float64 (ClampNumber's numbers give Float32).
func ClampOf(input, min, max Expr) Expr {
	return ternaryOf(C.BC_TERNARY_CLAMP, Number{}, input, min, max)
}

// ternaryOf is the ternary step op over input, b and c, with value held as the library reads
// it: a float in float_value, an integer or a bool in int_value (float_value left +0.0).
func ternaryOf(op C.int32_t, value Number, input, b, c Expr) Expr {
	s := C.bc_expr_step{kind: C.BC_EXPR_TERNARY, arg: op}
	switch value.c.kind {
	case C.BC_SCALAR_FLOAT:
		s.float_value = value.c.f
	case C.BC_SCALAR_INT:
		s.int_value = value.c.i
	default:
		if value.c.b {
			s.int_value = 1
		}
	}
	return cat(s, input, b, c)
}

// Len is the number of steps of e.
func (e Expr) Len() int { return len(e.steps) }

// Eval returns the value of e over inputs in a new tensor.
func (e Expr) Eval(inputs ...*Tensor) (*Tensor, error) {
	hs, err := refs(inputs...)
	if err != nil {
		return nil, err
	}
	r := C.gobc_expr_eval(e.ptr(), C.size_t(len(e.steps)), &hs[0], C.size_t(len(inputs)), 0, 0)
	keep(inputs...)
	return owned(r)
}

// EvalOut writes the value of e over inputs into out (destination first, as Op.Out): the last
// operation writes as Op.Out (or WhereOut) would. out may be one of the inputs (x = x*a + b); when
// the call fails, out is unchanged.
func (e Expr) EvalOut(out *Tensor, inputs ...*Tensor) error {
	hs, err := refs(append([]*Tensor{out}, inputs...)...)
	if err != nil {
		return err
	}
	r := C.gobc_expr_eval(e.ptr(), C.size_t(len(e.steps)), &hs[1], C.size_t(len(inputs)), 1, hs[0])
	keep(inputs...)
	keep(out)
	return check(r)
}

// Reduce returns the reduction r over the dimensions listed in over (negative ones count from the
// end; none means every dimension) of e's value over inputs, keeping each reduced dimension as
// size 1 when keepdim is true: exactly e.Eval(inputs...) followed by r.Apply (the same bits, the
// same errors in the same order), in one call that, when e runs as one pass, computes the value a
// tile at a time in the order the reduction reads it and never makes it (bc_expr_reduce). So
// ((a-b)**2).mean(0) or a masked sum read their inputs once and write only the result.
func (e Expr) Reduce(r Reduction, over []int, keepdim bool, inputs ...*Tensor) (*Tensor, error) {
	hs, err := refs(inputs...)
	if err != nil {
		return nil, err
	}
	p, n := dims(over)
	res := C.gobc_expr_reduce(e.ptr(), C.size_t(len(e.steps)), &hs[0], C.size_t(len(inputs)),
		C.int32_t(r), p, n, C.bool(keepdim))
	keep(inputs...)
	return owned(res)
}

// ptr is the steps for the length of one call (Go memory holding no pointers; NULL when empty).
func (e Expr) ptr() *C.bc_expr_step {
	if len(e.steps) == 0 {
		return nil
	}
	return &e.steps[0]
}
