package broadcast_test

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"

	bc "libbroadcast/broadcast"
)

// A sample of the unary, three-operand and further-reduction conformance rows through the Go
// package: the same results, types, shapes and errors as PyTorch 2.15 (the Rust tests check
// every row through the C API).
func TestMathConformance(t *testing.T) {
	t.Run("unary_values", conformUnary)
	t.Run("ternary_values", conformTernary)
	t.Run("reductions_more", conformReductionsMore)
}

var unaryOps = func() map[string]bc.UnaryOp {
	m := map[string]bc.UnaryOp{}
	for op := bc.UnaryOp(0); op.String() != "UnaryOp("+itoa(int(op))+")"; op++ {
		m[op.String()] = op
	}
	return m
}()

func itoa(n int) string { return strconv.Itoa(n) }

// jsonFloat is a number of the data: a JSON number, or "nan", "inf", "-inf".
func jsonFloat(v any) float64 {
	switch x := v.(type) {
	case string:
		return map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}[x]
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			panic(err)
		}
		return f
	}
	panic("not a number")
}

// checkResult compares a result with a row's result (dtype, shape, values within ulps).
func checkResult(t *testing.T, f *failures, r row, res *bc.Tensor, ulps int) {
	want := row(r["result"].(map[string]any))
	wd := dtypeNames[want.str("dtype")]
	if res.DType() != wd || !reflect.DeepEqual(res.Shape(), want.ints("shape")) {
		f.add(r, "result %v, want %v %v", res, wd, want.ints("shape"))
		return
	}
	if p := cellsDiffer(t, res, jsonCells(wd, want["data"]), ulps); p != "" {
		f.add(r, "result values: %s", p)
	}
}

func conformUnary(t *testing.T) {
	f := &failures{t: t, file: "unary_values.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 3) {
		// Rows with an absolute tolerance, or counted in another dtype, are left to the Rust test.
		if r.has("abs_tol") || r.has("ulp_dtype") {
			continue
		}
		f.checked++
		op, ok := unaryOps[r.str("op")]
		if !ok {
			t.Fatalf("no UnaryOp named %q", r.str("op"))
		}
		ulps := 0
		if r.has("ulp") {
			ulps = r.num("ulp")
		}
		_, x, _ := operand(t, r["x"])
		var res *bc.Tensor
		var err error
		switch r.str("variant") {
		case "function":
			res, err = op.Apply(x)
		case "inplace":
			err, res = op.InPlace(x), x
		default:
			_, out, _ := operand(t, r["out"])
			err, res = op.Out(out, x), out
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "%s: %s", op, p)
			}
			continue
		}
		if err != nil {
			f.add(r, "%s: %v", op, err)
			continue
		}
		checkResult(t, f, r, res, ulps)
	}
}

// tensorOrNumber is a row's operand: a tensor, a number, or absent.
func tensorOrNumber(t *testing.T, v any) (*bc.Tensor, *bc.Number) {
	if v == nil {
		return nil, nil
	}
	m := v.(map[string]any)
	if _, ok := m["type"]; ok {
		n := rowNumber(row(m))
		return nil, &n
	}
	_, view, _ := operand(t, v)
	return view, nil
}

func rowNumber(r row) bc.Number {
	switch r.str("type") {
	case "bool":
		return bc.NumberOf(r["value"].(bool))
	case "int":
		return bc.NumberOf(int64(jsonInt(r["value"])))
	default:
		return bc.NumberOf(jsonFloat(r["value"]))
	}
}

func conformTernary(t *testing.T) {
	f := &failures{t: t, file: "ternary_values.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 2) {
		f.checked++
		_, input, _ := operand(t, r["input"])
		var out *bc.Tensor
		if r.has("out") {
			_, out, _ = operand(t, r["out"])
		}
		form := map[string]int{"function": 0, "inplace": 1, "out": 2}[r.str("variant")]
		var res *bc.Tensor
		var err error
		switch r.str("op") {
		case "lerp":
			end, _ := tensorOrNumber(t, r["end"])
			wt, wn := tensorOrNumber(t, r["weight"])
			switch {
			case wn != nil && form == 0:
				res, err = bc.LerpNumber(input, end, *wn)
			case wn != nil && form == 1:
				err = bc.LerpNumberInPlace(input, end, *wn)
			case wn != nil:
				err = bc.LerpNumberOut(out, input, end, *wn)
			case form == 0:
				res, err = bc.Lerp(input, end, wt)
			case form == 1:
				err = bc.LerpInPlace(input, end, wt)
			default:
				err = bc.LerpOut(out, input, end, wt)
			}
		case "addcmul", "addcdiv":
			t1, _ := tensorOrNumber(t, r["tensor1"])
			t2, _ := tensorOrNumber(t, r["tensor2"])
			v := rowNumber(row(r["value"].(map[string]any)))
			fs := [2][3]func() error{
				{func() (e error) { res, e = bc.Addcmul(input, t1, t2, v); return }, func() error { return bc.AddcmulInPlace(input, t1, t2, v) }, func() error { return bc.AddcmulOut(out, input, t1, t2, v) }},
				{func() (e error) { res, e = bc.Addcdiv(input, t1, t2, v); return }, func() error { return bc.AddcdivInPlace(input, t1, t2, v) }, func() error { return bc.AddcdivOut(out, input, t1, t2, v) }},
			}
			k := 0
			if r.str("op") == "addcdiv" {
				k = 1
			}
			err = fs[k][form]()
		default:
			lt, ln := tensorOrNumber(t, r["min"])
			ht, hn := tensorOrNumber(t, r["max"])
			numbers := ln != nil || hn != nil || (lt == nil && ht == nil)
			switch {
			case numbers && form == 0:
				res, err = bc.ClampNumber(input, ln, hn)
			case numbers && form == 1:
				err = bc.ClampNumberInPlace(input, ln, hn)
			case numbers:
				err = bc.ClampNumberOut(out, input, ln, hn)
			case form == 0:
				res, err = bc.Clamp(input, lt, ht)
			case form == 1:
				err = bc.ClampInPlace(input, lt, ht)
			default:
				err = bc.ClampOut(out, input, lt, ht)
			}
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "%s: %s", r.str("op"), p)
			}
			continue
		}
		if err != nil {
			f.add(r, "%s: %v", r.str("op"), err)
			continue
		}
		switch form {
		case 1:
			res = input
		case 2:
			res = out
		}
		checkResult(t, f, r, res, 0)
	}
}

// The exact rows of reductions_more.jsonl (all, any, argmax, argmin; the floating ones need the
// error bound the Rust test applies).
func conformReductionsMore(t *testing.T) {
	f := &failures{t: t, file: "reductions_more.jsonl"}
	defer f.done()
	for _, r := range readRows(t, f.file) {
		op := r.str("op")
		if op != "all" && op != "any" && op != "argmax" && op != "argmin" {
			continue
		}
		// dim=() (reduce nothing) has no Go form: All and Any with no dims reduce every one.
		if r["dim"] != nil && len(r.ints("dim")) == 0 && (op == "all" || op == "any") {
			continue
		}
		f.checked++
		_, x, _ := operand(t, r["input"])
		var dims []int
		if r["dim"] != nil {
			dims = r.ints("dim")
		}
		keepdim := r.boolean("keepdim")
		var res *bc.Tensor
		var err error
		switch op {
		case "all":
			res, err = bc.All(x, keepdim, dims...)
		case "any":
			res, err = bc.Any(x, keepdim, dims...)
		case "argmax":
			res, err = bc.Argmax(x, keepdim, dims...)
		default:
			res, err = bc.Argmin(x, keepdim, dims...)
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "%s: %s", op, p)
			}
			continue
		}
		if err != nil {
			f.add(r, "%s: %v", op, err)
			continue
		}
		checkResult(t, f, r, res, 0)
	}
}
