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

// count is how many times h was freed.
func (f *frees) count(h uintptr) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[h]
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
// the live-handle count then: unchanged over three collections, since a small tensor dropped
// while young is freed by the second collection after it was dropped (young.go).
func settle() int {
	n, same := -1, 0
	for i := 0; i < 50 && same < 3; i++ {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		m := bc.LiveCount()
		if m == n {
			same++
		} else {
			same = 0
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

// Every call given a closed tensor, in any position, returns an *Error saying so (no panic, and
// not the library's NULL-argument text); the accessors without an error return the values their
// documentation gives.
func TestUseAfterClose(t *testing.T) {
	x := must(bc.Ones(bc.Float32, 2))(t)
	y := must(bc.Ones(bc.Float32, 2))(t)
	cond := must(bc.Ones(bc.Bool, 2))(t)
	x.Close()
	n := bc.NumberOf(1)
	e := bc.Add.Of(bc.Input(0), bc.Input(1))
	calls := map[string]func() error{
		"Apply a":             func() error { _, err := bc.Add.Apply(x, y); return err },
		"Apply b":             func() error { _, err := bc.Add.Apply(y, x); return err },
		"InPlace target":      func() error { return bc.Add.InPlace(x, y) },
		"InPlace other":       func() error { return bc.Add.InPlace(y, x) },
		"Out out":             func() error { return bc.Add.Out(x, y, y) },
		"Out b":               func() error { return bc.Add.Out(y, y, x) },
		"ApplyNumber":         func() error { _, err := bc.Add.ApplyNumber(x, n); return err },
		"ApplyNumberFirst":    func() error { _, err := bc.Add.ApplyNumberFirst(n, x); return err },
		"InPlaceNumber":       func() error { return bc.Add.InPlaceNumber(x, n) },
		"Where cond":          func() error { _, err := bc.Where(x, y, y); return err },
		"Where b":             func() error { _, err := bc.Where(cond, y, x); return err },
		"WhereOut out":        func() error { return bc.WhereOut(x, cond, y, y) },
		"Eval":                func() error { _, err := e.Eval(y, x); return err },
		"EvalOut out":         func() error { return e.EvalOut(x, y, y) },
		"EvalOut input":       func() error { return e.EvalOut(y, x, y) },
		"Reduction":           func() error { _, err := bc.Sum.Apply(x, false); return err },
		"SumToSize":           func() error { _, err := x.SumToSize(1); return err },
		"SumTo":               func() error { _, err := bc.Add.SumTo(y, x, 1); return err },
		"Clone":               func() error { _, err := x.Clone(); return err },
		"Contiguous":          func() error { _, err := x.Contiguous(); return err },
		"ToDType":             func() error { _, err := x.ToDType(bc.Int8); return err },
		"Data":                func() error { _, err := bc.Data[float32](x); return err },
		"Data, wrong type":    func() error { _, err := bc.Data[int32](x); return err },
		"CopyTo":              func() error { return bc.CopyTo(x, make([]float32, 2)) },
		"At":                  func() error { _, err := bc.At[float32](x, 0); return err },
		"Text":                func() error { _, err := x.Text(); return err },
		"DataPointer":         func() error { _, _, _, err := x.DataPointer(); return err },
		"ToDLPack":            func() error { _, err := x.ToDLPack(); return err },
		"ToDLPackUnversioned": func() error { _, err := x.ToDLPackUnversioned(); return err },
		"Expand":              func() error { _, err := x.Expand(2); return err },
		"BroadcastTo":         func() error { _, err := x.BroadcastTo(2); return err },
		"ExpandAs":            func() error { _, err := y.ExpandAs(x); return err },
		"Permute":             func() error { _, err := x.Permute(0); return err },
		"Transpose":           func() error { _, err := x.Transpose(0, 0); return err },
		"Slice":               func() error { _, err := x.Slice(0, 0, 1, 1); return err },
		"AsStrided":           func() error { _, err := x.AsStrided([]int{1}, []int{1}, 0); return err },
		"View":                func() error { _, err := x.View(2); return err },
		"Reshape":             func() error { _, err := x.Reshape(2); return err },
		"Unsqueeze":           func() error { _, err := x.Unsqueeze(0); return err },
		"Squeeze":             func() error { _, err := x.Squeeze(0); return err },
		"SqueezeAll":          func() error { _, err := x.SqueezeAll(); return err },
		"Flatten":             func() error { _, err := x.Flatten(0, 0); return err },
		"BroadcastTensors":    func() error { _, err := bc.BroadcastTensors(y, x); return err },
	}
	for name, call := range calls {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s panicked: %v", name, p)
				}
			}()
			err = call()
		}()
		var e *bc.Error
		if !errors.As(err, &e) || e.Status != bc.ErrInvalidHandle || e.Kind != bc.KindInvalidHandle ||
			e.Message != "tensor is closed" || !errors.Is(err, bc.ErrInvalidHandle) {
			t.Errorf("%s on a closed tensor: %#v", name, err)
		}
	}
	if s := x.String(); s != "<closed tensor>" {
		t.Errorf("String of a closed tensor: %q", s)
	}
	if x.Shape() != nil || x.Strides() != nil || x.NDim() != -1 || x.Numel() != -1 || x.Offset() != -1 ||
		x.IsContiguous() || x.DType() != bc.DType(-1) || x.IsLive() {
		t.Errorf("accessors of a closed tensor: %v %v %d %d %d %v %v", x.Shape(), x.Strides(), x.NDim(),
			x.Numel(), x.Offset(), x.IsContiguous(), x.DType())
	}
	// A nil tensor is the library's missing argument, named.
	_, err := bc.Add.Apply(y, nil)
	checkErr(t, err, bc.ErrNullArg, "argument `b` is NULL")
	var none *bc.Tensor
	if _, err := bc.Data[float32](none); !errors.Is(err, bc.ErrNullArg) {
		t.Errorf("Data of nil: %v", err)
	}
	if none.String() != "<nil>" || none.Shape() != nil || none.NDim() != -1 {
		t.Errorf("accessors of a nil tensor")
	}
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
