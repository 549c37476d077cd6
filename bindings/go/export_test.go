package broadcast

import (
	"sync/atomic"
	"unsafe"
)

// SetFreeHook makes f see every handle the package frees (nil removes it): tests count frees.
func SetFreeHook(f func(h uintptr)) {
	if f == nil {
		freeHook.Store(nil)
		return
	}
	freeHook.Store(&f)
}

// Handle is t's handle, as a number (0 once closed).
func Handle(t *Tensor) uintptr { return uintptr(t.handle()) }

// StorageBytes is the storage t's handle counts toward the package's collections (0 for a view).
func StorageBytes(t *Tensor) int64 { return t.nbytes() }

// PackedBytes is the storage count n as a Tensor holds it (packBytes).
func PackedBytes(n int64) int64 { return (&Tensor{nb: packBytes(n)}).nbytes() }

// TensorSize is the size of a Tensor.
const TensorSize = unsafe.Sizeof(Tensor{})

// Armed reports whether t's finalizer has been set (young.go).
func Armed(t *Tensor) bool { return atomic.LoadInt32(&t.st) == stArmed }

// YoungLen is the number of young tensors: on the young list and in the young ring.
func YoungLen() int {
	youngMu.Lock()
	n := len(youngList)
	youngMu.Unlock()
	for i := range young {
		if atomic.LoadPointer(&young[i]) != nil {
			n++
		}
	}
	return n
}

// YoungMax, YoungSlots and YoungBytes are the young list's and ring's bounds; DebugGC is true with -tags bcdebug.
const (
	YoungMax   = youngMax
	YoungSlots = youngSlots
	YoungBytes = youngBytes
	DebugGC    = debugGC
)

// FlushYoung frees the young tensors closed and arms the others, emptying the list and ring.
func FlushYoung() { flushYoung() }

// OpenBytes is the storage counted for the open tensors (unclosed.go), the young tensors' not
// yet counted included.
func OpenBytes() int64 {
	youngMu.Lock()
	n := openBytes.Load() + youngOpen
	youngMu.Unlock()
	for i := range young {
		if t := (*Tensor)(atomic.LoadPointer(&young[i])); t != nil && atomic.LoadInt32(&t.st) == stYoung {
			n += t.nbytes()
		}
	}
	return n
}

// LiveHandles is the library's live-handle count, without LiveCount's sweep of the young ring.
func LiveHandles() int { return liveHandles() }

// BatchFrees is the number of cgo calls so far that freed young tensors' handles together.
func BatchFrees() int {
	youngMu.Lock()
	defer youngMu.Unlock()
	return batchFrees
}

// FailedCallTakenOut plays a small binary call that fails after a flush of the young ring took
// its tensor out of its slot, open, and armed it: it returns whether the flush armed the
// tensor, and the storage counted for open tensors after the failure less before the flush (the
// call counts nothing in the end).
func FailedCallTakenOut() (armed bool, counted int64) {
	t := &Tensor{nb: 64}
	if h := reclaim(swapIn(t)); h != 0 {
		youngMu.Lock()
		addDead(h)
		freeDead()
		youngMu.Unlock()
	}
	flushYoung() // arms t, made open
	before := openBytes.Load() - t.nbytes()
	armed = atomic.LoadInt32(&t.st) == stArmed
	t.discard()
	return armed, openBytes.Load() - before
}
