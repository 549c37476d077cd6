package broadcast_test

import (
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
		if n := bc.YoungLen(); n >= bc.YoungMax {
			t.Fatalf("the young list holds %d tensors, more than %d", n, bc.YoungMax-1)
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
