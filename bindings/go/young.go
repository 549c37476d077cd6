package broadcast

import (
	"runtime"
	"sync"
)

// A finalizer costs a Go value more than its cgo calls do: runtime.SetFinalizer when a tensor is
// made and SetFinalizer(t, nil) when it is closed take as long together as one to two empty cgo
// calls, most of an allocating call's cost beyond the C call for a small result (`make
// go-bench`, BenchmarkOwnerFinalizer). Most small results are closed soon after they are made.
// So a new tensor with a small storage of its own (below youngBytes) gets no finalizer at first:
// it goes on the young list, which holds it, so that it cannot be collected without one. The
// list is armed (each tensor on it still open gets its finalizer, and the list lets go of them)
// when it is full, before each collection the package starts, and after each garbage
// collection (a finalizer on a tick object tells when one has run). A tensor closed while young
// never had a finalizer, and Close has none to clear.
//
// What it changes: a small tensor dropped unclosed is freed after the second garbage collection
// at most (the first arms it) instead of the first, or when youngMax more small tensors have
// been made; the young list holds at most youngMax tensors of less than youngBytes each (4 MiB
// in all). Views (which share another tensor's storage, and may keep a large one alive), tensors
// over memory the library did not allocate, and large results get their finalizer at once, as
// every tensor does with -tags bcdebug.

const (
	// youngMax is the most tensors on the young list.
	youngMax = 64
	// youngBytes is the storage below which a new tensor starts on the young list.
	youngBytes = 64 << 10
)

var (
	youngMu sync.Mutex
	young   = make([]*Tensor, 0, youngMax)
)

// adopt gives the new tensor t its finalizer, or puts it on the young list.
func adopt(t *Tensor) {
	if debugGC || t.nbytes <= 0 || t.nbytes >= youngBytes {
		arm(t)
		return
	}
	youngMu.Lock()
	young = append(young, t)
	if len(young) == youngMax {
		armYoung()
	}
	youngMu.Unlock()
}

// arm sets t's finalizer. A Close racing with it may have read armed as false and not cleared
// the finalizer: it then runs on a closed tensor and finds nothing to free.
func arm(t *Tensor) {
	t.armed.Store(true)
	runtime.SetFinalizer(t, (*Tensor).free)
}

// armYoung arms the tensors on the young list that are still open and empties it. youngMu is
// held.
func armYoung() {
	for i, t := range young {
		if t.h.Load() != 0 {
			arm(t)
		}
		young[i] = nil
	}
	young = young[:0]
}

// flushYoung arms the young list: before a collection the package starts, so that it can find
// the dropped ones unreachable.
func flushYoung() {
	youngMu.Lock()
	armYoung()
	youngMu.Unlock()
}

// tick's finalizer runs after each garbage collection (one that found the tick unreachable):
// it arms the young list, so that the next collection can free the young tensors dropped since,
// and sets up the next tick. (Not a tiny object: those may share a block, and so a lifetime,
// with others.)
type tick struct{ _ [16]byte }

func init() {
	if !debugGC { // -tags bcdebug arms every tensor at once: the young list stays empty
		newTick()
	}
}

func newTick() {
	runtime.SetFinalizer(&tick{}, func(*tick) {
		flushYoung()
		newTick()
	})
}
