package broadcast

// #include "shims.h"
import "C"

import (
	"runtime"
	"sync"
)

// A finalizer costs a Go value more than its cgo calls do: runtime.SetFinalizer when a tensor is
// made and SetFinalizer(t, nil) when it is closed take as long together as one to two empty cgo
// calls (`make go-bench`, BenchmarkOwnerFinalizer); and a cgo call to free each result costs as
// much as the library's whole work on a small operation. Most small results are closed soon after
// they are made. So a new tensor with a small storage of its own (below youngBytes) gets no
// finalizer at first: it goes on the young list, which holds it, so that it cannot be collected
// without one. Closing a young tensor only marks it closed (one compare-and-swap, no lock, no cgo
// call); the list frees the handles of its closed tensors together, in one cgo call, when a new
// tensor finds it full (youngMax tensors), before LiveCount counts, before each collection the package starts and
// after each garbage collection (a finalizer on a tick object tells when one has run). At the
// same times but the second, it arms its tensors still open: each gets its finalizer, and the
// list lets go of them; an armed tensor is freed by Close or its finalizer as any other.
//
// What it changes: a small tensor dropped unclosed is freed after the second garbage collection
// at most (the first arms it) instead of the first, or once youngMax more small tensors have been
// made; a small tensor's handle is freed up to youngMax results after its Close (the list holds
// at most youngMax tensors of less than youngBytes each, 512 KiB in all). Nothing else can tell: a
// closed tensor's handle is never used again. Views (which share another tensor's storage, and
// may keep a large one alive), tensors over memory the library did not allocate (WrapC,
// FromDLPack: their release callback runs on the thread of the Close that frees them), and large
// results get their finalizer at once and are freed by Close itself, as every tensor is with
// -tags bcdebug.

const (
	// youngMax is the most tensors on the young list.
	youngMax = 8
	// youngBytes is the storage below which a new tensor starts on the young list.
	youngBytes = 64 << 10
)

// A tensor's states (Tensor.st). stYoung goes to stYoungClosed (Close) or stArmed (the list arms
// it); stArmed to stClosed (Close or the finalizer); the young list frees the handles of the
// stYoungClosed ones. The open states come first: a tensor is closed when st >= stYoungClosed
// (one comparison, which keeps handle, and so open2, inlined).
const (
	stYoung int32 = iota
	stArmed
	stYoungClosed
	stClosed
)

var (
	youngMu sync.Mutex
	young   = make([]*Tensor, 0, youngMax)
	// youngOpen is the storage of the tensors put on the young list since it was last armed,
	// not yet counted in openBytes (unclosed.go): counted when the list is armed, once for
	// youngMax tensors, instead of by an atomic addition for each.
	youngOpen int64
	// dead holds the handles the young list frees in one cgo call (youngMu held).
	dead [youngMax]C.uintptr_t
)

// adopt gives the new tensor t its finalizer, or puts it on the young list, and counts its
// storage.
func adopt(t *Tensor) {
	if debugGC || t.nbytes <= 0 || t.nbytes >= youngBytes {
		arm(t)
		if t.nbytes > 0 {
			opened(t.nbytes)
		}
		return
	}
	youngMu.Lock()
	if len(young) < youngMax {
		young = append(young, t)
		youngOpen += t.nbytes
		youngMu.Unlock()
		return
	}
	// The list is full: it is armed before t joins it, not after, so that t (open, and most
	// likely closed soon) is not armed the moment it is made: that would cost it a finalizer set
	// and cleared, one result in youngMax.
	n := youngOpen
	armYoung()
	young = append(young, t)
	youngOpen = t.nbytes
	youngMu.Unlock()
	opened(n) // outside the lock: it may collect, which arms the young list
}

// arm sets the finalizer of t, new or young. A Close racing with it may clear the finalizer
// before it is set: it then runs on a closed tensor and finds nothing to free.
func arm(t *Tensor) {
	t.st.Store(stArmed)
	runtime.SetFinalizer(t, (*Tensor).free)
}

// armYoung frees the young list's closed tensors in one cgo call, arms those still open, empties
// the list and clears youngOpen (the caller counts it). youngMu is held.
func armYoung() {
	youngOpen = 0
	n, bytes := 0, int64(0)
	for _, t := range young {
		// A closed one is seen by a plain load (a compare-and-swap that fails is a locked
		// instruction all the same, a tenth of a small call's cost).
		if t.st.Load() == stYoung && t.st.CompareAndSwap(stYoung, stArmed) {
			runtime.SetFinalizer(t, (*Tensor).free)
		} else { // stYoungClosed, for good: nothing else leaves it
			dead[n] = C.uintptr_t(t.h)
			n++
			bytes += t.nbytes
		}
	}
	freeDead(n, bytes)
	for i := range young {
		young[i] = nil
	}
	young = young[:0]
}

// sweepYoung frees the handles of the young list's closed tensors, takes them off the list, and
// leaves the others young.
func sweepYoung() {
	youngMu.Lock()
	n, kept, bytes := 0, 0, int64(0)
	for _, t := range young {
		if t.st.Load() == stYoungClosed { // for good: nothing else leaves it
			dead[n] = C.uintptr_t(t.h)
			n++
			bytes += t.nbytes
		} else {
			young[kept] = t
			kept++
		}
	}
	freeDead(n, bytes)
	for i := kept; i < len(young); i++ {
		young[i] = nil
	}
	young = young[:kept]
	youngMu.Unlock()
}

// freeDead frees the first n handles in dead in one cgo call, and uncounts their storage, bytes.
// youngMu is held.
func freeDead(n int, bytes int64) {
	if n == 0 {
		return
	}
	C.gobc_free_n(&dead[0], C.size_t(n))
	closed(bytes)
	if hook := freeHook.Load(); hook != nil {
		for _, h := range dead[:n] {
			(*hook)(uintptr(h))
		}
	}
}

// flushYoung frees the young list's closed tensors and arms the others: before a collection the
// package starts, so that it can find the dropped ones unreachable, and after each collection.
func flushYoung() {
	youngMu.Lock()
	n := youngOpen
	armYoung()
	youngMu.Unlock()
	openBytes.Add(n) // counted without a check of the bound: collect calls this
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
