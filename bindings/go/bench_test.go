package broadcast_test

import (
	"testing"

	bc "libbroadcast/broadcast"
	"libbroadcast/broadcast/internal/cbench"
)

// An empty cgo call: the floor under every call the package makes.
func BenchmarkEmptyCgoCall(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cbench.Empty()
	}
}

// The same additions through the Go package and from C (one cgo call for the whole C loop):
// the difference per call is what the package and cgo add. `make go-bench` runs them in
// interleaved rounds and prints medians.
func BenchmarkAdd(b *testing.B) {
	for _, c := range []struct {
		name   string
		sa, sb []int
	}{
		{"tiny(4)+(4)", []int{4}, []int{4}},
		{"large(1024,1024)+(1024)", []int{1024, 1024}, []int{1024}},
	} {
		x := must(bc.Full(bc.Float32, 1.5, c.sa...))(b)
		y := must(bc.Full(bc.Float32, 2.25, c.sb...))(b)
		out := must(bc.Add.Apply(x, y))(b)
		hx, hy, ho := bc.Handle(x), bc.Handle(y), bc.Handle(out)
		b.Run(c.name+"/alloc/go", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r, err := bc.Add.Apply(x, y)
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
		b.Run(c.name+"/alloc/c", func(b *testing.B) {
			if s := cbench.AddAlloc(hx, hy, b.N); s != 0 {
				b.Fatalf("status %d", s)
			}
		})
		b.Run(c.name+"/out/go", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := bc.Add.Out(out, x, y); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/out/c", func(b *testing.B) {
			if s := cbench.AddOut(hx, hy, ho, b.N); s != 0 {
				b.Fatalf("status %d", s)
			}
		})
		x.Close()
		y.Close()
		out.Close()
	}
}
