// Standardize scales each column of a 1000x8 float32 matrix to mean 0 and standard deviation 1
// (the population one: correction 0), replaces the values above 2 with 0, and prints the first
// rows.
package main

import (
	"fmt"
	"log"

	bc "libbroadcast/broadcast"
)

func must(t *bc.Tensor, err error) *bc.Tensor {
	if err != nil {
		log.Fatal(err)
	}
	return t
}

func main() {
	data := make([]float32, 1000*8)
	for i := range data {
		u := float32((i/8*37+i%8*11)%100) / 100
		data[i] = u * u * u * float32(i%8+1) // skewed columns of growing scale
	}
	x := must(bc.FromSlice([]int{1000, 8}, data))
	mean := must(bc.Mean.Apply(x, true, 0))    // shape (1, 8)
	dev := bc.Sub.Of(bc.Input(0), bc.Input(1)) // x - mean, broadcast over the rows
	std := must(bc.Std(x, 0, true, 0))         // shape (1, 8)
	z := bc.Div.Of(dev, bc.Input(2))
	masked := bc.WhereOf(bc.Gt.Of(z, bc.Const(bc.Float32, 2)), bc.Const(bc.Float32, 0), z)
	fmt.Println(must(must(masked.Eval(x, mean, std)).Slice(0, 0, 4, 1)))
}
