package broadcast_test

// The twelve documented examples of the broadcasting rules (the table the C suite checks by
// running examples/tour.c), through the Go package: shapes, values, statuses, exact
// messages, errors as data and warnings.

import (
	"reflect"
	"testing"

	bc "libbroadcast/broadcast"
)

const (
	msgRow2   = "The size of tensor a (0) must match the size of tensor b (2) at non-singleton dimension 1"
	msgRow4   = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"
	msgRow9   = "The expanded size of the tensor (1) must match the existing size (7) at non-singleton dimension 2."
	warnBcast = "self and other do not have the same shape, but are broadcastable, and have the same number of elements.  Changing behavior in a backwards incompatible manner to broadcasting rather than viewing as 1-dimensional."
	warnFall  = "self and other not broadcastable, but have the same number of elements.  Falling back to deprecated pointwise behavior."
)

// shapesBroadcast checks the shape functions on a broadcastable pair, in both orders.
func shapesBroadcast(t *testing.T, a, b, want []int) {
	t.Helper()
	for _, p := range [][2][]int{{a, b}, {b, a}} {
		if ok := must(bc.IsBroadcastable(p[0], p[1]))(t); !ok {
			t.Errorf("IsBroadcastable(%v, %v) = false", p[0], p[1])
		}
		if got := must(bc.BroadcastShapes(p[0], p[1]))(t); !reflect.DeepEqual(got, want) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, want %v", p[0], p[1], got, want)
		}
	}
}

// shapesRefused checks the shape functions on a pair that does not broadcast.
func shapesRefused(t *testing.T, a, b []int, msg string) {
	t.Helper()
	if ok := must(bc.IsBroadcastable(a, b))(t); ok {
		t.Errorf("IsBroadcastable(%v, %v) = true", a, b)
	}
	_, err := bc.BroadcastShapes(a, b)
	checkErr(t, err, bc.ErrShape, msg)
}

func TestDocumented01SameShapes(t *testing.T) {
	w := captureWarnings(t)
	s := []int{5, 7, 3}
	shapesBroadcast(t, s, s, s)
	da, db := arange(105, 0, 1), arange(105, 0.5, -2)
	want := make([]float32, 105)
	for i := range want {
		want[i] = da[i] + db[i]
	}
	r := must(bc.Add.Apply(f32(t, s, da...), f32(t, s, db...)))(t)
	checkShape(t, r, 5, 7, 3)
	checkF32(t, r, want)
	if n := len(w.list()); n != 0 {
		t.Errorf("%d warnings", n)
	}
}

func TestDocumented02Empty1DAgainst2x2(t *testing.T) {
	shapesRefused(t, []int{0}, []int{2, 2}, msgRow2)
	a := must(bc.Empty(bc.Float32, 0))(t)
	b := must(bc.Empty(bc.Float32, 2, 2))(t)
	r, err := bc.Add.Apply(a, b)
	if r != nil {
		t.Errorf("a failed Apply returned a tensor")
	}
	e := checkErr(t, err, bc.ErrShape, msgRow2)
	if e.Kind != bc.KindNotBroadcastable || e.Dim != 1 || e.SizeA != 0 || e.SizeB != 2 ||
		!reflect.DeepEqual(e.ShapeA, []int{0}) || !reflect.DeepEqual(e.ShapeB, []int{2, 2}) {
		t.Errorf("error as data: %+v", *e)
	}
}

func TestDocumented03Broadcastable4DWith3D(t *testing.T) {
	as, bs := []int{5, 3, 4, 1}, []int{3, 1, 1}
	shapesBroadcast(t, as, bs, as)
	a := must(bc.Full(bc.Float32, 1.5, as...))(t)
	b := must(bc.Full(bc.Float32, 0.25, bs...))(t)
	r := must(bc.Mul.Apply(a, b))(t)
	checkShape(t, r, as...)
	checkF32(t, r, fill(60, 0.375))
	r = must(bc.Add.Apply(b, a))(t)
	checkShape(t, r, as...)
	checkF32(t, r, fill(60, 1.75))
}

func TestDocumented04NotBroadcastable4DWith3D(t *testing.T) {
	as, bs := []int{5, 2, 4, 1}, []int{3, 1, 1}
	shapesRefused(t, as, bs, msgRow4)
	a := must(bc.Ones(bc.Float32, as...))(t)
	b := must(bc.Ones(bc.Float32, bs...))(t)
	_, err := bc.Sub.Apply(a, b)
	checkErr(t, err, bc.ErrShape, msgRow4)
}

func TestDocumented05Add4DAnd3D(t *testing.T) {
	w := captureWarnings(t)
	as, bs := []int{5, 1, 4, 1}, []int{3, 1, 1}
	shapesBroadcast(t, as, bs, []int{5, 3, 4, 1})
	da := make([]float32, 20)
	for i := 0; i < 5; i++ {
		for k := 0; k < 4; k++ {
			da[i*4+k] = float32(i*10 + k)
		}
	}
	db := []float32{100, 200, 300}
	want := make([]float32, 60)
	for i := 0; i < 5; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 4; k++ {
				want[(i*3+j)*4+k] = da[i*4+k] + db[j]
			}
		}
	}
	r := must(bc.Add.Apply(f32(t, as, da...), f32(t, bs, db...)))(t)
	checkShape(t, r, 5, 3, 4, 1)
	checkF32(t, r, want)
	if n := len(w.list()); n != 0 {
		t.Errorf("%d warnings", n)
	}
}

func TestDocumented06Add1And3x1x7(t *testing.T) {
	bs := []int{3, 1, 7}
	shapesBroadcast(t, []int{1}, bs, bs)
	db := arange(21, -10, 1)
	want := make([]float32, 21)
	for i := range want {
		want[i] = 0.5 + db[i]
	}
	r := must(bc.Add.Apply(f32(t, []int{1}, 0.5), f32(t, bs, db...)))(t)
	checkShape(t, r, 3, 1, 7)
	checkF32(t, r, want)
}

func TestDocumented07ErrorMessageForEveryOp(t *testing.T) {
	a := must(bc.Ones(bc.Float32, 5, 2, 4, 1))(t)
	b := must(bc.Ones(bc.Float32, 3, 1, 1))(t)
	for _, op := range []bc.Op{bc.Add, bc.Sub, bc.Mul, bc.Div} {
		r, err := op.Apply(a, b)
		if r != nil {
			t.Errorf("op %d: a failed Apply returned a tensor", op)
		}
		checkErr(t, err, bc.ErrShape, msgRow4)
	}
}

func TestDocumented08InPlaceAllowed(t *testing.T) {
	self := f32(t, []int{5, 3, 4, 1}, arange(60, 0, 1)...)
	other := f32(t, []int{3, 1, 1}, 1000, 2000, 3000)
	want := make([]float32, 60)
	for i := range want {
		want[i] = float32(i) + []float32{1000, 2000, 3000}[(i/4)%3]
	}
	noErr(t, bc.Add.InPlace(self, other))
	checkShape(t, self, 5, 3, 4, 1)
	checkF32(t, self, want)
	noErr(t, bc.Sub.InPlace(self, other))
	checkF32(t, self, arange(60, 0, 1))
}

func TestDocumented09InPlaceRefused(t *testing.T) {
	w := captureWarnings(t)
	self := f32(t, []int{1, 3, 1}, 1.25, -2.5, 3.75)
	other := f32(t, []int{3, 1, 7}, arange(21, 1, 1)...)
	for _, op := range []bc.Op{bc.Add, bc.Sub, bc.Mul, bc.Div} {
		e := checkErr(t, op.InPlace(self, other), bc.ErrShape, msgRow9)
		if e.Kind != bc.KindInPlaceMismatch || e.Dim != 2 || e.SizeA != 1 || e.SizeB != 7 {
			t.Errorf("error as data: %+v", *e)
		}
	}
	checkShape(t, self, 1, 3, 1)
	checkF32(t, self, []float32{1.25, -2.5, 3.75})
	if n := len(w.list()); n != 0 {
		t.Errorf("%d warnings", n)
	}
	checkShape(t, must(bc.Add.Apply(self, other))(t), 3, 3, 7)
}

func TestDocumented10OnesPlusRandn(t *testing.T) {
	w := captureWarnings(t)
	if bc.BroadcastWarning() || bc.LegacyFallback() {
		t.Fatalf("switches on by default")
	}
	randn := []float32{-0.6875, 1.4375, 0.1875, -2.125}
	r := must(bc.Add.Apply(must(bc.Ones(bc.Float32, 4, 1))(t), f32(t, []int{4}, randn...)))(t)
	checkShape(t, r, 4, 4)
	var want []float32
	for row := 0; row < 4; row++ {
		for _, v := range randn {
			want = append(want, 1+v)
		}
	}
	checkF32(t, r, want)
	if n := len(w.list()); n != 0 {
		t.Errorf("%d warnings with the switch off", n)
	}
}

func TestDocumented11BroadcastWarning(t *testing.T) {
	w := captureWarnings(t)
	bc.SetBroadcastWarning(true)
	if !bc.BroadcastWarning() {
		t.Fatalf("switch did not turn on")
	}
	a := must(bc.Ones(bc.Float32, 4, 1))(t)
	b := must(bc.Ones(bc.Float32, 4))(t)
	r := must(bc.Add.Apply(a, b))(t)
	checkShape(t, r, 4, 4)
	checkF32(t, r, fill(16, 2))
	must(bc.Add.Apply(a, a))(t)                               // equal shapes: no warning
	must(bc.Add.Apply(a, must(bc.Ones(bc.Float32, 3))(t)))(t) // different numel: no warning
	if got := w.list(); !reflect.DeepEqual(got, []string{warnBcast}) {
		t.Errorf("warnings %q", got)
	}
	bc.SetBroadcastWarning(false)
	must(bc.Add.Apply(a, b))(t)
	if n := len(w.list()); n != 1 {
		t.Errorf("%d warnings after turning the switch off", n)
	}
}

func TestDocumented12LegacyFallback(t *testing.T) {
	w := captureWarnings(t)
	a := f32(t, []int{4}, 1, 2, 3, 4)
	b := f32(t, []int{2, 2}, 10, 20, 30, 40)
	_, err := bc.Add.Apply(a, b)
	checkErr(t, err, bc.ErrShape, "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1")
	bc.SetLegacyFallback(true)
	if !bc.LegacyFallback() {
		t.Fatalf("switch did not turn on")
	}
	r := must(bc.Add.Apply(a, b))(t)
	checkShape(t, r, 4)
	checkF32(t, r, []float32{11, 22, 33, 44})
	r = must(bc.Add.Apply(b, a))(t)
	checkShape(t, r, 2, 2)
	checkF32(t, r, []float32{11, 22, 33, 44})
	if got := w.list(); !reflect.DeepEqual(got, []string{warnFall, warnFall}) {
		t.Errorf("warnings %q", got)
	}
}

func fill(n int, v float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}
