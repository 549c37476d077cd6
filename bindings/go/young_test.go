package broadcast_test

import (
	"runtime"
	"sync"
	"testing"

	bc "libbroadcast/broadcast"
)

// A small result starts on the young list without a finalizer, and Close has none to clear; the
// list arms its open tensors when it fills, so it never holds more than YoungMax; views and large
// results get their finalizer at once; small tensors dropped unclosed are still freed.
func TestYoungTensors(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug arms every tensor at once")
	}
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Float32, 4))(t)
	r := must(bc.Add.Apply(x, x))(t)
	if bc.Armed(r) {
		t.Errorf("a new 4-element result has its finalizer already")
	}
	hs := []uintptr{bc.Handle(r)}
	r.Close()

	big := must(bc.Zeros(bc.Float32, bc.YoungBytes/4))(t) // exactly YoungBytes of storage
	v := must(x.Expand(3, 4))(t)
	if !bc.Armed(big) || !bc.Armed(v) {
		t.Errorf("armed: %d bytes %v, a view %v; both should be at once", bc.StorageBytes(big), bc.Armed(big), bc.Armed(v))
	}
	hs = append(hs, bc.Handle(big), bc.Handle(v))
	big.Close()
	v.Close()

	kept := make([]*bc.Tensor, 2*bc.YoungMax)
	for i := range kept {
		kept[i] = must(bc.Mul.Apply(x, x))(t)
		if n := bc.YoungLen(); n > bc.YoungMax {
			t.Fatalf("the young list holds %d tensors, more than %d", n, bc.YoungMax)
		}
	}
	armed := 0
	for _, k := range kept {
		if bc.Armed(k) {
			armed++
		}
		hs = append(hs, bc.Handle(k))
	}
	if armed < bc.YoungMax {
		t.Errorf("%d of %d open tensors armed, want at least %d (the list filled twice)", armed, len(kept), bc.YoungMax)
	}
	func() {
		for i := 0; i < 10; i++ { // dropped while young
			d := must(bc.Sub.Apply(x, x))(t)
			hs = append(hs, bc.Handle(d))
		}
	}()
	kept = nil
	hs = append(hs, bc.Handle(x))
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}

// A small result closed while young is freed by the young list, exactly once: not at its Close,
// but with the others closed since, in one cgo call, when the list fills, or when LiveCount
// counts; its storage is uncounted then. Until then it is closed to every call all the same.
func TestYoungClosedFreedTogether(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug frees every tensor at its Close")
	}
	base := settle()
	f := countFrees(t)
	bc.FlushYoung()
	x := must(bc.Ones(bc.Float32, 4))(t)
	bytes := bc.OpenBytes()
	r := must(bc.Add.Apply(x, x))(t)
	// (The sum of two 4-element tensors counts 8 bytes for each of 4*4 elements, the bound the
	// package knows without asking the library: see TestSmallResultsCountABound.)
	if got := bc.OpenBytes() - bytes; got != bc.StorageBytes(r) || got != 128 {
		t.Errorf("a 4-element result counts %d bytes, want 128", got)
	}
	h := bc.Handle(r)
	r.Close()
	if n := f.count(h); n != 0 {
		t.Errorf("a young result's handle was freed %d times at its Close; the young list frees it", n)
	}
	if bc.Handle(r) != 0 || r.IsLive() {
		t.Errorf("a closed young result still has its handle")
	}
	_, err := bc.Add.Apply(r, x)
	checkErr(t, err, bc.ErrInvalidHandle, "tensor is closed")
	if n := bc.LiveCount(); n != base+1 {
		t.Errorf("LiveCount %d, want %d (x alone)", n, base+1)
	}
	if n := f.count(h); n != 1 {
		t.Errorf("after LiveCount the closed result's handle was freed %d times, want 1", n)
	}
	if got := bc.OpenBytes(); got != bytes {
		t.Errorf("%d bytes counted after the result was freed, want %d", got, bytes)
	}

	// The list fills (x and YoungMax-1 results, closed); the next result finds it full: the
	// results closed so far are freed and x (open) is armed, but the new result, made open,
	// stays young, without a finalizer.
	var hs []uintptr
	for i := 0; i < bc.YoungMax-1; i++ {
		r := must(bc.Mul.Apply(x, x))(t)
		hs = append(hs, bc.Handle(r))
		r.Close()
	}
	if n := bc.YoungLen(); n != bc.YoungMax {
		t.Errorf("the young list holds %d tensors, want %d (x and %d closed results)", n, bc.YoungMax, bc.YoungMax-1)
	}
	last := must(bc.Mul.Apply(x, x))(t)
	for _, h := range hs {
		if n := f.count(h); n != 1 {
			t.Errorf("handle %#x freed %d times once the young list filled, want 1", h, n)
		}
	}
	if !bc.Armed(x) {
		t.Errorf("x, open when the young list filled, was not armed")
	}
	if bc.Armed(last) || bc.YoungLen() != 1 {
		t.Errorf("the result that found the list full: armed %v, young list of %d; want young, alone on it", bc.Armed(last), bc.YoungLen())
	}
	hs = append(hs, h, bc.Handle(x), bc.Handle(last))
	last.Close()
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}

// Small results closed once, closed by two goroutines at once, or dropped, from several
// goroutines, while LiveCount sweeps the young list and collections arm it: every handle is
// freed exactly once.
func TestYoungConcurrentCloseAndSweep(t *testing.T) {
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Float32, 4))(t)
	var mu sync.Mutex
	var hs []uintptr
	stop := make(chan struct{})
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		for {
			select {
			case <-stop:
				return
			default:
				bc.LiveCount()
				runtime.GC()
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				r, err := bc.Add.Apply(x, x)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				hs = append(hs, bc.Handle(r))
				mu.Unlock()
				switch i % 3 {
				case 0:
					r.Close()
				case 1:
					var both sync.WaitGroup
					both.Add(2)
					for k := 0; k < 2; k++ {
						go func() {
							defer both.Done()
							r.Close()
						}()
					}
					both.Wait()
				} // else dropped unclosed
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-swept
	hs = append(hs, bc.Handle(x))
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}
