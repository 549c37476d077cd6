package broadcast_test

import (
	"errors"
	"fmt"

	bc "libbroadcast/broadcast"
)

func Example() {
	a := bc.Must(bc.Ones(bc.Float32, 3, 1))
	b := bc.Must(bc.FromSlice([]int{2}, []float32{0.5, 1.5}))
	c := bc.Must(bc.Add.Apply(a, b)) // (3,1) + (2,) -> (3,2)
	fmt.Println(c)
	// Output:
	// tensor([[1.5000, 2.5000],
	//         [1.5000, 2.5000],
	//         [1.5000, 2.5000]])
}

// A failure is an *Error: the library's status, what went wrong as data, and PyTorch's message.
func ExampleError() {
	_, err := bc.Add.Apply(bc.Must(bc.Ones(bc.Float32, 2, 3)), bc.Must(bc.Ones(bc.Float32, 4)))
	var e *bc.Error
	if errors.As(err, &e) && errors.Is(err, bc.ErrShape) {
		fmt.Println(e.Kind, e.Dim, e.SizeA, e.SizeB, e.ShapeA, e.ShapeB)
		fmt.Println(err)
	}
	// Output:
	// not_broadcastable 1 3 4 [2 3] [4]
	// The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1
}

func ExampleAt() {
	x := bc.Must(bc.FromSlice([]int{2, 3}, []int64{0, 1, 2, 3, 4, 5}))
	v, err := bc.At[int64](x, 1, 2)
	fmt.Println(v, err)
	_, err = bc.At[float32](x, 1, 2)
	fmt.Println(err)
	_, err = bc.At[int64](x, 2, 0)
	fmt.Println(err)
	// Output:
	// 5 <nil>
	// cannot read int64 elements as float32
	// index 2 is out of bounds for dimension 0 with size 2
}

// Reshape gives a view when the strides allow one, and a copy otherwise; View refuses then.
func ExampleTensor_Reshape() {
	x := bc.Must(bc.FromSlice([]int{2, 3}, []int32{0, 1, 2, 3, 4, 5}))
	xt := bc.Must(x.Transpose(0, 1))
	fmt.Println(bc.Must(xt.Reshape(-1)))
	_, err := xt.View(-1)
	fmt.Println(errors.Is(err, bc.ErrShape))
	// Output:
	// tensor([0, 3, 1, 4, 2, 5], dtype=torch.int32)
	// true
}

// A closed tensor is refused with an error, never a panic.
func ExampleTensor_Close() {
	x := bc.Must(bc.Zeros(bc.Float32, 2))
	x.Close()
	_, err := x.Clone()
	fmt.Println(err, errors.Is(err, bc.ErrInvalidHandle))
	fmt.Println(x, x.Shape(), x.NDim())
	// Output:
	// tensor is closed true
	// <closed tensor> [] -1
}
