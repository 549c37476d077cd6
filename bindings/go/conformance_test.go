package broadcast_test

// A sample of the PyTorch conformance data (tests/data/pytorch, generated from PyTorch 2.15 CPU)
// checked through the Go package: result shapes and exact messages, in-place shapes, n-shape
// broadcasting, expand views, element values over strided views, type promotion, overlapping
// writes and the two legacy switches. The Rust suite checks every row through the C ABI; this
// checks that the Go package hands every one of those answers through unchanged.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

const dataDir = "../../tests/data/pytorch"

type row map[string]any

// readRows reads one JSON-lines file of the conformance data (numbers kept exact).
func readRows(t *testing.T, name string) []row {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dataDir, name))
	if err != nil {
		t.Fatalf("conformance data: %v", err)
	}
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var r row
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", name)
	}
	return rows
}

// every keeps rows 0, k, 2k, ... (a fixed sample, the same on every run); 25 times fewer with
// -short (the -tags bcdebug run, which collects garbage at every handle read).
func every(rows []row, k int) []row {
	if testing.Short() {
		k *= 25
	}
	var out []row
	for i := 0; i < len(rows); i += k {
		out = append(out, rows[i])
	}
	return out
}

func (r row) str(k string) string { return r[k].(string) }
func (r row) boolean(k string) bool {
	b, _ := r[k].(bool)
	return b
}
func (r row) has(k string) bool   { _, ok := r[k]; return ok }
func (r row) ints(k string) []int { return jsonInts(r[k]) }
func (r row) num(k string) int    { return jsonInt(r[k]) }

func jsonInt(v any) int {
	n, err := v.(json.Number).Int64()
	if err != nil {
		panic(err)
	}
	return int(n)
}

func jsonInts(v any) []int {
	out := []int{}
	for _, x := range v.([]any) {
		out = append(out, jsonInt(x))
	}
	return out
}

func kindStatus(kind string) bc.Status {
	switch kind {
	case "broadcast", "inplace", "expand", "shape":
		return bc.ErrShape
	case "dtype", "unsupported":
		return bc.ErrDType
	case "overlap":
		return bc.ErrOverlap
	case "value":
		return bc.ErrValue
	case "dim", "argument":
		return bc.ErrInvalidArg
	case "empty":
		return bc.ErrShape
	}
	panic("unknown error kind " + kind)
}

// errProblem describes how err differs from the expected failure ("" when it does not).
func errProblem(err error, kind, msg string, exact bool) string {
	want := kindStatus(kind)
	e, ok := err.(*bc.Error)
	switch {
	case err == nil:
		return fmt.Sprintf("succeeded, want status %d %q", want, msg)
	case !ok:
		return fmt.Sprintf("error of type %T: %v", err, err)
	case e.Status != want:
		return fmt.Sprintf("status %d (%q), want %d (%q)", e.Status, e.Message, want, msg)
	case exact && e.Message != msg:
		return fmt.Sprintf("message\n      %q\n  want %q", e.Message, msg)
	}
	return ""
}

// failures collects the rows that disagree, printing the first ones in full.
type failures struct {
	t       *testing.T
	file    string
	checked int
	n       int
}

func (f *failures) add(r row, format string, args ...any) {
	f.n++
	if f.n <= 10 {
		line, _ := json.Marshal(r)
		f.t.Errorf("%s: %s\n    row %s", f.file, fmt.Sprintf(format, args...), line)
	}
}

var rowsChecked int

func (f *failures) done() {
	rowsChecked += f.checked
	f.t.Logf("%s: checked %d rows, %d failed", f.file, f.checked, f.n)
}

func TestConformance(t *testing.T) {
	rowsChecked = 0
	t.Run("binary_shapes", conformBinaryShapes)
	t.Run("inplace_shapes", conformInPlaceShapes)
	t.Run("nary_shapes", conformNaryShapes)
	t.Run("expand", conformExpand)
	t.Run("values", conformValues)
	t.Run("promotion", conformPromotion)
	t.Run("overlap", conformOverlap)
	t.Run("legacy", conformLegacy)
	t.Logf("%d conformance rows checked", rowsChecked)
	if rowsChecked < 2000 && !testing.Short() {
		t.Errorf("only %d conformance rows checked, want at least 2000", rowsChecked)
	}
}

func conformBinaryShapes(t *testing.T) {
	f := &failures{t: t, file: "binary_shapes.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 8) {
		f.checked++
		a, b := r.ints("a"), r.ints("b")
		ta := must(bc.Zeros(bc.Float32, a...))(t)
		tb := must(bc.Ones(bc.Float32, b...))(t)
		res, err := bc.Add.Apply(ta, tb)
		shape, serr := bc.BroadcastShapes(a, b)
		isb, ierr := bc.IsBroadcastable(a, b)
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "Add.Apply: %s", p)
			}
			if res != nil {
				f.add(r, "Add.Apply returned a tensor with its error")
			}
			if p := errProblem(serr, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "BroadcastShapes: %s", p)
			}
			if isb || ierr != nil {
				f.add(r, "IsBroadcastable = %v, %v", isb, ierr)
			}
			continue
		}
		want := r.ints("shape")
		if err != nil {
			f.add(r, "Add.Apply: %v", err)
		} else if got := res.Shape(); !reflect.DeepEqual(got, want) {
			f.add(r, "Add.Apply: shape %v", got)
		} else if v := must(bc.Data[float32](res))(t); !reflect.DeepEqual(v, fill(len(v), 1)) || len(v) != numel(want) {
			f.add(r, "0 + 1 gave %v", v)
		}
		if serr != nil || !reflect.DeepEqual(shape, want) {
			f.add(r, "BroadcastShapes = %v, %v", shape, serr)
		}
		if !isb || ierr != nil {
			f.add(r, "IsBroadcastable = %v, %v", isb, ierr)
		}
	}
}

func conformInPlaceShapes(t *testing.T) {
	f := &failures{t: t, file: "inplace_shapes.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 8) {
		f.checked++
		s := r.ints("self")
		before := arange(numel(s), 0, 1)
		self := f32(t, s, before...)
		err := bc.Add.InPlace(self, must(bc.Ones(bc.Float32, r.ints("other")...))(t))
		after := must(bc.Data[float32](self))(t)
		if got := self.Shape(); !reflect.DeepEqual(got, s) {
			f.add(r, "self changed shape to %v", got)
		}
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "Add.InPlace: %s", p)
			}
			if !reflect.DeepEqual(after, before) {
				f.add(r, "a refused InPlace changed self: %v", after)
			}
			continue
		}
		if err != nil {
			f.add(r, "Add.InPlace: %v", err)
		} else if want := arange(numel(s), 1, 1); !reflect.DeepEqual(after, want) {
			f.add(r, "self += 1 gave %v", after)
		}
	}
}

func conformNaryShapes(t *testing.T) {
	f := &failures{t: t, file: "nary_shapes.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		var shapes [][]int
		var ts []*bc.Tensor
		for _, s := range r["shapes"].([]any) {
			shape := jsonInts(s)
			shapes = append(shapes, shape)
			ts = append(ts, must(bc.Ones(bc.Float32, shape...))(t))
		}
		got, err := bc.BroadcastShapesN(shapes...)
		views, verr := bc.BroadcastTensors(ts...)
		if r.has("error") {
			if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "BroadcastShapesN: %s", p)
			}
			if p := errProblem(verr, r.str("kind"), r.str("error"), true); p != "" {
				f.add(r, "BroadcastTensors: %s", p)
			}
			if views != nil {
				f.add(r, "BroadcastTensors returned views with its error")
			}
			continue
		}
		want := r.ints("shape")
		if err != nil || !reflect.DeepEqual(got, want) {
			f.add(r, "BroadcastShapesN = %v, %v", got, err)
		}
		if verr != nil || len(views) != len(ts) {
			f.add(r, "BroadcastTensors: %d views, %v", len(views), verr)
			continue
		}
		for k, v := range views {
			if s := v.Shape(); !reflect.DeepEqual(s, want) {
				f.add(r, "BroadcastTensors: view %d has shape %v", k, s)
			}
			v.Close()
		}
	}
}

func conformExpand(t *testing.T) {
	f := &failures{t: t, file: "expand.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		shape, sizes := r.ints("shape"), r.ints("sizes")
		src := f32(t, shape, arange(numel(shape), 0, 1)...)
		v, err := src.Expand(sizes...)
		if r.has("error") {
			exact := !r.has("exact") || r.boolean("exact")
			if p := errProblem(err, r.str("kind"), r.str("error"), exact); p != "" {
				f.add(r, "Expand: %s", p)
			}
			continue
		}
		want := r.ints("result")
		if err != nil {
			f.add(r, "Expand: %v", err)
			continue
		}
		if got := v.Shape(); !reflect.DeepEqual(got, want) {
			f.add(r, "Expand: shape %v", got)
			continue
		}
		zero := map[int]bool{}
		for _, d := range r.ints("zero_stride_dims") {
			zero[d] = true
		}
		for d, st := range v.Strides() {
			// A size-1 dimension's stride addresses nothing: only broadcast dimensions (size
			// other than 1) are listed, and every other dimension must have a nonzero stride.
			if zero[d] && st != 0 || !zero[d] && st == 0 && want[d] != 1 {
				f.add(r, "Expand: strides %v (dim %d)", v.Strides(), d)
			}
		}
		// The view reads the source through the broadcast rule.
		got := must(bc.Data[float32](v))(t)
		for flat := range got {
			if w := float32(sourceIndex(flat, want, shape)); got[flat] != w {
				f.add(r, "Expand: element %d is %v, want %v", flat, got[flat], w)
				break
			}
		}
	}
}

// sourceIndex is the row-major index in a tensor of shape src of the element that broadcasting
// it to shape dst places at row-major index flat.
func sourceIndex(flat int, dst, src []int) int {
	idx, stride := 0, 1
	for d := len(dst) - 1; d >= 0; d-- {
		i := flat % dst[d]
		flat /= dst[d]
		if s := d - (len(dst) - len(src)); s >= 0 {
			if src[s] != 1 {
				idx += i * stride
			}
			stride *= src[s]
		}
	}
	return idx
}

func numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

var dtypeNames = map[string]bc.DType{
	"bool": bc.Bool, "uint8": bc.Uint8, "int8": bc.Int8, "int16": bc.Int16, "int32": bc.Int32,
	"int64": bc.Int64, "float16": bc.Float16, "bfloat16": bc.BFloat16, "float32": bc.Float32,
	"float64": bc.Float64,
}

// operand is one strided operand of values.jsonl: its storage as a tensor, and the view.
func operand(t *testing.T, v any) (storage, view *bc.Tensor, cells []cell) {
	o := row(v.(map[string]any))
	d := dtypeNames[o.str("dtype")]
	for _, x := range o["storage"].([]any) {
		cells = append(cells, jsonCell(d, x))
	}
	storage = cellTensor(t, d, cells)
	view = must(storage.AsStrided(o.ints("shape"), o.ints("strides"), o.num("offset")))(t)
	return storage, view, cells
}

func conformValues(t *testing.T) {
	f := &failures{t: t, file: "values.jsonl"}
	defer f.done()
	for _, r := range every(readRows(t, f.file), 2) {
		f.checked++
		op := opCode(t, r.str("op"))
		ulps := 0
		if op == bc.Div {
			ulps = 1 // PyTorch's vectorised and scalar division may differ by one unit
		}
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
		checkOutcome(t, f, r, res, err, sa, aBefore, ulps)
	}
}

// checkOutcome checks a call on operand a (storage sa, holding aBefore before the call) against
// a row of values.jsonl or scalar.jsonl: the error, or the result and what became of a.
func checkOutcome(t *testing.T, f *failures, r row, res *bc.Tensor, err error, sa *bc.Tensor,
	aBefore []cell, ulps int) {
	if r.has("error") {
		if p := errProblem(err, r.str("kind"), r.str("error"), true); p != "" {
			f.add(r, "%s: %s", r.str("op"), p)
		}
		if p := cellsDiffer(t, sa, aBefore, 0); p != "" {
			f.add(r, "refused call changed a: %s", p)
		}
		return
	}
	if err != nil {
		f.add(r, "%s: %v", r.str("op"), err)
		return
	}
	want := row(r["result"].(map[string]any))
	wd := dtypeNames[want.str("dtype")]
	if res.DType() != wd || !reflect.DeepEqual(res.Shape(), want.ints("shape")) {
		f.add(r, "result %v", res)
		return
	}
	if p := cellsDiffer(t, res, jsonCells(wd, want["data"]), ulps); p != "" {
		f.add(r, "result values: %s", p)
	}
	if r.boolean("inplace") {
		if p := cellsDiffer(t, sa, jsonCells(wd, want["storage_after"]), ulps); p != "" {
			f.add(r, "storage of a after the in-place op: %s", p)
		}
	} else if p := cellsDiffer(t, sa, aBefore, 0); p != "" {
		f.add(r, "input a changed: %s", p)
	}
}

func conformPromotion(t *testing.T) { checkPromotion(t, "promotion.jsonl", opsByName, 2) }

// checkPromotion checks every k-th row of a promotion file (ops names its operations): the result
// type of a op b, of Out and InPlace, and the value 1 op 1, or the exact error.
func checkPromotion(t *testing.T, file string, ops map[string]bc.Op, k int) {
	f := &failures{t: t, file: file}
	defer f.done()
	for _, r := range every(readRows(t, f.file), k) {
		f.checked++
		op := ops[r.str("op")]
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
			} else if p := onesDiffer(t, res, op, numel(rs)); p != "" {
				f.add(r, "Apply: 1 op 1: %s", p)
			}
		}
		// Out, into a tensor of the expected result type.
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
		} else if p := onesDiffer(t, out, op, numel(rs)); p != "" {
			f.add(r, "Out: 1 op 1: %s", p)
		}
		// In place, where the row says what happens.
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
		} else if p := onesDiffer(t, self, op, numel(sa)); p != "" {
			f.add(r, "InPlace: 1 op= 1: %s", p)
		}
	}
}

// onesDiffer compares x with n copies of what 1 op 1 gives in x's type ("" when they agree, and
// for atan2 and hypot, whose values are not exact).
func onesDiffer(t *testing.T, x *bc.Tensor, op bc.Op, n int) string {
	v, ok := map[bc.Op]float64{
		bc.Add: 2, bc.Sub: 0, bc.Mul: 1, bc.Div: 1, bc.Eq: 1, bc.Ne: 0, bc.Lt: 0, bc.Le: 1,
		bc.Gt: 0, bc.Ge: 1, bc.Maximum: 1, bc.Minimum: 1, bc.Pow: 1, bc.Remainder: 0, bc.Fmod: 0,
		bc.FloorDivide: 1, bc.LogicalAnd: 1, bc.LogicalOr: 1, bc.LogicalXor: 0, bc.BitwiseAnd: 1,
		bc.BitwiseOr: 1, bc.BitwiseXor: 0, bc.BitwiseLeftShift: 2, bc.BitwiseRightShift: 0,
	}[op]
	if !ok {
		return ""
	}
	want := make([]cell, n)
	for i := range want {
		want[i] = numCell(x.DType(), v)
	}
	return cellsDiffer(t, x, want, 0)
}

func conformOverlap(t *testing.T) {
	f := &failures{t: t, file: "overlap.jsonl"}
	defer f.done()
	one := must(bc.Scalar[float32](1))(t)
	for _, r := range every(readRows(t, f.file), 1) {
		f.checked++
		if r.str("case") == "expanded_self" {
			s := row(r["self"].(map[string]any))
			base := f32(t, []int{s.num("base_len")}, arange(s.num("base_len"), 0, 1)...)
			self := must(base.AsStrided(s.ints("shape"), s.ints("strides"), s.num("offset")))(t)
			if p := errProblem(bc.Add.InPlace(self, one), r.str("error_kind"), r.str("error"), true); p != "" {
				f.add(r, "InPlace on an expanded view: %s", p)
			}
			if got := must(bc.Data[float32](base))(t); !reflect.DeepEqual(got, arange(len(got), 0, 1)) {
				f.add(r, "a refused InPlace changed the base: %v", got)
			}
			continue
		}
		baseVals := make([]float32, 0)
		for _, x := range r["base"].([]any) {
			baseVals = append(baseVals, float32(jsonInt(x)))
		}
		base := f32(t, []int{len(baseVals)}, baseVals...)
		o, in := row(r["out"].(map[string]any)), row(r["input"].(map[string]any))
		out := must(base.Slice(0, o.num("offset"), o.num("offset")+o.num("len"), 1))(t)
		input := must(base.Slice(0, in.num("offset"), in.num("offset")+in.num("len"), 1))(t)
		err := bc.Add.Out(out, input, one)
		got := must(bc.Data[float32](base))(t)
		if r.boolean("ok") {
			var want []float32
			for _, x := range r["base_after"].([]any) {
				v, _ := x.(json.Number).Float64()
				want = append(want, float32(v))
			}
			if err != nil || !reflect.DeepEqual(got, want) {
				f.add(r, "Out: %v, base after %v", err, got)
			}
			continue
		}
		if p := errProblem(err, r.str("error_kind"), r.str("error"), true); p != "" {
			f.add(r, "Out: %s", p)
		}
		if !reflect.DeepEqual(got, baseVals) {
			f.add(r, "a refused Out changed the base: %v", got)
		}
	}
}

func conformLegacy(t *testing.T) {
	f := &failures{t: t, file: "legacy.jsonl"}
	defer f.done()
	w := captureWarnings(t)
	for _, r := range every(readRows(t, f.file), 6) {
		f.checked++
		as, bs := r.ints("a"), r.ints("b")
		bc.SetLegacyFallback(r.boolean("fallback"))
		bc.SetBroadcastWarning(r.boolean("warn"))
		av, bv := arange(numel(as), 0, 1), arange(numel(bs), 100, 1)
		a, b := f32(t, as, av...), f32(t, bs, bv...)
		seen := len(w.list())
		var res *bc.Tensor
		var err error
		if r.boolean("inplace") {
			err = bc.Add.InPlace(a, b)
			res = a
		} else {
			res, err = bc.Add.Apply(a, b)
		}
		wantW := []string{}
		for _, x := range r["warnings"].([]any) {
			wantW = append(wantW, x.(string))
		}
		if got := append([]string{}, w.list()[seen:]...); !reflect.DeepEqual(got, wantW) {
			f.add(r, "warnings %q, want %q", got, wantW)
		}
		if r.has("error") {
			exact := !r.has("exact") || r.boolean("exact")
			if p := errProblem(err, r.str("kind"), r.str("error"), exact); p != "" {
				f.add(r, "%s", p)
			}
			continue
		}
		want := r.ints("shape")
		if err != nil {
			f.add(r, "%v", err)
			continue
		}
		if got := res.Shape(); !reflect.DeepEqual(got, want) {
			f.add(r, "shape %v", got)
			continue
		}
		exp := make([]float32, numel(want))
		for i := range exp {
			if r.boolean("pointwise_1d") {
				exp[i] = av[i] + bv[i]
			} else {
				exp[i] = av[sourceIndex(i, want, as)] + bv[sourceIndex(i, want, bs)]
			}
		}
		if got := must(bc.Data[float32](res))(t); !reflect.DeepEqual(got, exp) {
			f.add(r, "values %v, want %v", got, exp)
		}
	}
}

// cell is one element in its dtype's own terms: the bits of its representation (integers as
// int64 bits, bool as 0 or 1).
type cell struct {
	d    bc.DType
	bits uint64
}

func isFloat(d bc.DType) bool {
	return d == bc.Float16 || d == bc.BFloat16 || d == bc.Float32 || d == bc.Float64
}

// width is the number of bits of a floating dtype.
func width(d bc.DType) uint { return uint(d.Size() * 8) }

func (c cell) isNaN() bool {
	if !isFloat(c.d) {
		return false
	}
	w := width(c.d)
	exp := map[bc.DType]uint64{bc.Float16: 0x7c00, bc.BFloat16: 0x7f80, bc.Float32: 0x7f800000, bc.Float64: 0x7ff0000000000000}[c.d]
	frac := (uint64(1)<<(w-1) - 1) &^ exp
	return c.bits&exp == exp && c.bits&frac != 0
}

// ordered maps a float's bits to an integer that counts units in the last place.
func (c cell) ordered() int64 {
	w := width(c.d)
	sign := c.bits >> (w - 1)
	mag := int64(c.bits &^ (uint64(1) << (w - 1)))
	if sign != 0 {
		return -mag
	}
	return mag
}

func (c cell) String() string {
	switch {
	case c.d == bc.Bool:
		return fmt.Sprint(c.bits != 0)
	case !isFloat(c.d):
		return fmt.Sprint(int64(c.bits))
	case c.d == bc.Float64:
		return fmt.Sprint(math.Float64frombits(c.bits))
	case c.d == bc.Float32:
		return fmt.Sprint(math.Float32frombits(uint32(c.bits)))
	case c.d == bc.Float16:
		return fmt.Sprint(bc.Float16Bits(c.bits).Float32())
	}
	return fmt.Sprint(bc.BFloat16Bits(c.bits).Float32())
}

func near(a, b cell, ulps int) bool {
	if a == b || a.isNaN() && b.isNaN() {
		return true
	}
	if ulps == 0 || !isFloat(a.d) || a.d != b.d {
		return false
	}
	d := a.ordered() - b.ordered()
	return d <= int64(ulps) && -d <= int64(ulps)
}

// numCell is the value x in dtype d; it panics if x is not exactly representable there (every
// value of the conformance data is).
func numCell(d bc.DType, x float64) cell {
	switch d {
	case bc.Bool:
		if x != 0 {
			return cell{d, 1}
		}
		return cell{d, 0}
	case bc.Float64:
		return cell{d, math.Float64bits(x)}
	}
	if !isFloat(d) {
		if float64(int64(x)) != x {
			panic(fmt.Sprintf("%v is not an integer", x))
		}
		return cell{d, uint64(int64(x))}
	}
	if math.IsNaN(x) { // a quiet NaN (every NaN compares equal to every other)
		nan := map[bc.DType]uint64{bc.Float16: 0x7e00, bc.BFloat16: 0x7fc0, bc.Float32: 0x7fc00000}
		return cell{d, nan[d]}
	}
	f := float32(x)
	if float64(f) != x {
		panic(fmt.Sprintf("%v is not a float32", x))
	}
	bits := math.Float32bits(f)
	switch d {
	case bc.Float32:
		return cell{d, uint64(bits)}
	case bc.BFloat16:
		if bits&0xffff != 0 {
			panic(fmt.Sprintf("%v is not a bfloat16", x))
		}
		return cell{d, uint64(bits >> 16)}
	}
	h, ok := halfOf[bits]
	if !ok {
		panic(fmt.Sprintf("%v is not a float16", x))
	}
	return cell{d, uint64(h)}
}

// halfOf maps the float32 bits of every non-NaN float16 to its bits.
var halfOf = func() map[uint32]uint16 {
	m := map[uint32]uint16{}
	for h := 0; h < 1<<16; h++ {
		f := bc.Float16Bits(h).Float32()
		if !math.IsNaN(float64(f)) {
			m[math.Float32bits(f)] = uint16(h)
		}
	}
	return m
}()

func jsonCell(d bc.DType, v any) cell {
	switch x := v.(type) {
	case string: // "nan", "inf", "-inf"
		return numCell(d, map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}[x])
	case bool:
		return numCell(d, map[bool]float64{false: 0, true: 1}[x])
	case json.Number:
		if !isFloat(d) {
			i, err := x.Int64()
			if err != nil {
				panic(err)
			}
			if d == bc.Bool {
				return numCell(d, float64(i))
			}
			return cell{d, uint64(i)}
		}
		f, err := x.Float64()
		if err != nil {
			panic(err)
		}
		return numCell(d, f)
	}
	panic(fmt.Sprintf("unexpected value %v", v))
}

func jsonCells(d bc.DType, v any) []cell {
	var out []cell
	for _, x := range v.([]any) {
		out = append(out, jsonCell(d, x))
	}
	return out
}

// cellTensor is a 1-d tensor holding cells, all of dtype d.
func cellTensor(t *testing.T, d bc.DType, cells []cell) *bc.Tensor {
	shape := []int{len(cells)}
	switch d {
	case bc.Bool:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) bool { return b != 0 })))(t)
	case bc.Uint8:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) uint8 { return uint8(b) })))(t)
	case bc.Int8:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) int8 { return int8(b) })))(t)
	case bc.Int16:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) int16 { return int16(b) })))(t)
	case bc.Int32:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) int32 { return int32(b) })))(t)
	case bc.Int64:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) int64 { return int64(b) })))(t)
	case bc.Float16:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) bc.Float16Bits { return bc.Float16Bits(b) })))(t)
	case bc.BFloat16:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) bc.BFloat16Bits { return bc.BFloat16Bits(b) })))(t)
	case bc.Float32:
		return must(bc.FromSlice(shape, convert(cells, func(b uint64) float32 { return math.Float32frombits(uint32(b)) })))(t)
	}
	return must(bc.FromSlice(shape, convert(cells, math.Float64frombits)))(t)
}

func convert[T any](cells []cell, f func(uint64) T) []T {
	out := make([]T, len(cells))
	for i, c := range cells {
		out[i] = f(c.bits)
	}
	return out
}

// readCells reads a tensor's elements (row-major) as cells, through Data of its Go type.
func readCells(t *testing.T, x *bc.Tensor) []cell {
	d := x.DType()
	var bits []uint64
	switch d {
	case bc.Bool:
		bits = cellBits(must(bc.Data[bool](x))(t), func(v bool) uint64 { return map[bool]uint64{true: 1}[v] })
	case bc.Uint8:
		bits = cellBits(must(bc.Data[uint8](x))(t), func(v uint8) uint64 { return uint64(v) })
	case bc.Int8:
		bits = cellBits(must(bc.Data[int8](x))(t), func(v int8) uint64 { return uint64(v) })
	case bc.Int16:
		bits = cellBits(must(bc.Data[int16](x))(t), func(v int16) uint64 { return uint64(v) })
	case bc.Int32:
		bits = cellBits(must(bc.Data[int32](x))(t), func(v int32) uint64 { return uint64(v) })
	case bc.Int64:
		bits = cellBits(must(bc.Data[int64](x))(t), func(v int64) uint64 { return uint64(v) })
	case bc.Float16:
		bits = cellBits(must(bc.Data[bc.Float16Bits](x))(t), func(v bc.Float16Bits) uint64 { return uint64(v) })
	case bc.BFloat16:
		bits = cellBits(must(bc.Data[bc.BFloat16Bits](x))(t), func(v bc.BFloat16Bits) uint64 { return uint64(v) })
	case bc.Float32:
		bits = cellBits(must(bc.Data[float32](x))(t), func(v float32) uint64 { return uint64(math.Float32bits(v)) })
	default:
		bits = cellBits(must(bc.Data[float64](x))(t), math.Float64bits)
	}
	out := make([]cell, len(bits))
	for i, b := range bits {
		out[i] = cell{d, b}
	}
	return out
}

func cellBits[T any](vals []T, f func(T) uint64) []uint64 {
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = f(v)
	}
	return out
}

// cellsDiffer compares a tensor's elements with want ("" when they agree).
func cellsDiffer(t *testing.T, x *bc.Tensor, want []cell, ulps int) string {
	got := readCells(t, x)
	if len(got) != len(want) {
		return fmt.Sprintf("%d elements, want %d", len(got), len(want))
	}
	for i := range got {
		if !near(got[i], want[i], ulps) {
			return fmt.Sprintf("element %d is %v, want %v\n      got  %v\n      want %v", i, got[i], want[i], got, want)
		}
	}
	return ""
}
