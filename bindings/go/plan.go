package broadcast

// #include "shims.h"
import "C"

import (
	"fmt"
	"strconv"
)

// Geometry describes an operand without its memory, for the planner: what a tensor of this type,
// shape and strides (in elements; nil for row-major) would be.
type Geometry struct {
	DType   DType // the element type
	Shape   []int // the sizes of the dimensions (empty for a 0-d operand)
	Strides []int // the strides in elements, one per size; nil for row-major
}

// LoopKind is the inner loop a call would run. Its values are the library's own codes.
type LoopKind int32

// The inner loops.
const (
	LoopNone       LoopKind = 0 // nothing to compute (the result has no elements)
	LoopContiguous LoopKind = 1 // every operand contiguous along the inner loop
	LoopBroadcast  LoopKind = 2 // contiguous, with an input repeated along the inner loop
	LoopTiled      LoopKind = 3 // a transposed input, walked in 2-D tiles
	LoopStrided    LoopKind = 4 // other strides
)

var loopNames = [...]string{"none", "contiguous", "broadcast", "tiled", "strided"}

// String is the loop's name in lower case ("contiguous", ...), or "LoopKind(n)" for a code this
// package does not know.
func (k LoopKind) String() string {
	if k >= 0 && int(k) < len(loopNames) {
		return loopNames[k]
	}
	return "LoopKind(" + strconv.Itoa(int(k)) + ")"
}

// Plan is what a call would do, as the planner reports it (bc_plan).
type Plan struct {
	DType        DType // the result type (in place or into out: before the cast to the target)
	ComputeDType DType // the type computed in
	Shape        []int // the result's shape
	Strides      []int // the written tensor's strides: a new result's layout, else the target's
	// The warnings the call would give under the current switches; WhereUint8Warning: Where's
	// deprecation warning for a Uint8 condition (given once per process, by the first such call).
	BroadcastWarning, FallbackWarning, WhereUint8Warning bool
	// The call reads the divisor's elements and refuses a zero among them (ErrValue; integer
	// division, remainder, fmod), which only the call can see.
	ChecksDivisor bool
	// Expr.PlanReduce: the expression and the reduction run as one pass (the value never made).
	Fused      bool
	LoopKind   LoopKind // the inner loop the call would run
	LoopShape  []int    // the sizes iterated once dimensions are merged
	Threads    int      // threads sharing the work, the calling one included
	AllocBytes int      // element memory the call would allocate
}

// Plan reports what op.Apply(a, b) would do for operands of these geometries, without tensors:
// the result's type, shape and layout and how the call would run, or the error the call would
// give (the same *Error). The checks that need memory (read-only or overlapping operands) are
// the call's alone.
func (op Op) Plan(a, b Geometry) (*Plan, error) { return plan(0, op, Number{}, a, b) }

// PlanInPlace reports what op.InPlace(target, other) would do, as Plan.
func (op Op) PlanInPlace(target, other Geometry) (*Plan, error) {
	return plan(1, op, Number{}, target, other)
}

// PlanOut reports what op.Out(out, a, b) would do, as Plan.
func (op Op) PlanOut(out, a, b Geometry) (*Plan, error) { return plan(2, op, Number{}, a, b, out) }

// PlanNumber reports what op.ApplyNumber(t, s) would do, as Plan.
func (op Op) PlanNumber(t Geometry, s Number) (*Plan, error) { return plan(3, op, s, t) }

// PlanNumberFirst reports what op.ApplyNumberFirst(s, t) would do, as Plan.
func (op Op) PlanNumberFirst(s Number, t Geometry) (*Plan, error) { return plan(4, op, s, t) }

// PlanInPlaceNumber reports what op.InPlaceNumber(target, s) would do, as Plan.
func (op Op) PlanInPlaceNumber(target Geometry, s Number) (*Plan, error) {
	return plan(5, op, s, target)
}

// PlanWhere reports what Where(cond, a, b) would do, as Op.Plan.
func PlanWhere(cond, a, b Geometry) (*Plan, error) { return plan(6, 0, Number{}, cond, a, b) }

// PlanWhereOut reports what WhereOut(out, cond, a, b) would do, as Op.Plan.
func PlanWhereOut(out, cond, a, b Geometry) (*Plan, error) {
	return plan(7, 0, Number{}, cond, a, b, out)
}

// Plan reports what r.Apply(t, keepdim, over...) would do, as Op.Plan: ComputeDType is the type
// the elements are accumulated in, LoopShape the number of outputs and the elements each reduces.
func (r Reduction) Plan(t Geometry, keepdim bool, over ...int) (*Plan, error) {
	return planList(8, int32(r), Number{}, over, keepdim, t)
}

// PlanSumToSize reports what t.SumToSize(shape...) would do, as Op.Plan; when nothing is summed
// the call gives a view of t (no bytes, LoopNone).
func PlanSumToSize(t Geometry, shape ...int) (*Plan, error) {
	return planList(9, 0, Number{}, shape, false, t)
}

// PlanSumTo reports what op.SumTo(a, b, shape...) would do, as Op.Plan; when nothing is summed,
// what op.Apply(a, b) would do.
func (op Op) PlanSumTo(a, b Geometry, shape ...int) (*Plan, error) {
	return planList(10, int32(op), Number{}, shape, false, a, b)
}

func plan(form int, op Op, s Number, gs ...Geometry) (*Plan, error) {
	return planList(form, int32(op), s, nil, false, gs...)
}

// planList runs gobc_plan's form `form` with a list of dims or sizes (and keepdim).
func planList(form int, code int32, s Number, sizes []int, keepdim bool, gs ...Geometry) (*Plan, error) {
	f, err := flatten(gs)
	if err != nil {
		return nil, err
	}
	var p C.bc_plan
	lp, ln := dims(sizes)
	r := C.gobc_plan(C.int(form), C.int32_t(code), s.c, &f.dtypes[0], &f.ndims[0], &f.shapes[0],
		&f.strides[0], &f.has[0], lp, ln, C.bool(keepdim), &p)
	return planned(r, &p)
}

// Plan reports what e.Eval(inputs...) would do for inputs of these geometries, or the error it
// would return (bc_plan_expr): a malformed program's, or the first failing step's.
func (e Expr) Plan(inputs ...Geometry) (*Plan, error) { return e.plan(0, inputs) }

// PlanOut reports what e.EvalOut(out, inputs...) would do (bc_plan_expr_out).
func (e Expr) PlanOut(out Geometry, inputs ...Geometry) (*Plan, error) {
	return e.plan(1, append(append([]Geometry(nil), inputs...), out))
}

// plan is Plan (into 0) or PlanOut (into 1: gs ends with out).
func (e Expr) plan(into int, gs []Geometry) (*Plan, error) {
	f, err := flatten(gs)
	if err != nil {
		return nil, err
	}
	var p C.bc_plan
	r := C.gobc_plan_expr(e.ptr(), C.size_t(len(e.steps)), C.size_t(len(gs)), C.int(into), &f.dtypes[0],
		&f.ndims[0], &f.shapes[0], &f.strides[0], &f.has[0], &p)
	return planned(r, &p)
}

// PlanReduce reports what e.Reduce(r, over, keepdim, inputs...) would do for inputs of these
// geometries, or the error it would return (bc_plan_expr_reduce): the reduction's plan, with
// Fused true when the expression and the reduction run as one pass.
func (e Expr) PlanReduce(r Reduction, over []int, keepdim bool, inputs ...Geometry) (*Plan, error) {
	f, err := flatten(inputs)
	if err != nil {
		return nil, err
	}
	var p C.bc_plan
	lp, ln := dims(over)
	res := C.gobc_plan_expr_reduce(e.ptr(), C.size_t(len(e.steps)), C.size_t(len(inputs)),
		&f.dtypes[0], &f.ndims[0], &f.shapes[0], &f.strides[0], &f.has[0], C.int32_t(r), lp, ln,
		C.bool(keepdim), &p)
	return planned(res, &p)
}

// flat is geometries as C takes them: per operand its dtype, number of sizes and whether it has
// strides; one array of all sizes and one of all strides (each ends with a 0: never empty, so C
// is given valid pointers).
type flat struct {
	dtypes          []C.int32_t
	ndims           []C.size_t
	has             []C.bool
	shapes, strides []C.int64_t
}

func flatten(gs []Geometry) (flat, error) {
	var f flat
	for _, g := range gs {
		if g.Strides != nil && len(g.Strides) != len(g.Shape) {
			return f, goError(ErrInvalidArg, KindInvalidArgument, fmt.Sprintf(
				"a Geometry takes one stride per size (or nil strides): %d sizes and %d strides",
				len(g.Shape), len(g.Strides)))
		}
		f.dtypes = append(f.dtypes, C.int32_t(g.DType))
		f.ndims = append(f.ndims, C.size_t(len(g.Shape)))
		f.has = append(f.has, C.bool(g.Strides != nil))
		for i, n := range g.Shape {
			f.shapes = append(f.shapes, C.int64_t(n))
			stride := 0
			if g.Strides != nil {
				stride = g.Strides[i]
			}
			f.strides = append(f.strides, C.int64_t(stride))
		}
	}
	f.dtypes, f.ndims, f.has = append(f.dtypes, 0), append(f.ndims, 0), append(f.has, false)
	f.shapes, f.strides = append(f.shapes, 0), append(f.strides, 0)
	return f, nil
}

// planned is the plan a planner call r wrote to p, or its error.
func planned(r C.gobc_res, p *C.bc_plan) (*Plan, error) {
	if err := check(r); err != nil {
		return nil, err
	}
	list := func(vals []C.int64_t, n C.size_t) []int {
		out := make([]int, int(n))
		for i := range out {
			out[i] = int(vals[i])
		}
		return out
	}
	return &Plan{
		DType:             DType(p.dtype),
		ComputeDType:      DType(p.compute_dtype),
		Shape:             list(p.shape[:], p.ndim),
		Strides:           list(p.strides[:], p.ndim),
		BroadcastWarning:  p.flags&C.BC_PLAN_WARNING_BROADCAST != 0,
		FallbackWarning:   p.flags&C.BC_PLAN_WARNING_FALLBACK != 0,
		WhereUint8Warning: p.flags&C.BC_PLAN_WARNING_WHERE_UINT8 != 0,
		ChecksDivisor:     p.flags&C.BC_PLAN_CHECKS_DIVISOR != 0,
		Fused:             p.flags&C.BC_PLAN_FUSED != 0,
		LoopKind:          LoopKind(p.loop_kind),
		LoopShape:         list(p.loop_shape[:], p.loop_ndim),
		Threads:           int(p.threads),
		AllocBytes:        int(p.alloc_bytes),
	}, nil
}
