package broadcast_test

import (
	"testing"

	bc "libbroadcast/broadcast"
)

// Closing a small result queues its handle; the queue is freed in one call when it holds
// FreeBatch handles, and by LiveCount, which so never counts a closed tensor. Views and large
// results are freed at once.
func TestFreeQueue(t *testing.T) {
	if bc.DebugGC {
		t.Skip("-tags bcdebug frees every tensor at once")
	}
	x := must(bc.Ones(bc.Float32, 4))(t)
	defer x.Close()
	base := settle() // no finalizer of an earlier test's tensor left to queue a handle meanwhile
	if n := bc.PendingFrees(); n != 0 {
		t.Fatalf("%d handles still queued after LiveCount", n)
	}
	for i := 1; i < bc.FreeBatch; i++ {
		must(bc.Add.Apply(x, x))(t).Close()
		if n := bc.PendingFrees(); n != i {
			t.Fatalf("after %d small results closed, %d queued", i, n)
		}
	}
	// A view and a large result: freed at once, not queued.
	must(x.Expand(3, 4))(t).Close()
	must(bc.Zeros(bc.Float32, bc.YoungBytes/4))(t).Close()
	if n := bc.PendingFrees(); n != bc.FreeBatch-1 {
		t.Fatalf("%d queued after a view and a large result were closed, want %d", n, bc.FreeBatch-1)
	}
	must(bc.Add.Apply(x, x))(t).Close() // the queue fills: freed in one call
	if n := bc.PendingFrees(); n != 0 {
		t.Fatalf("%d still queued once the queue filled", n)
	}
	must(bc.Add.Apply(x, x))(t).Close()
	if got := bc.LiveCount(); got != base {
		t.Fatalf("%d live handles after every result was closed, want %d", got, base)
	}
}
