package main

import (
	"errors"
	"fmt"

	"libbroadcast/broadcast"
)

func main() {
	a := broadcast.Must(broadcast.Ones(broadcast.Float32, 4, 1))
	b := broadcast.Must(broadcast.FromSlice([]int{4}, []float32{0.5, 1.5, 2.5, 3.5}))
	c := broadcast.Must(broadcast.Add.Apply(a, b))
	fmt.Println("(4,1) + (4,) ->", c.Shape(), "first row:", broadcast.Must(broadcast.Data[float32](c))[:4])
	_, err := broadcast.Add.Apply(c, broadcast.Must(broadcast.Ones(broadcast.Float32, 3)))
	if errors.Is(err, broadcast.ErrShape) {
		fmt.Println("error:", err)
	}
}
