package broadcast_test

import (
	"errors"
	"reflect"
	"strconv"
	"testing"

	bc "libbroadcast/broadcast"
)

// sameTensor reports how x differs from y in type, shape or elements (bit for bit; "" if not).
func sameTensor(t *testing.T, x, y *bc.Tensor) string {
	if x.DType() != y.DType() || !reflect.DeepEqual(x.Shape(), y.Shape()) {
		return "got " + x.String() + ", want " + y.String()
	}
	return cellsDiffer(t, x, readCells(t, y), 0)
}

// An expression gives exactly what its operations give as separate calls: mixed types, a
// broadcast intermediate, a constant, a comparison feeding where, and Out into an input.
func TestExprMatchesSeparateCalls(t *testing.T) {
	a := f32(t, []int{4, 1}, 0.5, -1.25, 3, 1e-3)
	b := must(bc.FromSlice([]int{3}, []int16{3, -2, 7}))(t)
	c := must(bc.FromSlice([]int{4, 3}, arange(12, -6, 1.5)))(t)
	h := must(bc.Full(bc.Float16, 0.1, 3))(t)

	// where(a*b + c > h, pow(c, 2), maximum(a, c) - 0.3)
	x, y, z, w := bc.Input(0), bc.Input(1), bc.Input(2), bc.Input(3)
	cond := bc.Gt.Of(bc.Add.Of(bc.Mul.Of(x, y), z), w)
	e := bc.WhereOf(cond, bc.Pow.Of(z, bc.ConstInt(bc.Int64, 2)),
		bc.Sub.Of(bc.Maximum.Of(x, z), bc.Const(bc.Float64, 0.3)))
	if e.Len() != 16 {
		t.Errorf("%d steps, want 16", e.Len())
	}

	ab := must(bc.Mul.Apply(a, b))(t)
	abc := must(bc.Add.Apply(ab, c))(t)
	gt := must(bc.Gt.Apply(abc, h))(t)
	two := must(bc.Scalar[int64](2))(t)
	p := must(bc.Pow.Apply(c, two))(t)
	m := must(bc.Maximum.Apply(a, c))(t)
	k := must(bc.Scalar[float64](0.3))(t)
	s := must(bc.Sub.Apply(m, k))(t)
	want := must(bc.Where(gt, p, s))(t)

	got := must(e.Eval(a, b, c, h))(t)
	if d := sameTensor(t, got, want); d != "" {
		t.Errorf("Eval: %s", d)
	}
	out := must(bc.Full(bc.Float32, 9, 4, 3))(t)
	noErr(t, e.EvalOut(out, a, b, c, h))
	if d := sameTensor(t, out, want); d != "" {
		t.Errorf("EvalOut: %s", d)
	}

	// c = c*a + b, written into an input.
	f := bc.Add.Of(bc.Mul.Of(bc.Input(0), bc.Input(1)), bc.Input(2))
	want2 := must(bc.Add.Apply(must(bc.Mul.Apply(c, a))(t), b))(t)
	noErr(t, f.EvalOut(c, c, a, b))
	if d := sameTensor(t, c, want2); d != "" {
		t.Errorf("EvalOut into an input: %s", d)
	}
}

// The three-operand steps give what Clamp, Lerp, Addcmul and Addcdiv give as separate calls
// (clamp(a*1.5, lo, hi) in one pass), and their errors.
func TestExprTernary(t *testing.T) {
	a := f32(t, []int{3, 4}, arange(12, -2, 0.37)...)
	lo := f32(t, []int{4}, arange(4, -1.7, 0.5)...)
	hi := f32(t, []int{3, 1}, 0.2, 1.1, 2)
	x, l, h := bc.Input(0), bc.Input(1), bc.Input(2)
	s := must(bc.Full(bc.Float32, 1.5))(t)
	w := must(bc.Full(bc.Float64, 0.25))(t)
	cases := []struct {
		name string
		e    bc.Expr
		want func() (*bc.Tensor, error)
	}{
		{"clamp", bc.ClampOf(bc.Mul.Of(x, bc.Const(bc.Float32, 1.5)), l, h), func() (*bc.Tensor, error) {
			return bc.Clamp(must(bc.Mul.Apply(a, s))(t), lo, hi)
		}},
		{"lerp", bc.LerpOf(x, l, bc.Const(bc.Float64, 0.25)), func() (*bc.Tensor, error) { return bc.Lerp(a, lo, w) }},
		{"addcmul", bc.AddcmulOf(x, l, h, bc.NumberOf(2)), func() (*bc.Tensor, error) {
			return bc.Addcmul(a, lo, hi, bc.NumberOf(2))
		}},
		{"addcdiv", bc.AddcdivOf(x, l, h, bc.NumberOf(-0.5)), func() (*bc.Tensor, error) {
			return bc.Addcdiv(a, lo, hi, bc.NumberOf(-0.5))
		}},
	}
	for _, c := range cases {
		want := must(c.want())(t)
		got := must(c.e.Eval(a, lo, hi))(t)
		if d := sameTensor(t, got, want); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}

	// lerp of integers is refused as Lerp refuses it.
	i := must(bc.Full(bc.Int32, 2, 3))(t)
	_, want := bc.Lerp(i, i, i)
	_, err := bc.LerpOf(x, x, x).Eval(i)
	var e, we *bc.Error
	if !errors.As(err, &e) || !errors.As(want, &we) || e.Message != we.Message || e.Status != bc.ErrDType {
		t.Errorf("lerp of integers: %v, want %v", err, want)
	}
}

// A failing step gives the separate call's error; a malformed program is refused by the library.
func TestExprErrors(t *testing.T) {
	a := f32(t, []int{2, 3}, arange(6, 0, 1)...)
	b := f32(t, []int{4}, arange(4, 0, 1)...)
	_, want := bc.Add.Apply(a, b)
	_, err := bc.Mul.Of(bc.Const(bc.Float32, 2), bc.Add.Of(bc.Input(0), bc.Input(1))).Eval(a, b)
	var e, we *bc.Error
	if !errors.As(err, &e) || !errors.As(want, &we) || e.Message != we.Message || e.Status != bc.ErrShape {
		t.Errorf("failing step: %v, want %v", err, want)
	}

	_, err = bc.Add.Of(bc.Input(0), bc.Input(2)).Eval(a, b)
	if !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("input out of range: %v", err)
	}
	if strconv.IntSize == 64 {
		var s uint = 32
		_, err = bc.Add.Of(bc.Input(0), bc.Input(1<<s)).Eval(a, b) // as int32: input 0
		if !errors.Is(err, bc.ErrInvalidArg) {
			t.Errorf("input 2^32: %v", err)
		}
	}
	_, err = bc.Input(0).Eval(a) // no operation
	if !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("no operation: %v", err)
	}
	_, err = bc.Expr{}.Eval(a)
	if !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("empty program: %v", err)
	}
	out := f32(t, []int{2, 3}, arange(6, 5, 1)...)
	before := must(bc.Data[float32](out))(t)
	if err := bc.Add.Of(bc.Input(0), bc.Input(1)).EvalOut(out, a, b); !errors.Is(err, bc.ErrShape) {
		t.Errorf("EvalOut with a failing step: %v", err)
	}
	if got := must(bc.Data[float32](out))(t); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused EvalOut changed out: %v", got)
	}
}

// Expr.Plan and PlanOut report, from geometries alone, what Eval and EvalOut give: the result's
// type, shape and layout, or the same error.
func TestExprPlan(t *testing.T) {
	a := f32(t, []int{2, 3}, arange(6, 0, 1)...)
	b := must(bc.FromSlice([]int{3}, []int16{3, -2, 7}))(t)
	e := bc.Add.Of(bc.Mul.Of(bc.Input(0), bc.Input(1)), bc.Const(bc.Float64, 0.5))
	ga := bc.Geometry{DType: bc.Float32, Shape: []int{2, 3}}
	gb := bc.Geometry{DType: bc.Int16, Shape: []int{3}}
	p := must(e.Plan(ga, gb))(t)
	got := must(e.Eval(a, b))(t)
	if p.DType != got.DType() || !reflect.DeepEqual(p.Shape, got.Shape()) ||
		!reflect.DeepEqual(p.Strides, []int{3, 1}) || p.AllocBytes != 6*4 {
		t.Errorf("Plan: %+v, Eval gave %v", p, got)
	}
	po := must(e.PlanOut(bc.Geometry{DType: bc.Float64, Shape: []int{2, 3}}, ga, gb))(t)
	if po.AllocBytes != 0 || po.DType != bc.Float32 {
		t.Errorf("PlanOut: %+v", po)
	}
	gc := bc.Geometry{DType: bc.Float32, Shape: []int{4}}
	c := f32(t, []int{4}, arange(4, 0, 1)...)
	_, err := e.Plan(ga, gc)
	_, want := e.Eval(a, c)
	var pe, we *bc.Error
	if !errors.As(err, &pe) || !errors.As(want, &we) || pe.Message != we.Message || pe.Status != bc.ErrShape {
		t.Errorf("failing step: planned %v, Eval %v", err, want)
	}
	if _, err := bc.Input(0).Plan(ga); !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("no operation: %v", err)
	}
}

// Expr.Reduce is Eval then the reduction, bit for bit: ((a-b)*(a-b)).mean(0) and a masked sum, and
// the reduction's refusal; PlanReduce says the call runs as one pass.
func TestExprReduce(t *testing.T) {
	a := must(bc.FromSlice([]int{40, 30}, arange(1200, -7, 0.0173)))(t)
	b := must(bc.FromSlice([]int{30}, arange(30, 0.5, 0.0333)))(t)
	x, y := bc.Input(0), bc.Input(1)
	d := bc.Sub.Of(x, y)
	sq := bc.Mul.Of(d, d)
	got := must(sq.Reduce(bc.Mean, []int{0}, false, a, b))(t)
	want := must(bc.Mean.Apply(must(sq.Eval(a, b))(t), false, 0))(t)
	if d := sameTensor(t, got, want); d != "" {
		t.Errorf("mean(0): %s", d)
	}
	masked := bc.WhereOf(bc.Gt.Of(x, y), x, bc.Const(bc.Float32, 0))
	got = must(masked.Reduce(bc.Sum, nil, true, a, b))(t)
	want = must(bc.Sum.Apply(must(masked.Eval(a, b))(t), true))(t)
	if d := sameTensor(t, got, want); d != "" {
		t.Errorf("masked sum: %s", d)
	}
	p := must(sq.PlanReduce(bc.Mean, []int{0}, false, bc.Geometry{DType: bc.Float32, Shape: []int{40, 30}},
		bc.Geometry{DType: bc.Float32, Shape: []int{30}}))(t)
	if !p.Fused || !reflect.DeepEqual(p.Shape, []int{30}) {
		t.Errorf("plan: %+v", p)
	}
	ints := bc.BitwiseAnd.Of(bc.Gt.Of(x, y), bc.Gt.Of(x, y))
	if _, err := ints.Reduce(bc.Mean, nil, false, a, b); !errors.Is(err, bc.ErrDType) {
		t.Errorf("mean of bools: %v", err)
	}
}
