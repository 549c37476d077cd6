package broadcast_test

// Numbers as operands and the planner, through the Go package: every row of scalar.jsonl (all
// operations, both orders, in place), and the planner against the calls it plans on samples of the
// shape, value and promotion data. (The Rust suite checks every row through the C ABI.)

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

// scalarOf is a row's number.
func scalarOf(v any) bc.Number {
	s := row(v.(map[string]any))
	switch s.str("type") {
	case "bool":
		return bc.NumberOf(s.boolean("value"))
	case "int":
		n, err := s["value"].(json.Number).Int64()
		if err != nil {
			panic(err)
		}
		return bc.NumberOf(n)
	}
	return bc.NumberOf(math.Float64frombits(jsonCell(bc.Float64, s["value"]).bits))
}

func opCode(t *testing.T, name string) bc.Op {
	op, ok := opsByName[name]
	if !ok {
		t.Fatalf("unknown operation %q", name)
	}
	return op
}

func TestScalarConformance(t *testing.T) {
	f := &failures{t: t, file: "scalar.jsonl"}
	defer f.done()
	rows := readRows(t, f.file)
	for _, r := range every(rows, 1) {
		op := opCode(t, r.str("op"))
		f.checked++
		s := scalarOf(r["scalar"])
		st, x, before := operand(t, r["t"])
		var res *bc.Tensor
		var err error
		switch {
		case r.boolean("inplace"):
			err, res = op.InPlaceNumber(x, s), x
		case r.str("order") == "scalar_tensor":
			res, err = op.ApplyNumberFirst(s, x)
		default:
			res, err = op.ApplyNumber(x, s)
		}
		ulps := 0
		if op == bc.Div {
			ulps = 1
		}
		checkOutcome(t, f, r, res, err, st, before, ulps)
	}
	if f.checked != len(rows) && !testing.Short() {
		t.Errorf("%d of %d rows checked", f.checked, len(rows))
	}
}

// geometryOf is a tensor's geometry, as the planner takes it.
func geometryOf(x *bc.Tensor) bc.Geometry {
	return bc.Geometry{DType: x.DType(), Shape: x.Shape(), Strides: x.Strides()}
}

// agree checks that the plan (or its error) is what the call gave: the same *Error, or the
// written tensor's shape and strides (and for a new result, its type).
func agree(f *failures, r row, p *bc.Plan, perr error, written *bc.Tensor, err error, isNew bool) {
	switch {
	case perr != nil || err != nil:
		if !reflect.DeepEqual(perr, err) {
			f.add(r, "planner %v, call %v", perr, err)
		}
	case isNew && p.DType != written.DType():
		f.add(r, "planned type %v, result %v", p.DType, written.DType())
	case !reflect.DeepEqual(p.Shape, written.Shape()) || !reflect.DeepEqual(p.Strides, written.Strides()):
		f.add(r, "planned %v %v, result %v %v", p.Shape, p.Strides, written.Shape(), written.Strides())
	}
}

func TestPlannerAgreesWithCalls(t *testing.T) {
	f := &failures{t: t, file: "binary_shapes.jsonl"}
	for _, r := range every(readRows(t, f.file), 8) {
		f.checked++
		x := must(bc.Zeros(bc.Float32, r.ints("a")...))(t)
		y := must(bc.Ones(bc.Int32, r.ints("b")...))(t)
		p, perr := bc.Sub.Plan(geometryOf(x), geometryOf(y))
		res, err := bc.Sub.Apply(x, y)
		agree(f, r, p, perr, res, err, true)
		// Into x: the right shape or not.
		p, perr = bc.Mul.PlanOut(geometryOf(x), geometryOf(x), geometryOf(y))
		agree(f, r, p, perr, x, bc.Mul.Out(x, x, y), false)
	}
	f.done()
	f = &failures{t: t, file: "values.jsonl"}
	for _, r := range every(readRows(t, f.file), 4) {
		f.checked++
		op := opCode(t, r.str("op"))
		_, a, _ := operand(t, r["a"])
		_, b, _ := operand(t, r["b"])
		if r.boolean("inplace") {
			p, perr := op.PlanInPlace(geometryOf(a), geometryOf(b))
			agree(f, r, p, perr, a, op.InPlace(a, b), false)
		} else {
			p, perr := op.Plan(geometryOf(a), geometryOf(b))
			res, err := op.Apply(a, b)
			agree(f, r, p, perr, res, err, true)
		}
	}
	f.done()
}

// The number and where forms of the planner against the calls, on every row of scalar.jsonl and
// where.jsonl (where: into a new tensor and into an out of the row's result type).
func TestPlannerNumbersAndWhere(t *testing.T) {
	f := &failures{t: t, file: "scalar.jsonl"}
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		op := opCode(t, r.str("op"))
		s := scalarOf(r["scalar"])
		_, x, _ := operand(t, r["t"])
		var p *bc.Plan
		var perr, err error
		var res *bc.Tensor
		switch {
		case r.boolean("inplace"):
			p, perr = op.PlanInPlaceNumber(geometryOf(x), s)
			err, res = op.InPlaceNumber(x, s), x
		case r.str("order") == "scalar_tensor":
			p, perr = op.PlanNumberFirst(s, geometryOf(x))
			res, err = op.ApplyNumberFirst(s, x)
		default:
			p, perr = op.PlanNumber(geometryOf(x), s)
			res, err = op.ApplyNumber(x, s)
		}
		if perr == nil && p.ChecksDivisor && errors.Is(err, bc.ErrValue) {
			continue // a zero divisor, which only the call sees
		}
		agree(f, r, p, perr, res, err, !r.boolean("inplace"))
	}
	f.done()
	f = &failures{t: t, file: "where.jsonl"}
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		_, c, _ := operand(t, r["cond"])
		_, a, _ := operand(t, r["a"])
		_, b, _ := operand(t, r["b"])
		p, perr := bc.PlanWhere(geometryOf(c), geometryOf(a), geometryOf(b))
		res, err := bc.Where(c, a, b)
		agree(f, r, p, perr, res, err, true)
		if err != nil {
			continue
		}
		out := must(bc.Zeros(res.DType(), res.Shape()...))(t)
		p, perr = bc.PlanWhereOut(geometryOf(out), geometryOf(c), geometryOf(a), geometryOf(b))
		agree(f, r, p, perr, out, bc.WhereOut(out, c, a, b), false)
	}
	f.done()
}

// The planner's report on a known case, and its own argument checks.
func TestPlanReport(t *testing.T) {
	x := bc.Geometry{DType: bc.Float32, Shape: []int{256, 64, 256}, Strides: []int{1, 65536, 256}}
	y := bc.Geometry{DType: bc.Float32, Shape: []int{256, 1, 1}}
	p, err := bc.Add.Plan(x, y)
	if err != nil {
		t.Fatal(err)
	}
	want := bc.Plan{DType: bc.Float32, ComputeDType: bc.Float32, Shape: x.Shape, Strides: x.Strides,
		LoopKind: bc.LoopContiguous, LoopShape: []int{16384, 256}, Threads: p.Threads,
		AllocBytes: 256 * 64 * 256 * 4}
	if !reflect.DeepEqual(*p, want) || p.Threads < 1 {
		t.Errorf("plan %+v, want %+v", *p, want)
	}
	_, err = bc.Add.Plan(bc.Geometry{DType: bc.Float32, Shape: []int{2, 3}}, bc.Geometry{DType: bc.Float32, Shape: []int{4}})
	var e *bc.Error
	if !errors.As(err, &e) || e.Kind != bc.KindNotBroadcastable || e.SizeA != 3 || e.SizeB != 4 {
		t.Errorf("not broadcastable: %v", err)
	}
	if _, err = bc.Add.Plan(bc.Geometry{DType: bc.Float32, Shape: []int{2}, Strides: []int{1, 1}}, y); !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("strides of another length: %v", err)
	}
	if _, err = bc.Add.Plan(bc.Geometry{DType: 42, Shape: []int{2}}, y); !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("unknown dtype: %v", err)
	}
	// 0-d operands: no sizes at all.
	s := bc.Geometry{DType: bc.Int32}
	if p, err = bc.Div.Plan(s, s); err != nil || p.DType != bc.Float32 || len(p.Shape) != 0 {
		t.Errorf("0-d division: %+v, %v", p, err)
	}
}

// Numbers promote by category and wrap; the reversed form is PyTorch's s op t.
func TestScalarAPI(t *testing.T) {
	u := must(bc.FromSlice([]int{3}, []uint8{1, 2, 3}))(t)
	r := must(bc.Add.ApplyNumber(u, bc.NumberOf(300)))(t)
	if got := must(bc.Data[uint8](r))(t); !reflect.DeepEqual(got, []uint8{45, 46, 47}) {
		t.Errorf("uint8 + 300: %v", got)
	}
	i := must(bc.FromSlice([]int{2}, []int32{4, 6}))(t)
	r = must(bc.Div.ApplyNumberFirst(bc.NumberOf(float32(12)), i))(t)
	if got := must(bc.Data[float32](r))(t); r.DType() != bc.Float32 || !reflect.DeepEqual(got, []float32{3, 2}) {
		t.Errorf("12 / int32: %v %v", r.DType(), got)
	}
	if err := bc.Mul.InPlaceNumber(i, bc.NumberOf(2.5)); !errors.Is(err, bc.ErrDType) {
		t.Errorf("int32 *= 2.5: %v", err)
	}
	if err := bc.Sub.InPlaceNumber(i, bc.NumberOf(true)); !errors.Is(err, bc.ErrDType) {
		t.Errorf("int32 -= true: %v", err)
	}
	if err := bc.Add.InPlaceNumber(i, bc.NumberOf(int8(-1))); err != nil {
		t.Fatal(err)
	}
	if got := must(bc.Data[int32](i))(t); !reflect.DeepEqual(got, []int32{3, 5}) {
		t.Errorf("int32 += -1: %v", got)
	}
}

// The reduction forms of the planner against the calls: rows of reductions.jsonl
// (Reduction.Plan) and sum_to_size.jsonl (PlanSumToSize, and Op.PlanSumTo with a 0-d float64
// operand, which converts integer inputs), then a few reports checked by hand.
func TestPlannerReductions(t *testing.T) {
	f := &failures{t: t, file: "reductions.jsonl"}
	for _, r := range every(readRows(t, f.file), 4) {
		f.checked++
		red := reductionNames[r.str("op")]
		var over []int
		if r["dim"] != nil {
			over = r.ints("dim")
		}
		_, in, _ := operand(t, r["input"])
		p, perr := red.Plan(geometryOf(in), r.boolean("keepdim"), over...)
		res, err := red.Apply(in, r.boolean("keepdim"), over...)
		agree(f, r, p, perr, res, err, true)
	}
	f.done()
	f = &failures{t: t, file: "sum_to_size.jsonl"}
	for _, r := range every(readRows(t, f.file), 2) {
		f.checked++
		_, in, _ := operand(t, r["input"])
		size := r.ints("size")
		p, perr := bc.PlanSumToSize(geometryOf(in), size...)
		res, err := in.SumToSize(size...)
		agree(f, r, p, perr, res, err, true)
		d := must(bc.Ones(bc.Float64))(t)
		p, perr = bc.Add.PlanSumTo(geometryOf(in), geometryOf(d), size...)
		res, err = bc.Add.SumTo(in, d, size...)
		agree(f, r, p, perr, res, err, true)
	}
	f.done()

	h := bc.Geometry{DType: bc.Float16, Shape: []int{6, 4}}
	p := must(bc.Sum.Plan(h, false, 0))(t)
	if p.ComputeDType != bc.Float32 || !reflect.DeepEqual(p.LoopShape, []int{4, 6}) || p.AllocBytes != 8 {
		t.Errorf("Sum over dim 0 of float16 (6, 4): %+v", p)
	}
	_, err := bc.Mean.Plan(bc.Geometry{DType: bc.Int32, Shape: []int{2}}, false)
	checkErr(t, err, bc.ErrDType, "mean(): could not infer output dtype. Input dtype must be either "+
		"a floating point or complex dtype. Got: Int")
	g := bc.Geometry{DType: bc.Float32, Shape: []int{2, 3}, Strides: []int{1, 2}}
	p = must(bc.PlanSumToSize(g, 2, 3))(t)
	if p.LoopKind != bc.LoopNone || p.AllocBytes != 0 || !reflect.DeepEqual(p.Strides, []int{1, 2}) {
		t.Errorf("SumToSize summing nothing: %+v", p)
	}
	_, err = bc.Add.PlanSumTo(g, bc.Geometry{DType: bc.Float32, Shape: []int{3}}, 1, 4)
	checkErr(t, err, bc.ErrShape, "size {[1, 4]} is not expandable to size {[2, 3]}.")
	i := bc.Geometry{DType: bc.Int32, Shape: []int{4, 3}}
	p = must(bc.FloorDivide.PlanSumTo(i, bc.Geometry{DType: bc.Int32, Shape: []int{3}}, 3))(t)
	if !p.ChecksDivisor || p.DType != bc.Int64 || p.ComputeDType != bc.Int32 {
		t.Errorf("FloorDivide.PlanSumTo of int32: %+v", p)
	}
}
