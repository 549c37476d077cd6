package broadcast_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	bc "libbroadcast/broadcast"
	"libbroadcast/broadcast/internal/cmem"
)

func TestShapeViews(t *testing.T) {
	x := f32(t, []int{2, 3}, 0, 1, 2, 3, 4, 5)
	v := must(x.View(3, -1))(t)
	checkShape(t, v, 3, 2)
	checkF32(t, v, []float32{0, 1, 2, 3, 4, 5})
	if !reflect.DeepEqual(v.Strides(), []int{2, 1}) {
		t.Errorf("view strides %v", v.Strides())
	}
	// A view shares the elements; a reshape of a transposed tensor is a copy.
	noErr(t, bc.Add.InPlace(v, f32(t, nil, 10)))
	checkF32(t, x, []float32{10, 11, 12, 13, 14, 15})
	tr := must(x.Transpose(0, 1))(t)
	_, err := tr.View(6)
	e := checkErr(t, err, bc.ErrShape, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
	if e.Kind != bc.KindViewStrides {
		t.Errorf("view of a transposed tensor: kind %v", e.Kind)
	}
	r := must(tr.Reshape(-1))(t)
	checkShape(t, r, 6)
	checkF32(t, r, []float32{10, 13, 11, 14, 12, 15})
	noErr(t, bc.Add.InPlace(r, f32(t, nil, 100)))
	checkF32(t, x, []float32{10, 11, 12, 13, 14, 15})
	_, err = x.Reshape(4, 2)
	e = checkErr(t, err, bc.ErrShape, "shape '[4, 2]' is invalid for input of size 6")
	if e.Kind != bc.KindViewSize || e.SizeA != 6 || !reflect.DeepEqual(e.ShapeB, []int{4, 2}) {
		t.Errorf("reshape to the wrong size as data: %+v", *e)
	}
	_, err = x.View(-1, -1)
	checkErr(t, err, bc.ErrInvalidArg, "only one dimension can be inferred")

	checkShape(t, must(x.Unsqueeze(0))(t), 1, 2, 3)
	checkShape(t, must(x.Unsqueeze(-1))(t), 2, 3, 1)
	_, err = x.Unsqueeze(3)
	checkErr(t, err, bc.ErrInvalidArg, "Dimension out of range (expected to be in range of [-3, 2], but got 3)")
	y := must(x.View(1, 2, 1, 3))(t)
	checkShape(t, must(y.Squeeze(0))(t), 2, 1, 3)
	checkShape(t, must(y.Squeeze(1))(t), 1, 2, 1, 3) // not of size 1: unchanged
	checkShape(t, must(y.Squeeze(-2))(t), 1, 2, 3)
	sq := must(y.SqueezeAll())(t)
	checkShape(t, sq, 2, 3)
	checkF32(t, sq, []float32{10, 11, 12, 13, 14, 15})
	fl := must(y.Flatten(1, -1))(t)
	checkShape(t, fl, 1, 6)
	checkShape(t, must(tr.Flatten(0, 1))(t), 6)
	_, err = y.Flatten(2, 1)
	checkErr(t, err, bc.ErrInvalidArg, "flatten() has invalid args: start_dim cannot come after end_dim")
	zeroD := must(bc.Scalar(float32(7)))(t)
	checkShape(t, must(zeroD.Flatten(0, -1))(t), 1)
	checkShape(t, must(zeroD.Reshape())(t))
	bt := must(f32(t, []int{3}, 1, 2, 3).BroadcastTo(2, 3))(t)
	checkF32(t, bt, []float32{1, 2, 3, 1, 2, 3})
	if !reflect.DeepEqual(bt.Strides(), []int{0, 1}) {
		t.Errorf("BroadcastTo strides %v", bt.Strides())
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct {
		x    *bc.Tensor
		want string
	}{
		{f32(t, []int{2, 2}, 1, 2.5, -3, 0.125), "tensor([[ 1.0000,  2.5000],\n        [-3.0000,  0.1250]])"},
		{must(bc.FromSlice([]int{3}, []int32{1, -2, 30}))(t), "tensor([ 1, -2, 30], dtype=torch.int32)"},
		{must(bc.FromSlice([]int{2}, []bool{true, false}))(t), "tensor([ True, False])"},
		{must(bc.Scalar(int64(5)))(t), "tensor(5)"},
		{must(bc.Zeros(bc.Float64, 0, 2))(t), "tensor([], size=(0, 2), dtype=torch.float64)"},
	} {
		if got := must(c.x.Text())(t); got != c.want {
			t.Errorf("Text\n  %q\nwant\n  %q", got, c.want)
		}
		if got := c.x.String(); got != c.want {
			t.Errorf("String %q, want %q", got, c.want)
		}
		if got := fmt.Sprintf("%v|%s", c.x, c.x); got != c.want+"|"+c.want {
			t.Errorf("%%v|%%s printed %q", got)
		}
	}
	// More elements to read than the formatter allows: Text says why, String describes the tensor.
	big := must(bc.Zeros(bc.Float32, 6, 6, 6, 6, 6, 6, 6, 6))(t) // 6^8 elements, all shown
	_, err := big.Text()
	var e *bc.Error
	if !errors.As(err, &e) || e.Status != bc.ErrOverflow || e.Kind != bc.KindOverflow {
		t.Fatalf("Text of a large tensor: %v", err)
	}
	if got, want := big.String(), "<float32 tensor of shape (6, 6, 6, 6, 6, 6, 6, 6): "+e.Message+">"; got != want {
		t.Errorf("String of a large tensor %q, want %q", got, want)
	}
}

// fmt prints a tensor through the library's text, with the flags and sizes it takes for a
// string; %#v describes the type and shape instead of showing the handle.
func TestFormat(t *testing.T) {
	x := must(bc.FromSlice([]int{2}, []int32{1, 2}))(t)
	text := "tensor([1, 2], dtype=torch.int32)"
	for _, c := range []struct{ format, want string }{
		{"%v", text},
		{"%s", text},
		{"%+v", text},
		{"%q", strconv.Quote(text)},
		{"%.6s", "tensor"},
		{"%40v|", strings.Repeat(" ", 40-len(text)) + text + "|"},
		{"%-40s|", text + strings.Repeat(" ", 40-len(text)) + "|"},
		{"%x", fmt.Sprintf("%x", text)},
		{"%d", "%!d(*broadcast.Tensor=" + text + ")"},
		{"%#v", "&broadcast.Tensor{DType: int32, Shape: [2]}"},
	} {
		if got := fmt.Sprintf(c.format, x); got != c.want {
			t.Errorf("Sprintf(%q) = %q, want %q", c.format, got, c.want)
		}
	}
	x.Close()
	if got := fmt.Sprintf("%v %#v", x, x); got != "<closed tensor> &broadcast.Tensor{closed}" {
		t.Errorf("a closed tensor prints as %q", got)
	}
	var none *bc.Tensor
	if got := fmt.Sprintf("%v %#v", none, none); got != "<nil> (*broadcast.Tensor)(nil)" {
		t.Errorf("a nil tensor prints as %q", got)
	}
}

func TestAt(t *testing.T) {
	x := f32(t, []int{2, 3}, 0, 1, 2, 3, 4, 5)
	if v := must(bc.At[float32](x, 1, 2))(t); v != 5 {
		t.Errorf("At(1, 2) = %v", v)
	}
	tr := must(x.Transpose(0, 1))(t)
	if v := must(bc.At[float32](tr, 2, 0))(t); v != 2 {
		t.Errorf("transposed At(2, 0) = %v", v)
	}
	sl := must(x.Slice(1, 1, 3, 1))(t)
	if v := must(bc.At[float32](sl, 1, 1))(t); v != 5 {
		t.Errorf("sliced At(1, 1) = %v", v)
	}
	if v := must(bc.At[int16](must(bc.Scalar(int16(-9)))(t)))(t); v != -9 {
		t.Errorf("0-d At() = %v", v)
	}
	if v := must(bc.At[bool](must(bc.FromSlice([]int{3}, []bool{false, false, true}))(t), 2))(t); !v {
		t.Errorf("bool At(2) = %v", v)
	}
	_, err := bc.At[float32](x, 2, 0)
	checkErr(t, err, bc.ErrInvalidArg, "index 2 is out of bounds for dimension 0 with size 2")
	_, err = bc.At[float32](x, 0, -1)
	checkErr(t, err, bc.ErrInvalidArg, "index -1 is out of bounds for dimension 1 with size 3")
	_, err = bc.At[float32](x, 1)
	checkErr(t, err, bc.ErrInvalidArg, "At takes one index per dimension: 1 given for a tensor of 2 dimensions")
}

func TestDataPointerAndDLPack(t *testing.T) {
	x := f32(t, []int{2, 2}, 1, 2, 3, 4)
	ptr, n, w, err := x.DataPointer()
	noErr(t, err)
	if n != 16 || !w || !reflect.DeepEqual(unsafe.Slice((*float32)(ptr), 4), []float32{1, 2, 3, 4}) {
		t.Errorf("DataPointer: %d bytes, writable %v", n, w)
	}
	row := must(x.Slice(0, 1, 2, 1))(t)
	p2, n2, _, err := row.DataPointer()
	noErr(t, err)
	if uintptr(p2)-uintptr(ptr) != 8 || n2 != 8 || *(*float32)(p2) != 3 {
		t.Errorf("DataPointer of the second row: %v bytes after, %d bytes", uintptr(p2)-uintptr(ptr), n2)
	}
	_, _, w, err = must(f32(t, []int{1}, 1).Expand(3))(t).DataPointer()
	noErr(t, err)
	if w {
		t.Errorf("an expanded view is writable")
	}

	// Exported and imported again, the tensor shares x's memory, and outlives x.
	for _, unversioned := range []bool{false, true} {
		var m unsafe.Pointer
		var y *bc.Tensor
		if unversioned {
			m = must(x.ToDLPackUnversioned())(t)
			y = must(bc.FromDLPackUnversioned(m))(t)
		} else {
			m = must(x.ToDLPack())(t)
			y = must(bc.FromDLPack(m))(t)
		}
		checkShape(t, y, 2, 2)
		if py, _, _, _ := y.DataPointer(); py != ptr {
			t.Errorf("imported DLPack tensor at %p, x at %p", py, ptr)
		}
		noErr(t, bc.Mul.InPlace(y, f32(t, nil, 2)))
		y.Close()
	}
	checkF32(t, x, []float32{4, 8, 12, 16})
	_, err = must(f32(t, []int{1}, 1).Expand(3))(t).ToDLPackUnversioned()
	if e := checkErrKind(t, err, bc.ErrReadOnly); e != nil && e.Kind != bc.KindReadOnlyLegacyExport {
		t.Errorf("legacy export of a broadcast view: kind %v", e.Kind)
	}
}

// WrapC views memory outside Go's heap: here the library's own memory of another tensor.
func TestWrapC(t *testing.T) {
	x := f32(t, []int{2, 3}, 0, 1, 2, 3, 4, 5)
	ptr, n, _, err := x.DataPointer()
	noErr(t, err)
	col := must(bc.WrapC(bc.Float32, ptr, n, []int{2}, []int{3}, 1, nil, nil))(t)
	checkF32(t, col, []float32{1, 4})
	noErr(t, bc.Add.InPlace(col, f32(t, nil, 10)))
	checkF32(t, x, []float32{0, 11, 2, 3, 14, 5})
	all := must(bc.WrapC(bc.Float32, ptr, n, []int{3, 2}, nil, 0, nil, nil))(t)
	checkF32(t, all, []float32{0, 11, 2, 3, 14, 5})
	col.Close()
	all.Close()
	_, err = bc.WrapC(bc.Float32, ptr, n, []int{2}, []int{3}, 4, nil, nil)
	checkErrKind(t, err, bc.ErrInvalidArg) // the second element would be past the end
	_, err = bc.WrapC(bc.Float32, unsafe.Add(ptr, 1), n-1, []int{1}, nil, 0, nil, nil)
	checkErrKind(t, err, bc.ErrInvalidArg) // misaligned
	_, err = bc.WrapC(bc.Float32, ptr, n, []int{2}, []int{1, 1}, 0, nil, nil)
	checkErr(t, err, bc.ErrInvalidArg, "WrapC takes one stride per size (or nil strides): 1 sizes and 2 strides")
	runtime.KeepAlive(x)
}

// WrapC's release runs once, when the last tensor over the memory is closed, and not at all when
// WrapC fails.
func TestWrapCRelease(t *testing.T) {
	before := cmem.Released()
	buf := cmem.Malloc(24)
	copy(unsafe.Slice((*float32)(buf), 6), []float32{1, 2, 3, 4, 5, 6})
	_, err := bc.WrapC(bc.Float32, buf, 24, []int{7}, nil, 0, cmem.CountingFree(), buf)
	checkErrKind(t, err, bc.ErrInvalidArg) // 28 bytes for 24
	if n := cmem.Released() - before; n != 0 {
		t.Fatalf("a failed WrapC released %d times", n)
	}
	x := must(bc.WrapC(bc.Float32, buf, 24, []int{6}, nil, 0, cmem.CountingFree(), buf))(t)
	v := must(x.View(2, 3))(t)
	x.Close()
	if n := cmem.Released() - before; n != 0 {
		t.Fatalf("released %d times while a view is open", n)
	}
	tr := must(v.Transpose(0, 1))(t)
	v.Close()
	checkF32(t, tr, []float32{1, 4, 2, 5, 3, 6})
	if n := cmem.Released() - before; n != 0 {
		t.Fatalf("released %d times while a view is open", n)
	}
	tr.Close()
	if n := cmem.Released() - before; n != 1 {
		t.Errorf("released %d times after the last view closed", n)
	}
}

// checkErrKind checks that err is an *Error of the given status, whatever its message.
func checkErrKind(t *testing.T, err error, status bc.Status) *bc.Error {
	t.Helper()
	var e *bc.Error
	if !errors.As(err, &e) || e.Status != status {
		t.Errorf("want an *Error with status %v, got %v", status, err)
		return nil
	}
	return e
}
