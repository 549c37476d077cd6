package broadcast_test

// Reductions, SumToSize and Op.SumTo through the Go package: the rows of reductions.jsonl and
// sum_to_size.jsonl (tests/data/pytorch, PyTorch 2.15 CPU; the Rust suite checks every row through
// the C ABI, this checks that the Go package hands the answers through unchanged), and the fused
// form against the two calls for every operation.

import (
	"errors"
	"math"
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

var reductionNames = map[string]bc.Reduction{
	"sum": bc.Sum, "mean": bc.Mean, "prod": bc.Prod, "amax": bc.Amax, "amin": bc.Amin,
}

// reductionStatus is the status of an error kind of reductions.jsonl.
func reductionStatus(kind string) bc.Status {
	switch kind {
	case "dim":
		return bc.ErrInvalidArg
	case "empty":
		return bc.ErrShape
	}
	return kindStatus(kind)
}

func TestReductionsConformance(t *testing.T) {
	f := &failures{t: t, file: "reductions.jsonl"}
	defer f.done()
	rows := every(readRows(t, f.file), 1)
	for _, r := range rows {
		f.checked++
		red := reductionNames[r.str("op")]
		var over []int
		if r["dim"] != nil {
			over = r.ints("dim")
		}
		storage, in, before := operand(t, r["input"])
		res, err := red.Apply(in, r.boolean("keepdim"), over...)
		if p := cellsDiffer(t, storage, before, 0); p != "" {
			f.add(r, "the input changed: %s", p)
		}
		if r.has("error") {
			e, ok := err.(*bc.Error)
			switch want := reductionStatus(r.str("kind")); {
			case !ok:
				f.add(r, "want an *Error with status %d, got %v", want, err)
			case e.Status != want || e.Message != r.str("error"):
				f.add(r, "error %d %q, want %d %q", e.Status, e.Message, want, r.str("error"))
			}
			continue
		}
		if err != nil {
			f.add(r, "%v", err)
			continue
		}
		want := row(r["result"].(map[string]any))
		wd := dtypeNames[want.str("dtype")]
		if res.DType() != wd || !reflect.DeepEqual(res.Shape(), want.ints("shape")) {
			f.add(r, "result %v", res)
			continue
		}
		if p := reductionDiffers(t, r, res, numel(in.Shape())); p != "" {
			f.add(r, "%s", p)
		}
	}
	if n := len(rows); n < 50 {
		t.Errorf("only %d rows checked", n)
	}
}

// reductionDiffers compares a successful result with the row ("" when they agree): exactly
// (a zero of either sign where the row allows it), or, for floating sum, mean and prod, within the
// bound of the data's README around the exact value f64.
func reductionDiffers(t *testing.T, r row, res *bc.Tensor, inNumel int) string {
	want := row(r["result"].(map[string]any))
	d := res.DType()
	got, exp := readCells(t, res), jsonCells(d, want["data"])
	op := r.str("op")
	if !isFloat(d) || op == "amax" || op == "amin" {
		if len(got) != len(exp) {
			return cellsDiffer(t, res, exp, 0)
		}
		for i := range got {
			zeros := cellFloat(got[i]) == 0 && cellFloat(exp[i]) == 0
			if !near(got[i], exp[i], 0) && !(r.boolean("signed_zero_ties") && zeros) {
				return cellsDiffer(t, res, exp, 0)
			}
		}
		return ""
	}
	if len(got) == 0 && len(exp) == 0 {
		return "" // an empty result: the rows give no f64
	}
	exact := jsonCells(bc.Float64, r["f64"])
	abs := exact
	if r.has("abs_f64") {
		abs = jsonCells(bc.Float64, r["abs_f64"])
	}
	if len(got) != len(exact) {
		return cellsDiffer(t, res, exp, 0)
	}
	for i, g := range got {
		fx := cellFloat(exact[i])
		if p := outsideBound(op, d, cellFloat(g), fx, math.Abs(cellFloat(abs[i])), inNumel/len(got)); p != "" {
			return p
		}
	}
	return ""
}

// outsideBound is the README's check of a floating result x against the exact f (a: the sum of
// |x| for sum and mean, |f| for prod) over n elements ("" when it holds).
func outsideBound(op string, d bc.DType, x, f, a float64, n int) string {
	eps := map[bc.DType]float64{bc.Float64: 0x1p-53}[d]
	switch {
	case eps != 0:
	case op == "prod" && d == bc.Float16:
		eps = 0x1p-11
	case op == "prod" && d == bc.BFloat16:
		eps = 0x1p-8
	default:
		eps = 0x1p-24
	}
	unit := map[bc.DType][2]float64{ // the type's epsilon and smallest normal
		bc.Float16: {0x1p-10, 0x1p-14}, bc.BFloat16: {0x1p-7, 0x1p-126},
		bc.Float32: {0x1p-23, 0x1p-126}, bc.Float64: {0x1p-52, 0x1p-1022},
	}[d]
	largest := map[bc.DType]float64{
		bc.Float16: 65504, bc.BFloat16: 3.3895313892515355e38, bc.Float32: math.MaxFloat32,
		bc.Float64: math.MaxFloat64,
	}[d]
	var ok bool
	switch {
	case math.IsNaN(f):
		ok = math.IsNaN(x)
	case math.IsInf(x, 0):
		ok = x == f || math.Abs(f) > largest && math.Signbit(x) == math.Signbit(f)
	case math.IsInf(f, 0) || math.IsNaN(x):
		ok = false
	default:
		k := float64(n+1) * eps
		ok = math.Abs(x-f) <= k/(1-k)*a+math.Max(math.Abs(x), unit[1])*unit[0]
	}
	if ok {
		return ""
	}
	return "element " + fmtFloat(x) + " is not within the bound of the exact " + fmtFloat(f)
}

func fmtFloat(x float64) string { return cell{bc.Float64, math.Float64bits(x)}.String() }

// cellFloat is a floating cell's value (integers and bools as numbers).
func cellFloat(c cell) float64 {
	switch c.d {
	case bc.Float64:
		return math.Float64frombits(c.bits)
	case bc.Float32:
		return float64(math.Float32frombits(uint32(c.bits)))
	case bc.Float16:
		return float64(bc.Float16Bits(c.bits).Float32())
	case bc.BFloat16:
		return float64(bc.BFloat16Bits(c.bits).Float32())
	}
	return float64(int64(c.bits))
}

// Every row of sum_to_size.jsonl through SumToSize and through Mul.SumTo with a 0-d one: the
// same type, shape and bits (the data's values sum exactly in any order), or the exact error.
func TestSumToSizeConformance(t *testing.T) {
	f := &failures{t: t, file: "sum_to_size.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		storage, in, before := operand(t, r["input"])
		one := must(bc.Ones(in.DType()))(t)
		size := r.ints("size")
		viaSumToSize, err1 := in.SumToSize(size...)
		viaSumTo, err2 := bc.Mul.SumTo(in, one, size...)
		if p := cellsDiffer(t, storage, before, 0); p != "" {
			f.add(r, "the input changed: %s", p)
		}
		for _, got := range []struct {
			call string
			res  *bc.Tensor
			err  error
		}{{"SumToSize", viaSumToSize, err1}, {"Mul.SumTo", viaSumTo, err2}} {
			if r.has("error") {
				if p := errProblem(got.err, r.str("kind"), r.str("error"), true); p != "" {
					f.add(r, "%s: %s", got.call, p)
				}
				continue
			}
			if got.err != nil {
				f.add(r, "%s: %v", got.call, got.err)
				continue
			}
			want := row(r["result"].(map[string]any))
			wd := dtypeNames[want.str("dtype")]
			if got.res.DType() != wd || !reflect.DeepEqual(got.res.Shape(), want.ints("shape")) {
				f.add(r, "%s: result %v", got.call, got.res)
			} else if p := cellsDiffer(t, got.res, jsonCells(wd, want["data"]), 0); p != "" {
				f.add(r, "%s: %s", got.call, p)
			}
		}
	}
}

func TestReductionsAPI(t *testing.T) {
	a := f32(t, []int{2, 3}, 1, 2, 3, 4, 5, 6)
	checkF32(t, must(bc.Sum.Apply(a, false, 0))(t), []float32{5, 7, 9})
	checkF32(t, must(bc.Sum.Apply(a, false, -1))(t), []float32{6, 15})
	all := must(bc.Sum.Apply(a, false))(t)
	checkShape(t, all)
	checkF32(t, all, []float32{21})
	checkShape(t, must(bc.Mean.Apply(a, true, 1))(t), 2, 1)
	checkF32(t, must(bc.Prod.Apply(a, false, 1))(t), []float32{6, 120})
	checkF32(t, must(bc.Amax.Apply(a, false, 0))(t), []float32{4, 5, 6})
	checkF32(t, must(bc.Amin.Apply(a, false))(t), []float32{1})

	ints := must(bc.FromSlice([]int{3}, []int32{1, 2, 3}))(t)
	s := must(bc.Sum.Apply(ints, false))(t)
	if got := must(bc.Data[int64](s))(t); s.DType() != bc.Int64 || !reflect.DeepEqual(got, []int64{6}) {
		t.Errorf("sum of int32: %v, want int64 6", s)
	}
	_, err := bc.Mean.Apply(ints, false)
	e := checkErr(t, err, bc.ErrDType, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int")
	if e != nil && e.Kind != bc.KindReduceDType {
		t.Errorf("kind %d, want KindReduceDType", e.Kind)
	}
	_, err = bc.Sum.Apply(a, false, 0, -2)
	checkErr(t, err, bc.ErrInvalidArg, "dim 0 appears multiple times in the list of dims")
	_, err = bc.Sum.Apply(a, false, 2)
	checkErr(t, err, bc.ErrInvalidArg, "Dimension out of range (expected to be in range of [-2, 1], but got 2)")
	_, err = bc.Amax.Apply(must(bc.Zeros(bc.Float32, 0, 2))(t), false, 0)
	checkErr(t, err, bc.ErrShape, "amax(): Expected reduction dim 0 to have non-zero size.")

	checkF32(t, must(a.SumToSize(1, 3))(t), []float32{5, 7, 9})
	_, err = a.SumToSize(1, 4)
	e = checkErr(t, err, bc.ErrShape, "size {[1, 4]} is not expandable to size {[2, 3]}.")
	if e != nil && (e.Kind != bc.KindNotExpandable || !reflect.DeepEqual(e.ShapeA, []int{1, 4})) {
		t.Errorf("kind %d, shape a %v", e.Kind, e.ShapeA)
	}
	// a * b = [[1, 4, 9], [4, 10, 18]], summed over the rows.
	b := f32(t, []int{3}, 1, 2, 3)
	checkF32(t, must(bc.Mul.SumTo(a, b, 3))(t), []float32{5, 14, 27})
}

// Op.SumTo gives what Apply and SumToSize give, for every operation the library has (found by
// asking for codes until one is unknown), on float32 and int32 operands.
func TestSumToEveryOperation(t *testing.T) {
	af := f32(t, []int{4, 3}, arange(12, -5.5, 1.25)...)
	bf := f32(t, []int{3}, 0.5, -2, 3)
	ai := must(bc.FromSlice([]int{4, 3}, []int32{-7, 3, 9, 12, -1, 4, 5, 6, -8, 2, 1, 0}))(t)
	bi := must(bc.FromSlice([]int{3}, []int32{2, -3, 5}))(t)
	ops := 0
	for op := bc.Op(0); ; op++ {
		if _, err := op.Apply(af, bf); errors.Is(err, bc.ErrInvalidArg) {
			break
		}
		ops++
		summed := false
		for _, pair := range [][2]*bc.Tensor{{af, bf}, {ai, bi}, {ai, bf}} {
			for _, size := range [][]int{{3}, {4, 1}} {
				fused, err := op.SumTo(pair[0], pair[1], size...)
				prod, err2 := op.Apply(pair[0], pair[1])
				var two *bc.Tensor
				if err2 == nil {
					two, err2 = prod.SumToSize(size...)
				}
				if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
					t.Errorf("op %d, size %v: SumTo %v, the two calls %v", op, size, err, err2)
					continue
				}
				if err != nil {
					continue
				}
				summed = true
				if fused.DType() != two.DType() {
					t.Errorf("op %d: SumTo gives %v, the two calls %v", op, fused.DType(), two.DType())
				} else if p := cellsDiffer(t, fused, readCells(t, two), 0); p != "" {
					t.Errorf("op %d, size %v: %s", op, size, p)
				}
			}
		}
		if !summed {
			t.Errorf("op %d never succeeded", op)
		}
	}
	if ops < 26 {
		t.Errorf("%d operations, want at least 26", ops)
	}
}
