package broadcast_test

// The further operations, where and expressions through the Go package, checked against the
// PyTorch conformance data (tests/data/pytorch: ops_values.jsonl, ops_promotion.jsonl and
// where.jsonl, from PyTorch 2.15 CPU), with the helpers of conformance_test.go. The Rust suite
// checks every row through the C ABI; this checks that the Go forms hand them through unchanged.

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

// tiesDiffer is cellsDiffer where a zero may have either sign.
func tiesDiffer(t *testing.T, x *bc.Tensor, want []cell) string {
	got := readCells(t, x)
	if len(got) != len(want) {
		return fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	zero := func(c cell) bool { return isFloat(c.d) && c.ordered() == 0 }
	for i := range got {
		if !near(got[i], want[i], 0) && !(zero(got[i]) && zero(want[i])) {
			return fmt.Sprintf("element %d is %v, want %v", i, got[i], want[i])
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
		op, ok := opsByName[r.str("op")]
		if !ok {
			t.Fatalf("unknown op %q", r.str("op"))
		}
		ulps := opUlps[op]
		sa, a, aBefore := operand(t, r["a"])
		sb, b, bBefore := operand(t, r["b"])
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
		if r.boolean("signed_zero_ties") {
			// maximum/minimum of 0.0 and -0.0 (three rows): the result's zeros may have either sign.
			want := row(r["result"].(map[string]any))
			if err != nil {
				f.add(r, "%s: %v", r.str("op"), err)
			} else if res.DType() != dtypeNames[want.str("dtype")] {
				f.add(r, "result %v", res)
			} else if p := tiesDiffer(t, res, jsonCells(res.DType(), want["data"])); p != "" {
				f.add(r, "result values: %s", p)
			}
			continue
		}
		checkOutcome(t, f, r, res, err, sa, aBefore, ulps)
		if r.has("error") || r.boolean("inplace") {
			continue
		}
		// Out, into a tensor of the result's type and shape.
		want := row(r["result"].(map[string]any))
		wd := dtypeNames[want.str("dtype")]
		out := must(bc.Zeros(wd, want.ints("shape")...))(t)
		if err := op.Out(out, a, b); err != nil {
			f.add(r, "Out: %v", err)
		} else if p := cellsDiffer(t, out, jsonCells(wd, want["data"]), ulps); p != "" {
			f.add(r, "Out: %s", p)
		}
	}
}

func conformOpsPromotion(t *testing.T) { checkPromotion(t, "ops_promotion.jsonl", opsByName, 1) }

// conformWhere checks every row of where.jsonl (see every) through Where, and the successful ones again
// through WhereOut. (The uint8 deprecation warning comes once per process, so whether this test
// sees it depends on the tests before it: the Rust suite checks it.)
func conformWhere(t *testing.T) {
	f := &failures{t: t, file: "where.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		var storages, views [3]*bc.Tensor
		var before [3][]cell
		for i, k := range []string{"cond", "a", "b"} {
			storages[i], views[i], before[i] = operand(t, r[k])
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
		if p := cellsDiffer(t, res, jsonCells(wd, want["data"]), 0); p != "" {
			f.add(r, "Where: %s", p)
		}
		out := must(bc.Zeros(wd, want.ints("shape")...))(t)
		if err := bc.WhereOut(out, views[0], views[1], views[2]); err != nil {
			f.add(r, "WhereOut: %v", err)
		} else if p := cellsDiffer(t, out, jsonCells(wd, want["data"]), 0); p != "" {
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
