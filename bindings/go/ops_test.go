package broadcast_test

// The further operations, where and expressions through the Go package, checked against the
// PyTorch conformance data (tests/data/pytorch: ops_values.jsonl, ops_promotion.jsonl and
// where.jsonl, from PyTorch 2.15 CPU), with the helpers of conformance_test.go. The Rust suite
// checks every row through the C ABI; this checks that the Go forms hand them through unchanged.

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

var moreOps = map[string]bc.Op{
	"eq": bc.Eq, "ne": bc.Ne, "lt": bc.Lt, "le": bc.Le, "gt": bc.Gt, "ge": bc.Ge,
	"maximum": bc.Maximum, "minimum": bc.Minimum, "pow": bc.Pow, "remainder": bc.Remainder,
	"fmod": bc.Fmod, "floor_divide": bc.FloorDivide, "logical_and": bc.LogicalAnd,
	"logical_or": bc.LogicalOr, "logical_xor": bc.LogicalXor, "bitwise_and": bc.BitwiseAnd,
	"bitwise_or": bc.BitwiseOr, "bitwise_xor": bc.BitwiseXor,
	"bitwise_left_shift": bc.BitwiseLeftShift, "bitwise_right_shift": bc.BitwiseRightShift,
	"atan2": bc.Atan2, "hypot": bc.Hypot,
}

// opsCell is jsonCell, also for the strings "nan", "inf" and "-inf" of the newer files.
func opsCell(d bc.DType, v any) cell {
	s, ok := v.(string)
	if !ok {
		return jsonCell(d, v)
	}
	if s != "nan" {
		return numCell(d, map[string]float64{"inf": math.Inf(1), "-inf": math.Inf(-1)}[s])
	}
	// A quiet NaN of d (near counts every NaN equal).
	nan := map[bc.DType]uint64{bc.Float16: 0x7e00, bc.BFloat16: 0x7fc0, bc.Float32: 0x7fc00000,
		bc.Float64: 0x7ff8000000000000}
	return cell{d, nan[d]}
}

func opsCells(d bc.DType, v any) []cell {
	var out []cell
	for _, x := range v.([]any) {
		out = append(out, opsCell(d, x))
	}
	return out
}

// opsOperand is operand (conformance_test.go) for the newer files: its storage, the view, and
// the storage's elements.
func opsOperand(t *testing.T, v any) (storage, view *bc.Tensor, cells []cell) {
	o := row(v.(map[string]any))
	cells = opsCells(dtypeNames[o.str("dtype")], o["storage"])
	storage = cellTensor(t, dtypeNames[o.str("dtype")], cells)
	view = must(storage.AsStrided(o.ints("shape"), o.ints("strides"), o.num("offset")))(t)
	return storage, view, cells
}

// opsDiffer compares a tensor's elements with want, within ulps for floats and, with ties, a
// zero of either sign ("" when they agree).
func opsDiffer(t *testing.T, x *bc.Tensor, want []cell, ulps int, ties bool) string {
	got := readCells(t, x)
	if len(got) != len(want) {
		return fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	zero := func(c cell) bool { return isFloat(c.d) && c.ordered() == 0 }
	for i := range got {
		if !near(got[i], want[i], ulps) && !(ties && zero(got[i]) && zero(want[i])) {
			return fmt.Sprintf("element %d is %v, want %v\n      got  %v\n      want %v", i, got[i], want[i], got, want)
		}
	}
	return ""
}

// sampleWithErrors keeps every k-th row (see every) and every row that fails with kind "value"
// (too few to sample).
func sampleWithErrors(rows []row, k int) []row {
	out := every(rows, k)
	for i, r := range rows {
		if i%k != 0 && r.has("kind") && r.str("kind") == "value" {
			out = append(out, r)
		}
	}
	return out
}

func TestConformanceOps(t *testing.T) {
	t.Run("ops_values", conformOpsValues)
	t.Run("ops_promotion", conformOpsPromotion)
	t.Run("where", conformWhere)
}

func conformOpsValues(t *testing.T) {
	f := &failures{t: t, file: "ops_values.jsonl"}
	defer f.done()
	for _, r := range sampleWithErrors(readRows(t, f.file), 1) {
		f.checked++
		op, ok := moreOps[r.str("op")]
		if !ok {
			t.Fatalf("unknown op %q", r.str("op"))
		}
		ulps := 0
		if op == bc.Pow || op == bc.Atan2 || op == bc.Hypot {
			ulps = 1 // PyTorch's vectorised and scalar loops may differ by one unit
		}
		ties := r.boolean("signed_zero_ties")
		sa, a, aBefore := opsOperand(t, r["a"])
		sb, b, bBefore := opsOperand(t, r["b"])
		var res *bc.Tensor
		var err error
		if r.boolean("inplace") {
			err = op.InPlace(a, b)
			res = a
		} else {
			res, err = op.Apply(a, b)
		}
		if p := cellsDiffer(t, sb, bBefore, 0); p != "" {
			f.add(r, "input b changed: %s", p)
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "%s: %s", r.str("op"), p)
			}
			if p := cellsDiffer(t, sa, aBefore, 0); p != "" {
				f.add(r, "refused call changed a: %s", p)
			}
			continue
		}
		if err != nil {
			f.add(r, "%s: %v", r.str("op"), err)
			continue
		}
		want := row(r["result"].(map[string]any))
		wd := dtypeNames[want.str("dtype")]
		if res.DType() != wd || !reflect.DeepEqual(res.Shape(), want.ints("shape")) {
			f.add(r, "result %v", res)
			continue
		}
		if p := opsDiffer(t, res, opsCells(wd, want["data"]), ulps, ties); p != "" {
			f.add(r, "result values: %s", p)
		}
		if r.boolean("inplace") {
			if p := opsDiffer(t, sa, opsCells(wd, want["storage_after"]), ulps, ties); p != "" {
				f.add(r, "storage of a after the in-place op: %s", p)
			}
			continue
		}
		if p := cellsDiffer(t, sa, aBefore, 0); p != "" {
			f.add(r, "input a changed: %s", p)
		}
		// Out, into a tensor of the result's type and shape.
		out := must(bc.Zeros(wd, want.ints("shape")...))(t)
		if err := op.Out(out, a, b); err != nil {
			f.add(r, "Out: %v", err)
		} else if p := opsDiffer(t, out, opsCells(wd, want["data"]), ulps, ties); p != "" {
			f.add(r, "Out: %s", p)
		}
	}
}

// oneOpOneMore is what 1 op 1 gives (every dtype holds it exactly); false for atan2 and hypot,
// whose values are not exact.
func oneOpOneMore(op bc.Op) (float64, bool) {
	v, ok := map[bc.Op]float64{
		bc.Eq: 1, bc.Ne: 0, bc.Lt: 0, bc.Le: 1, bc.Gt: 0, bc.Ge: 1, bc.Maximum: 1, bc.Minimum: 1,
		bc.Pow: 1, bc.Remainder: 0, bc.Fmod: 0, bc.FloorDivide: 1, bc.LogicalAnd: 1,
		bc.LogicalOr: 1, bc.LogicalXor: 0, bc.BitwiseAnd: 1, bc.BitwiseOr: 1, bc.BitwiseXor: 0,
		bc.BitwiseLeftShift: 2, bc.BitwiseRightShift: 0,
	}[op]
	return v, ok
}

// checkOnes checks that x holds n copies of what 1 op 1 gives in x's type (where it is exact).
func checkOnes(t *testing.T, x *bc.Tensor, op bc.Op, n int) string {
	v, ok := oneOpOneMore(op)
	if !ok {
		return ""
	}
	want := make([]cell, n)
	for i := range want {
		want[i] = numCell(x.DType(), v)
	}
	return cellsDiffer(t, x, want, 0)
}

func conformOpsPromotion(t *testing.T) {
	f := &failures{t: t, file: "ops_promotion.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		op := moreOps[r.str("op")]
		da, db := dtypeNames[r.str("a")], dtypeNames[r.str("b")]
		sa, sb, rs := []int{2}, []int{2}, []int{2}
		if r.boolean("a_0d") {
			sa = nil
		}
		if r.boolean("b_0d") {
			sb = nil
		}
		if sa == nil && sb == nil {
			rs = nil
		}
		a := must(bc.Ones(da, sa...))(t)
		b := must(bc.Ones(db, sb...))(t)
		res, err := op.Apply(a, b)
		outType := bc.Float32
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "Apply: %s", p)
			}
		} else {
			outType = dtypeNames[r.str("result")]
			if err != nil {
				f.add(r, "Apply: %v", err)
			} else if res.DType() != outType || res.NDim() != len(rs) {
				f.add(r, "Apply: result %v", res)
			} else if p := checkOnes(t, res, op, numel(rs)); p != "" {
				f.add(r, "Apply: 1 op 1: %s", p)
			}
		}
		out := must(bc.Full(outType, 7, rs...))(t)
		before := readCells(t, out)
		err = op.Out(out, a, b)
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "Out: %s", p)
			}
			if p := cellsDiffer(t, out, before, 0); p != "" {
				f.add(r, "a refused Out changed out: %s", p)
			}
		} else if err != nil {
			f.add(r, "Out: %v", err)
		} else if p := checkOnes(t, out, op, numel(rs)); p != "" {
			f.add(r, "Out: 1 op 1: %s", p)
		}
		if !r.has("inplace_result") && !r.has("inplace_error") {
			continue
		}
		self := must(bc.Ones(da, sa...))(t)
		before = readCells(t, self)
		err = op.InPlace(self, b)
		if r.has("inplace_error") {
			if p := errProblem(err, r.str("inplace_kind"), r.str("inplace_error"), true); p != "" {
				f.add(r, "InPlace: %s", p)
			}
			if p := cellsDiffer(t, self, before, 0); p != "" {
				f.add(r, "a refused InPlace changed self: %s", p)
			}
		} else if err != nil {
			f.add(r, "InPlace: %v", err)
		} else if self.DType() != dtypeNames[r.str("inplace_result")] {
			f.add(r, "InPlace: type %v", self.DType())
		} else if p := checkOnes(t, self, op, numel(sa)); p != "" {
			f.add(r, "InPlace: 1 op= 1: %s", p)
		}
	}
}

// conformWhere checks every row of where.jsonl through Where, and the successful ones again
// through WhereOut. (The uint8 deprecation warning comes once per process, so whether this test
// sees it depends on the tests before it: the Rust suite checks it.)
func conformWhere(t *testing.T) {
	f := &failures{t: t, file: "where.jsonl"}
	defer f.done()
	for _, r := range readRows(t, f.file) {
		f.checked++
		var storages, views [3]*bc.Tensor
		var before [3][]cell
		for i, k := range []string{"cond", "a", "b"} {
			storages[i], views[i], before[i] = opsOperand(t, r[k])
		}
		res, err := bc.Where(views[0], views[1], views[2])
		for i := range storages {
			if p := cellsDiffer(t, storages[i], before[i], 0); p != "" {
				f.add(r, "operand %d changed: %s", i, p)
			}
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "Where: %s", p)
			}
			if res != nil {
				f.add(r, "Where returned a tensor with its error")
			}
			continue
		}
		want := row(r["result"].(map[string]any))
		wd := dtypeNames[want.str("dtype")]
		if err != nil {
			f.add(r, "Where: %v", err)
			continue
		}
		if res.DType() != wd || !reflect.DeepEqual(res.Shape(), want.ints("shape")) {
			f.add(r, "Where: result %v", res)
			continue
		}
		if p := cellsDiffer(t, res, opsCells(wd, want["data"]), 0); p != "" {
			f.add(r, "Where: %s", p)
		}
		out := must(bc.Zeros(wd, want.ints("shape")...))(t)
		if err := bc.WhereOut(out, views[0], views[1], views[2]); err != nil {
			f.add(r, "WhereOut: %v", err)
		} else if p := cellsDiffer(t, out, opsCells(wd, want["data"]), 0); p != "" {
			f.add(r, "WhereOut: %s", p)
		}
	}
}

// The exact texts of the C API's refusals come through: a zero integer divisor (ErrValue), a
// float condition, and an out of the wrong type for WhereOut.
func TestOpsErrors(t *testing.T) {
	a := must(bc.FromSlice([]int{3}, []int32{7, -7, 1}))(t)
	z := must(bc.FromSlice([]int{3}, []int32{2, 0, 1}))(t)
	_, err := bc.Remainder.Apply(a, z)
	var e *bc.Error
	if !errors.As(err, &e) || !errors.Is(err, bc.ErrValue) || e.Kind != bc.KindZeroDivision ||
		e.Message != "ZeroDivisionError" {
		t.Errorf("remainder by zero: %#v", err)
	}
	before := must(bc.Data[int32](a))(t)
	if err := bc.FloorDivide.InPlace(a, z); !errors.Is(err, bc.ErrValue) {
		t.Errorf("floor_divide_ by zero: %v", err)
	}
	if got := must(bc.Data[int32](a))(t); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused in-place division changed a: %v", got)
	}

	x := f32(t, []int{3}, 1, 2, 3)
	_, err = bc.Where(x, x, x)
	if !errors.As(err, &e) || !errors.Is(err, bc.ErrDType) || e.Kind != bc.KindWhereCondition ||
		e.Message != "where expected condition to be a boolean tensor, but got a tensor with dtype Float" {
		t.Errorf("float condition: %#v", err)
	}
	cond := must(bc.FromSlice([]int{3}, []bool{true, false, true}))(t)
	out := must(bc.Zeros(bc.Int32, 3))(t)
	err = bc.WhereOut(out, cond, x, x)
	if !errors.As(err, &e) || !errors.Is(err, bc.ErrDType) || e.Kind != bc.KindOutDType ||
		e.Message != "Expected out type to be Float but got Int" {
		t.Errorf("WhereOut into int32: %#v", err)
	}
	_, err = bc.BitwiseAnd.Apply(x, x)
	if !errors.As(err, &e) || !errors.Is(err, bc.ErrDType) || e.Kind != bc.KindNotImplemented ||
		e.Message != `"bitwise_and_cpu" not implemented for 'Float'` {
		t.Errorf("bitwise_and of floats: %#v", err)
	}
}
