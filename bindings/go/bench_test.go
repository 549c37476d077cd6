package broadcast_test

import (
	"runtime"
	"sort"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bc "libbroadcast/broadcast"
	"libbroadcast/broadcast/internal/cbench"
)

// cpuTime is the CPU time the process has used (user and system, every thread: the garbage
// collector's too).
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// timed runs body (b.N calls) and reports, beside the wall time, the CPU time per call
// ("cpu-ns/op"): a loaded machine stretches it far less than the wall time, and unlike the time
// of the whole process it leaves out the setup and the library's one-time start-up work.
func timed(b *testing.B, body func()) {
	b.ResetTimer()
	start := cpuTime()
	body()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// An empty cgo call: the floor under every call the package makes.
func BenchmarkEmptyCgoCall(b *testing.B) {
	timed(b, func() {
		for i := 0; i < b.N; i++ {
			cbench.Empty()
		}
	})
}

// owner stands for a Tensor (a handle and a byte count, 16 bytes) in the floor benchmark below.
type owner struct {
	h atomic.Uintptr
	n int64
}

func (o *owner) free() { o.h.Store(0) }

// What an owning Go value with a finalizer costs beside its C calls, without any C call: a new
// object on Go's heap, runtime.SetFinalizer to free it if it is dropped, and SetFinalizer(nil)
// when it is closed. Every result paid this before the young ring (young.go); a small result
// closed while young now pays only the allocation. An allocating call cannot cost less than the
// C call plus an empty cgo call (a small result is freed in the cgo call of a later one): `make
// go-bench` prints that floor.
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
		{"small(3,1)+(1,3)", []int{3, 1}, []int{1, 3}},
		{"large(1024,1024)+(1024)", []int{1024, 1024}, []int{1024}},
	} {
		x := must(bc.Full(bc.Float32, 1.5, c.sa...))(b)
		y := must(bc.Full(bc.Float32, 2.25, c.sb...))(b)
		out := must(bc.Add.Apply(x, y))(b)
		hx, hy, ho := bc.Handle(x), bc.Handle(y), bc.Handle(out)
		b.Run(c.name+"/alloc/go", func(b *testing.B) {
			b.ReportAllocs()
			timed(b, func() {
				for i := 0; i < b.N; i++ {
					r, err := bc.Add.Apply(x, y)
					if err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
			})
		})
		b.Run(c.name+"/alloc/c", func(b *testing.B) {
			timed(b, func() {
				if s := cbench.AddAlloc(hx, hy, b.N); s != 0 {
					b.Fatalf("status %d", s)
				}
			})
		})
		b.Run(c.name+"/out/go", func(b *testing.B) {
			b.ReportAllocs()
			timed(b, func() {
				for i := 0; i < b.N; i++ {
					if err := bc.Add.Out(out, x, y); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(c.name+"/out/c", func(b *testing.B) {
			timed(b, func() {
				if s := cbench.AddOut(hx, hy, ho, b.N); s != 0 {
					b.Fatalf("status %d", s)
				}
			})
		})
		x.Close()
		y.Close()
		out.Close()
	}
}

// The tiny allocating addition (and the same into out) from Go and from C in alternating chunks
// of chunk calls, for b.N chunks each: the median CPU time per call of each, and their ratio. A
// shared machine's load changes over seconds; alternating every fraction of a millisecond gives
// both sides nearly the same machine. Also timed: the floor of the allocating call from Go
// (alloc-floor: the C call in one cgo call, which frees the previous result first, as the
// package frees a closed small result in the cgo call of a later one), which tells cgo's share of
// the difference from the package's.
func BenchmarkAddTinyAlternating(b *testing.B) { addAlternating(b, []int{4}, []int{4}) }

// BenchmarkAddTinyAlternating for float32 (3,1)+(1,3), a broadcast whose C call costs a little
// more (`go test -bench AddSmallAlternating`; `make go-bench` runs the other).
func BenchmarkAddSmallAlternating(b *testing.B) { addAlternating(b, []int{3, 1}, []int{1, 3}) }

func addAlternating(b *testing.B, sa, sb []int) {
	const chunk = 2000
	x := must(bc.Full(bc.Float32, 1.5, sa...))(b)
	y := must(bc.Full(bc.Float32, 2.25, sb...))(b)
	out := must(bc.Add.Apply(x, y))(b)
	hx, hy, ho := bc.Handle(x), bc.Handle(y), bc.Handle(out)
	perCall := func(f func()) float64 {
		start := cpuTime()
		f()
		return float64(cpuTime()-start) / chunk
	}
	var allocGo, allocC, allocFloor, outGo, outC, empty []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		allocGo = append(allocGo, perCall(func() {
			for k := 0; k < chunk; k++ {
				r, err := bc.Add.Apply(x, y)
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		}))
		allocC = append(allocC, perCall(func() { cbench.AddAlloc(hx, hy, chunk) }))
		allocFloor = append(allocFloor, perCall(func() {
			prev := uintptr(0)
			for k := 0; k < chunk; k++ {
				if prev = cbench.AddFreePrev(hx, hy, prev); prev == 0 {
					b.Fatal("add_free_prev failed")
				}
			}
			cbench.FreeHandle(prev)
		}))
		outGo = append(outGo, perCall(func() {
			for k := 0; k < chunk; k++ {
				if err := bc.Add.Out(out, x, y); err != nil {
					b.Fatal(err)
				}
			}
		}))
		outC = append(outC, perCall(func() { cbench.AddOut(hx, hy, ho, chunk) }))
		empty = append(empty, perCall(func() {
			for k := 0; k < chunk; k++ {
				cbench.Empty()
			}
		}))
	}
	ag, ac, og, oc, e := median(allocGo), median(allocC), median(outGo), median(outC), median(empty)
	b.ReportMetric(ag, "alloc-go-cpu-ns")
	b.ReportMetric(ac, "alloc-c-cpu-ns")
	b.ReportMetric(ag/ac, "alloc-go/c")
	b.ReportMetric(median(allocFloor), "alloc-floor-cpu-ns")
	b.ReportMetric(og, "out-go-cpu-ns")
	b.ReportMetric(oc, "out-c-cpu-ns")
	b.ReportMetric(e, "empty-cgo-cpu-ns")
	b.ReportMetric(og-oc-e, "out-go-c-cgo-ns")
	x.Close()
	y.Close()
	out.Close()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
