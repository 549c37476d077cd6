package broadcast

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The garbage collector paces itself by Go's heap, where a Tensor takes a few bytes; it does not
// see the storage behind the handle. A program that drops tensors without closing them would
// hold that storage until a collection that Go's own allocations may not bring for a long time.
// So the package counts the storage bytes of its open tensors, and runs a collection itself
// when they pass half again what the previous collection kept (and at least minHeadroom more):
// the finalizers that collection queues free what was dropped. The bound grows with the live
// working set, as Go's own heap goal does, so a program holding many tensors is not collected
// over and over.
//
// Counted are the bytes of storage the library allocated for a result: numel times the element
// size (8 bytes an element below smallElems elements, see storage_bytes in shims.c); for a binary
// operation's result on two operands of a few elements, 8 bytes times the product of their
// element counts, a bound known without asking the library for the result's (fewElems in ops.go).
// Either way, a tensor counting fewer than smallElems bytes has at most an eighth that many
// elements (from smallElems elements up, a count is at least that many bytes). A view shares its
// tensor's storage and counts nothing; memory given by WrapC or FromDLPack is its owner's to
// free, and is not counted either. The young list's tensors (young.go) are counted youngMax at a
// time, when the list is armed, and the young ring's when they are armed (those closed while in
// the ring are never counted): the count leaves out at most (youngMax+youngSlots)*youngBytes
// (2.5 MiB), and a small result costs no atomic addition.

// smallElems is the element count below which a result counts 8 bytes an element (storage_bytes
// in shims.c).
const smallElems = 512

// minHeadroom is the least growth of the count between two collections the package starts.
const minHeadroom = 16 << 20

var (
	// openBytes is the storage bytes of the open tensors.
	openBytes atomic.Int64
	// keptBytes is the lowest openBytes since the last collection the package started: what
	// that collection (once its finalizers ran) and the Close calls since left open.
	keptBytes atomic.Int64
	// collectAbove is the openBytes above which the package starts a collection.
	collectAbove atomic.Int64
	// finalizing is set once the finalizers queued by the last collection have begun to run:
	// until then another collection could find nothing new to free.
	finalizing atomic.Bool
	// collections counts the collections the package started.
	collections atomic.Uint64
	collectMu   sync.Mutex
)

func init() {
	collectAbove.Store(minHeadroom)
	finalizing.Store(true)
}

// opened counts the storage of a new tensor, and collects when the count passes the bound.
func opened(n int64) {
	if openBytes.Add(n) > collectAbove.Load() {
		collect()
	}
}

// closed uncounts the storage of a tensor just freed.
func closed(n int64) {
	v := openBytes.Add(-n)
	for low := keptBytes.Load(); v < low; low = keptBytes.Load() {
		if keptBytes.CompareAndSwap(low, v) {
			return
		}
	}
}

// sentinel is dropped just before a collection: its finalizer runs with the tensors' that the
// collection found unreachable. (Not a tiny object: those may share a block, and so a lifetime,
// with others.)
type sentinel struct{ _ [16]byte }

// collect runs a collection unless another goroutine just did, or the finalizers of the last one
// have not begun; first it sets the next bound from what the last one kept.
func collect() {
	seen := collections.Load()
	collectMu.Lock()
	defer collectMu.Unlock()
	if collections.Load() != seen || !finalizing.Load() {
		return
	}
	kept := keptBytes.Load()
	headroom := kept / 2
	if headroom < minHeadroom {
		headroom = minHeadroom
	}
	collectAbove.Store(kept + headroom)
	keptBytes.Store(openBytes.Load())
	finalizing.Store(false)
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { finalizing.Store(true) })
	flushYoung() // the young tensors dropped unclosed get their finalizers, to be found now
	runtime.GC()
	collections.Add(1)
}
