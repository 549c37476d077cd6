package broadcast_test

import (
	"runtime"
	"sync"
	"testing"

	bc "libbroadcast/broadcast"
)

// A small result starts on the young ring without a finalizer, and Close has none to clear; a new
// tensor arms the open one it takes out of its slot, so the ring never holds more than
// YoungSlots; views and large results get their finalizer at once; small tensors dropped unclosed
// are still freed.
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

	kept := make([]*bc.Tensor, 2*bc.YoungSlots)
	for i := range kept {
		kept[i] = must(bc.Mul.Apply(x, x))(t)
		if n := bc.YoungLen(); n > bc.YoungSlots+bc.YoungMax {
			t.Fatalf("%d young tensors, more than %d", n, bc.YoungSlots+bc.YoungMax)
		}
	}
	armed := 0
	for _, k := range kept {
		if bc.Armed(k) {
			armed++
		}
		hs = append(hs, bc.Handle(k))
	}
	if armed < bc.YoungSlots {
		t.Errorf("%d of %d open tensors armed, want at least %d (more than the ring holds)", armed, len(kept), bc.YoungSlots)
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

// A small result closed while young is freed later, exactly once: not at its Close, but when its
// slot is reused, or when LiveCount counts; its storage is uncounted then. Until then it is closed
// to every call all the same.
func TestYoungClosedFreedLater(t *testing.T) {
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
		t.Errorf("a young result's handle was freed %d times at its Close; the young ring frees it", n)
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
	x.Close()
	waitLive(t, base)
}

// The results of other calls than small binary operations go on the young list: when it fills
// (x and YoungMax-1 results, closed), the next result finds it full: the results closed so far
// are freed, in one cgo call, and x (open) is armed, but the new result, made open, stays young,
// without a finalizer.
func TestYoungListFreedTogether(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug frees every tensor at its Close")
	}
	base := settle()
	f := countFrees(t)
	bc.FlushYoung()
	x := must(bc.Ones(bc.Float32, 4))(t)
	bytes := bc.OpenBytes()
	c := must(x.Clone())(t)
	h := bc.Handle(c)
	c.Close()
	bc.LiveCount() // frees c
	if got := bc.OpenBytes(); got != bytes || f.count(h) != 1 {
		t.Errorf("a closed result on the young list: freed %d times by LiveCount, %d bytes counted after; want 1, %d", f.count(h), got, bytes)
	}
	batches := bc.BatchFrees()
	hs := []uintptr{h}
	for i := 0; i < bc.YoungMax-1; i++ {
		r := must(x.Clone())(t)
		hs = append(hs, bc.Handle(r))
		r.Close()
	}
	if n := bc.YoungLen(); n != bc.YoungMax {
		t.Errorf("%d young tensors, want %d (x and %d closed results)", n, bc.YoungMax, bc.YoungMax-1)
	}
	last := must(x.Clone())(t)
	for _, h := range hs {
		if n := f.count(h); n != 1 {
			t.Errorf("handle %#x freed %d times once the young list filled, want 1", h, n)
		}
	}
	if got := bc.BatchFrees() - batches; got != 1 {
		t.Errorf("%d cgo calls freed the closed results, want 1", got)
	}
	if !bc.Armed(x) {
		t.Errorf("x, open when the young list filled, was not armed")
	}
	if bc.Armed(last) || bc.YoungLen() != 1 {
		t.Errorf("the result that found the list full: armed %v, %d young tensors; want young, alone", bc.Armed(last), bc.YoungLen())
	}
	hs = append(hs, bc.Handle(x), bc.Handle(last))
	last.Close()
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}

// A small binary operation frees the closed tensor it takes out of its slot inside its own cgo
// call: a loop of small results, each closed, keeps at most the ring's worth of handles live
// (without LiveCount's sweep), and frees them without any cgo call of the ring's own.
func TestYoungFreedInTheNextCall(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug frees every tensor at its Close")
	}
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Float32, 4))(t)
	bc.FlushYoung()
	batches := bc.BatchFrees()
	const n = 8 * bc.YoungSlots
	var hs []uintptr
	most := 0
	for i := 0; i < n; i++ {
		r := must(bc.Add.Apply(x, x))(t)
		hs = append(hs, bc.Handle(r))
		r.Close()
		if live := bc.LiveHandles() - base - 1; live > most {
			most = live
		}
	}
	if most > bc.YoungSlots+1 {
		t.Errorf("%d results live at once (closed ones included), want at most %d", most, bc.YoungSlots+1)
	}
	freed := 0
	for _, h := range hs {
		if f.count(h) > 0 {
			freed++
		}
	}
	if freed < n-bc.YoungSlots {
		t.Errorf("%d of %d closed results freed before any sweep, want at least %d", freed, n, n-bc.YoungSlots)
	}
	if got := bc.BatchFrees() - batches; got != 0 {
		t.Errorf("%d cgo calls of the young ring's own freed them, want none", got)
	}
	hs = append(hs, bc.Handle(x))
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}

// A small binary operation that fails has put its tensor into its slot before the call: the
// tensor is retired, and nothing is freed or counted for it, even when a flush took it out of its
// slot and armed it during the call.
func TestYoungFailedCall(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug arms every tensor at once")
	}
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Float32, 2))(t)
	y := must(bc.Ones(bc.Float32, 3))(t)
	bc.FlushYoung()
	bytes := bc.OpenBytes()
	var hs []uintptr
	for i := 0; i < 3*bc.YoungSlots; i++ {
		_, err := bc.Add.Apply(x, y)
		checkErr(t, err, bc.ErrShape, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")
		if i%2 == 0 {
			r := must(bc.Mul.Apply(x, x))(t)
			hs = append(hs, bc.Handle(r))
			r.Close()
		}
	}
	bc.FlushYoung()
	if got := bc.OpenBytes(); got != bytes {
		t.Errorf("%d bytes counted after failed calls, want %d", got, bytes)
	}
	if n := f.count(0); n != 0 {
		t.Errorf("handle 0 freed %d times", n)
	}
	armed, counted := bc.FailedCallTakenOut()
	if !armed || counted != 0 {
		t.Errorf("a failed call's tensor armed during the call: armed %v, %d bytes left counted, want true, 0", armed, counted)
	}
	hs = append(hs, bc.Handle(x), bc.Handle(y))
	x.Close()
	y.Close()
	waitLive(t, base)
	f.check(t, hs)
}

// Small results closed once, closed by two goroutines at once, or dropped, and small calls that
// fail, from several goroutines, while LiveCount sweeps the young ring and collections arm it: every handle is
// freed exactly once.
func TestYoungConcurrentCloseAndSweep(t *testing.T) {
	base := settle()
	f := countFrees(t)
	x := must(bc.Ones(bc.Float32, 4))(t)
	bad := must(bc.Ones(bc.Float32, 3))(t)
	bytes := bc.OpenBytes()
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
				if _, err := bc.Add.Apply(x, bad); err == nil {
					t.Error("(4) + (3) did not fail")
				}
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
	hs = append(hs, bc.Handle(x), bc.Handle(bad))
	x.Close()
	bad.Close()
	waitLive(t, base)
	f.check(t, hs)
	if want := bytes - bc.StorageBytes(x) - bc.StorageBytes(bad); bc.OpenBytes() != want {
		t.Errorf("%d bytes counted once every result was freed, want %d", bc.OpenBytes(), want)
	}
}

// A Tensor takes 16 bytes, and holds its storage count in 4 of them: exactly below 2 GiB, in
// whole MiB (rounded down) from there, up to 2 PiB.
func TestTensorStorageCount(t *testing.T) {
	if bc.TensorSize != 16 {
		t.Errorf("a Tensor takes %d bytes, want 16", bc.TensorSize)
	}
	const mib, gib = int64(1) << 20, int64(1) << 30
	for _, c := range []struct{ n, want int64 }{
		{-5, 0}, {0, 0}, {1, 1}, {511, 511}, {512, 512}, {64 << 10, 64 << 10},
		{2*gib - 1, 2*gib - 1}, {2 * gib, 2 * gib}, {2*gib + 12345, 2 * gib},
		{5<<40 + 7, 5 << 40}, {1 << 62, (1<<31 - 1) * mib},
	} {
		if got := bc.PackedBytes(c.n); got != c.want {
			t.Errorf("a storage count of %d bytes is held as %d, want %d", c.n, got, c.want)
		}
	}
}
