package broadcast_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	bc "libbroadcast/broadcast"
)

// Every element type goes in and comes out unchanged, with its dtype.
func TestRoundTripEveryElementType(t *testing.T) {
	roundTrip(t, bc.Bool, []bool{true, false, true})
	roundTrip(t, bc.Uint8, []uint8{0, 7, 255})
	roundTrip(t, bc.Int8, []int8{-128, 0, 127})
	roundTrip(t, bc.Int16, []int16{-32768, 1, 32767})
	roundTrip(t, bc.Int32, []int32{math.MinInt32, 2, math.MaxInt32})
	roundTrip(t, bc.Int64, []int64{math.MinInt64, 3, math.MaxInt64})
	roundTrip(t, bc.Float16, []bc.Float16Bits{0x3c00, 0x8001, 0x7bff})
	roundTrip(t, bc.BFloat16, []bc.BFloat16Bits{0x3f80, 0xc000, 0x0001})
	roundTrip(t, bc.Float32, []float32{1.5, float32(math.Inf(-1)), -0.0})
	roundTrip(t, bc.Float64, []float64{math.Pi, math.SmallestNonzeroFloat64, -1e300})
}

func roundTrip[T bc.Elem](t *testing.T, d bc.DType, data []T) {
	t.Helper()
	x := must(bc.FromSlice([]int{3}, data))(t)
	if x.DType() != d || bc.DTypeOf[T]() != d {
		t.Errorf("%v: dtype %v", d, x.DType())
	}
	if got := must(bc.Data[T](x))(t); !reflect.DeepEqual(got, data) {
		t.Errorf("%v: %v, want %v", d, got, data)
	}
	s := must(bc.Scalar(data[1]))(t)
	if s.NDim() != 0 || s.Numel() != 1 || must(bc.Data[T](s))(t)[0] != data[1] {
		t.Errorf("%v: Scalar %v", d, s)
	}
}

func TestHalfPrecisionWidening(t *testing.T) {
	for bits, want := range map[bc.Float16Bits]float32{
		0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 1.0 / (1 << 24), 0x8000: float32(math.Copysign(0, -1)),
		0x3555: 0.333251953125, 0x7c00: float32(math.Inf(1)), 0x0400: 1.0 / (1 << 14),
	} {
		if got := bits.Float32(); math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("Float16Bits(%#x).Float32() = %v, want %v", uint16(bits), got, want)
		}
	}
	if got := bc.Float16Bits(0x7e00).Float32(); !math.IsNaN(float64(got)) {
		t.Errorf("float16 NaN widened to %v", got)
	}
	if got := bc.BFloat16Bits(0x3fc0).Float32(); got != 1.5 {
		t.Errorf("BFloat16Bits(0x3fc0).Float32() = %v", got)
	}
	// Building half-precision tensors from float32 values goes through the library's conversion.
	x := f32(t, []int{3}, 1, 0.1, -65504)
	h := must(must(x.ToDType(bc.Float16))(t).Clone())(t)
	if got := must(bc.Data[bc.Float16Bits](h))(t); !reflect.DeepEqual(got, []bc.Float16Bits{0x3c00, 0x2e66, 0xfbff}) {
		t.Errorf("float16 bits %#x", got)
	}
	b := must(x.ToDType(bc.BFloat16))(t)
	if got := must(bc.Data[bc.BFloat16Bits](b))(t); !reflect.DeepEqual(got, []bc.BFloat16Bits{0x3f80, 0x3dcd, 0xc780}) {
		t.Errorf("bfloat16 bits %#x", got)
	}
}

func TestDTypesAndStatuses(t *testing.T) {
	if bc.Float32.String() != "float32" || bc.BFloat16.String() != "bfloat16" || bc.Int64.Size() != 8 || bc.Float16.Size() != 2 {
		t.Errorf("dtype names or sizes")
	}
	if bc.DType(99).String() != "unknown" || bc.DType(99).Size() != 0 {
		t.Errorf("unknown dtype")
	}
	if got := bc.ErrShape.Error(); got != "BC_ERR_SHAPE: shapes are not compatible" {
		t.Errorf("ErrShape.Error() = %q", got)
	}
	if !strings.HasPrefix(bc.Version(), "0.") {
		t.Errorf("Version %q", bc.Version())
	}
	_, err := bc.Empty(bc.DType(42), 2)
	if !errors.Is(err, bc.ErrInvalidArg) || errors.Is(err, bc.ErrShape) {
		t.Errorf("unknown dtype: %v", err)
	}
	_, err = bc.Zeros(bc.Float32, 2, -1)
	if !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("negative size: %v", err)
	}
	_, err = bc.FromSlice([]int{2, 2}, []float32{1, 2, 3})
	if !errors.Is(err, bc.ErrInvalidArg) {
		t.Errorf("wrong data length: %v", err)
	}
}

func TestViews(t *testing.T) {
	x := f32(t, []int{2, 3}, 0, 1, 2, 3, 4, 5)
	if x.NDim() != 2 || x.Numel() != 6 || !x.IsContiguous() || !reflect.DeepEqual(x.Strides(), []int{3, 1}) {
		t.Errorf("queries on %v", x)
	}
	if s := x.String(); s != "tensor([[0., 1., 2.],\n        [3., 4., 5.]])" {
		t.Errorf("String %q", s)
	}
	tr := must(x.Transpose(0, 1))(t)
	checkShape(t, tr, 3, 2)
	checkF32(t, tr, []float32{0, 3, 1, 4, 2, 5})
	if tr.IsContiguous() || !reflect.DeepEqual(tr.Strides(), []int{1, 3}) {
		t.Errorf("transposed strides %v", tr.Strides())
	}
	checkF32(t, must(tr.Contiguous())(t), []float32{0, 3, 1, 4, 2, 5})
	pe := must(x.Permute(-1, 0))(t)
	checkF32(t, pe, []float32{0, 3, 1, 4, 2, 5})
	sl := must(x.Slice(1, -2, 100, 1))(t)
	checkShape(t, sl, 2, 2)
	checkF32(t, sl, []float32{1, 2, 4, 5})
	if sl.Offset() != 1 {
		t.Errorf("slice offset %d", sl.Offset())
	}
	st := must(x.AsStrided([]int{2, 2}, []int{1, 2}, 1))(t)
	checkF32(t, st, []float32{1, 3, 2, 4})
	_, err := x.AsStrided([]int{2, 2}, []int{1}, 0)
	checkErr(t, err, bc.ErrInvalidArg, "AsStrided takes one stride per size: 2 sizes and 1 strides")
	row := f32(t, []int{3}, 10, 20, 30)
	ex := must(row.ExpandAs(x))(t)
	checkF32(t, ex, []float32{10, 20, 30, 10, 20, 30})
	if !reflect.DeepEqual(ex.Strides(), []int{0, 1}) {
		t.Errorf("expanded strides %v", ex.Strides())
	}
	checkF32(t, must(row.BroadcastTo(2, -1))(t), []float32{10, 20, 30, 10, 20, 30})
	_, err = row.Expand(2, 5)
	checkErr(t, err, bc.ErrShape, "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  Target sizes: [2, 5].  Tensor sizes: [3]")
	// Writing through an expanded view is refused; through a slice it reaches the parent.
	checkErr(t, bc.Add.InPlace(ex, row), bc.ErrOverlap,
		"unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.")
	noErr(t, bc.Mul.InPlace(sl, must(bc.Full(bc.Float32, 10))(t)))
	checkF32(t, x, []float32{0, 10, 20, 3, 40, 50})
	// A view outlives its closed parent (the storage is shared, counted by the library).
	x.Close()
	checkF32(t, sl, []float32{10, 20, 40, 50})
	cl := must(sl.Clone())(t)
	sl.Close()
	checkF32(t, cl, []float32{10, 20, 40, 50})
}

func TestErrorsAsData(t *testing.T) {
	i32 := must(bc.Ones(bc.Int32, 3))(t)
	_, err := bc.Div.Apply(i32, i32) // integer division gives float32 ...
	noErr(t, err)
	e := checkErr(t, bc.Div.InPlace(i32, i32), bc.ErrDType, "result type Float can't be cast to the desired output type Int")
	if e.Kind != bc.KindCastRefused || e.DTypeA != bc.Float32 || e.DTypeB != bc.Int32 || e.ShapeA != nil {
		t.Errorf("cast refused as data: %+v", *e) // ... which cannot go back into int32
	}
	_, err = bc.BroadcastShapesN([]int{3}, []int{1}, []int{2})
	e = checkErr(t, err, bc.ErrShape, "Attempting to broadcast a dimension of length 2 at -1! Mismatching argument at index 2 had (2,); but expected shape should be broadcastable to [3]")
	if e.Kind != bc.KindNaryNotBroadcastable || e.Arg != 2 || e.Dim != -1 || e.SizeA != 2 ||
		!reflect.DeepEqual(e.ShapeA, []int{2}) || !reflect.DeepEqual(e.ShapeB, []int{3}) {
		t.Errorf("n-ary error as data: %+v", *e)
	}
	out := must(bc.Zeros(bc.Float32, 2))(t)
	e = checkErr(t, bc.Add.Out(out, i32, i32), bc.ErrShape, "output with shape [2] doesn't match the broadcast shape [3]")
	if e.Kind != bc.KindOutputShape || !reflect.DeepEqual(e.ShapeA, []int{2}) || !reflect.DeepEqual(e.ShapeB, []int{3}) {
		t.Errorf("output shape as data: %+v", *e)
	}
	b := must(bc.Ones(bc.Bool, 2))(t)
	e = checkErr(t, bc.Sub.Out(out, b, b), bc.ErrDType,
		"Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
	if e.Kind != bc.KindBoolSubtraction {
		t.Errorf("bool subtraction kind %d", e.Kind)
	}
	if !errors.Is(e, bc.ErrDType) || errors.Is(e, bc.ErrShape) {
		t.Errorf("errors.Is against the sentinels")
	}
	// Out into a tensor of another type casts when it may.
	out64 := must(bc.Zeros(bc.Float64, 3))(t)
	noErr(t, bc.Add.Out(out64, i32, i32))
	if got := must(bc.Data[float64](out64))(t); !reflect.DeepEqual(got, []float64{2, 2, 2}) {
		t.Errorf("out64 %v", got)
	}
}

func TestCopyToAndData(t *testing.T) {
	x := f32(t, []int{2, 2}, 1, 2, 3, 4)
	dst := make([]float32, 5)
	noErr(t, bc.CopyTo(x, dst))
	if !reflect.DeepEqual(dst, []float32{1, 2, 3, 4, 0}) {
		t.Errorf("CopyTo %v", dst)
	}
	var e *bc.Error
	if err := bc.CopyTo(x, dst[:3]); !errors.As(err, &e) || e.Status != bc.ErrBufferTooSmall ||
		e.Kind != bc.KindBufferTooSmall || e.SizeA != 16 || e.SizeB != 12 || e.Message == "" {
		t.Errorf("CopyTo into 12 bytes: %v (%+v)", err, e)
	}
	_, err := bc.Data[float64](x)
	e = checkErr(t, err, bc.ErrDType, "cannot read float32 elements as float64")
	if e.DTypeA != bc.Float32 || e.DTypeB != bc.Float64 || e.Kind != bc.KindNone {
		t.Errorf("Data of the wrong type as data: %+v", *e)
	}
	checkErr(t, bc.CopyTo(x, make([]int32, 4)), bc.ErrDType, "cannot read float32 elements as int32")
	_, err = bc.At[int32](x, 0, 0)
	checkErr(t, err, bc.ErrDType, "cannot read float32 elements as int32")
	empty := must(bc.FromSlice[float32]([]int{0, 3}, nil))(t)
	checkShape(t, empty, 0, 3)
	if got := must(bc.Data[float32](empty))(t); len(got) != 0 {
		t.Errorf("empty Data %v", got)
	}
}

func TestSettings(t *testing.T) {
	n := bc.NumThreads()
	defer bc.SetNumThreads(0)
	bc.SetNumThreads(1)
	if bc.NumThreads() != 1 {
		t.Errorf("NumThreads %d after SetNumThreads(1)", bc.NumThreads())
	}
	bc.SetNumThreads(0)
	if bc.NumThreads() != n {
		t.Errorf("NumThreads %d after SetNumThreads(0), was %d", bc.NumThreads(), n)
	}
	// One thread or several, with the parallel threshold forced low: the same result.
	defer bc.SetParallelThreshold(0)
	a := must(bc.Full(bc.Float32, 0.1, 300, 1))(t)
	b := f32(t, []int{300}, arange(300, 0, 0.37)...)
	bc.SetParallelThreshold(1)
	many := must(bc.Data[float32](must(bc.Mul.Apply(a, b))(t)))(t)
	bc.SetNumThreads(1)
	one := must(bc.Data[float32](must(bc.Mul.Apply(a, b))(t)))(t)
	if !reflect.DeepEqual(one, many) {
		t.Errorf("results differ between thread counts")
	}
}

// A panicking warning handler is contained: the operation succeeds, the program goes on.
func TestWarningHandlerPanicIsContained(t *testing.T) {
	captureWarnings(t)
	calls := 0
	bc.SetWarningHandler(func(string) { calls++; panic("handler bug") })
	bc.SetBroadcastWarning(true)
	r, err := bc.Add.Apply(must(bc.Ones(bc.Float32, 4, 1))(t), must(bc.Ones(bc.Float32, 4))(t))
	if err != nil || calls != 1 {
		t.Fatalf("Apply with a panicking handler: %v, %d calls", err, calls)
	}
	checkShape(t, r, 4, 4)
}
