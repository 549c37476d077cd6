package broadcast_test

// Lifetimes: Close, finalizers, and the two racing; every handle is freed exactly once, and the
// library's live-handle count comes back to where it was.

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	bc "libbroadcast/broadcast"
)

// frees counts, per handle, how often the package freed it.
type frees struct {
	mu sync.Mutex
	n  map[uintptr]int
}

func countFrees(t *testing.T) *frees {
	f := &frees{n: map[uintptr]int{}}
	bc.SetFreeHook(func(h uintptr) {
		f.mu.Lock()
		f.n[h]++
		f.mu.Unlock()
	})
	t.Cleanup(func() { bc.SetFreeHook(nil) })
	return f
}

// check fails the test unless every handle in hs was freed exactly once, and nothing else was.
func (f *frees) check(t *testing.T, hs []uintptr) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range hs {
		if f.n[h] != 1 {
			t.Errorf("handle %#x freed %d times", h, f.n[h])
		}
	}
	if len(f.n) != len(hs) {
		t.Errorf("%d handles freed, want %d", len(f.n), len(hs))
	}
}

// settle runs the garbage collector until the finalizers of earlier tests have run, and returns
// the live-handle count then.
func settle() int {
	n := -1
	for i := 0; i < 50; i++ {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		m := bc.LiveCount()
		if m == n {
			break
		}
		n = m
	}
	return n
}

// waitLive collects garbage until the live count is want, and fails the test if it never is.
func waitLive(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for bc.LiveCount() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d live handles, want %d", bc.LiveCount(), want)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestFinalizersFreeDroppedTensors(t *testing.T) {
	base := settle()
	f := countFrees(t)
	var hs []uintptr
	func() {
		for i := 0; i < 500; i++ {
			x := must(bc.Ones(bc.Float32, 3, 1))(t)
			v := must(x.Expand(3, 4))(t) // a view outlives nothing: each handle is its own
			r := must(bc.Add.Apply(x, v))(t)
			hs = append(hs, bc.Handle(x), bc.Handle(v), bc.Handle(r))
		}
	}()
	if bc.LiveCount() < base+len(hs)/2 {
		t.Logf("the collector was fast: %d live", bc.LiveCount()-base)
	}
	waitLive(t, base)
	f.check(t, hs)
}

func TestCloseIsIdempotentAndStopsTheFinalizer(t *testing.T) {
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Int32, 2))(t)
	h := bc.Handle(x)
	if !x.IsLive() || bc.LiveCount() != base+1 {
		t.Fatalf("new tensor not live")
	}
	x.Close()
	x.Close()
	if x.IsLive() || bc.Handle(x) != 0 || bc.LiveCount() != base {
		t.Errorf("closed tensor still live")
	}
	x = nil
	settle()
	f.check(t, []uintptr{h})
	var nilTensor *bc.Tensor
	nilTensor.Close() // a nil tensor closes like a closed one
}

func TestUseAfterClose(t *testing.T) {
	x := must(bc.Ones(bc.Float32, 2))(t)
	y := must(bc.Ones(bc.Float32, 2))(t)
	x.Close()
	_, err := bc.Add.Apply(x, y)
	checkErr(t, err, bc.ErrNullArg, "argument `a` is NULL")
	checkErr(t, bc.Add.InPlace(y, x), bc.ErrNullArg, "argument `other` is NULL")
	if s := x.String(); s != "closed tensor" {
		t.Errorf("String of a closed tensor: %q", s)
	}
	defer func() {
		var e *bc.Error
		if p := recover(); p == nil {
			t.Errorf("Shape of a closed tensor did not panic")
		} else if err, ok := p.(error); !ok || !errors.As(err, &e) || e.Status != bc.ErrNullArg {
			t.Errorf("Shape of a closed tensor panicked with %v", p)
		}
	}()
	x.Shape()
}

// Close racing Close, and Close racing the finalizer of tensors dropped while other goroutines
// close their neighbours: every handle is freed once, and survivors stay intact.
func TestCloseFinalizerRace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	base := settle()
	f := countFrees(t)
	survivors := make([]*bc.Tensor, 8)
	for i := range survivors {
		survivors[i] = must(bc.Full(bc.Int64, float64(i), 16))(t)
	}
	var mu sync.Mutex
	var hs []uintptr
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 200; round++ {
				ts := make([]*bc.Tensor, 8)
				for i := range ts {
					ts[i] = must(bc.Ones(bc.Float32, 4))(t)
					mu.Lock()
					hs = append(hs, bc.Handle(ts[i]))
					mu.Unlock()
				}
				var inner sync.WaitGroup
				for i := 0; i < len(ts); i += 2 { // every other one: closed twice at once
					inner.Add(2)
					for k := 0; k < 2; k++ {
						go func(x *bc.Tensor) { defer inner.Done(); x.Close() }(ts[i])
					}
				}
				inner.Wait()
				if round%20 == 0 {
					runtime.GC() // the rest: dropped, for their finalizers
				}
			}
		}(g)
	}
	wg.Wait()
	waitLive(t, base+len(survivors))
	for i, s := range survivors {
		got := must(bc.Data[int64](s))(t)
		for _, v := range got {
			if v != int64(i) {
				t.Fatalf("survivor %d changed: %v", i, got)
			}
		}
		hs = append(hs, bc.Handle(s))
		s.Close()
	}
	waitLive(t, base)
	f.check(t, hs)
	t.Logf("%d handles, each freed once", len(hs))
}
