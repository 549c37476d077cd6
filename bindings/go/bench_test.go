package broadcast_test

import (
	"runtime"
	"sync/atomic"
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

// owner stands for a Tensor (a handle and a byte count, 16 bytes) in the floor benchmark below.
type owner struct {
	h atomic.Uintptr
	n int64
}

func (o *owner) free() { o.h.Store(0) }

// What an owning Go value with a finalizer costs beside its C calls, without any C call: a new
// object on Go's heap, runtime.SetFinalizer to free it if it is dropped, and SetFinalizer(nil)
// when it is closed. Every result paid this before the young list (young.go); a small result
// closed while young now pays only the allocation. An allocating call cannot cost less than the
// C call plus two empty cgo calls (the operation and the free): `make go-bench` prints that floor.
func BenchmarkOwnerFinalizer(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		o := &owner{n: 8}
		o.h.Store(uintptr(i))
		runtime.SetFinalizer(o, (*owner).free)
		runtime.SetFinalizer(o, nil)
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
