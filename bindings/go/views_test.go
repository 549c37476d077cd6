package broadcast_test

import (
	"errors"
	"fmt"
	"testing"

	bc "libbroadcast/broadcast"
)

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
