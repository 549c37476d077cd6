package broadcast

// #include "shims.h"
import "C"

import "sync"

// Freeing a handle takes a cgo call of its own, which costs a small result about as much as the
// C work of the call that made it: an allocating addition of four elements and its Close were two
// cgo calls for one from C (`make go-bench`). So Close queues the handle of a small result that
// owns its storage (below youngBytes, as for the young list), and the package frees the queue in
// one cgo call when it holds freeBatch handles, and before LiveCount reads the library's count.
//
// What it changes: nothing in Go can use a closed handle (Close swaps it to 0 first), and the
// library releases the storage of such a small result up to freeBatch closes later, 1 MiB at most
// (counted as closed at once). Views (which may hold a large storage), tensors over memory the
// library did not allocate (whose release callback runs when they are freed) and large results
// are freed at once, as every tensor is with -tags bcdebug.

// freeBatch is the most handles waiting to be freed.
const freeBatch = 16

var (
	freeMu  sync.Mutex
	freeQ   [freeBatch]C.uintptr_t // a global array of plain numbers, which C may be given
	freeLen int
)

// release frees the handle h, whose own storage takes nbytes (0 for a view or memory the library
// did not allocate), now or with the next batch.
func release(h uintptr, nbytes int64) {
	if debugGC || nbytes <= 0 || nbytes >= youngBytes {
		C.gobc_free(C.uintptr_t(h))
		return
	}
	freeMu.Lock()
	freeQ[freeLen] = C.uintptr_t(h)
	freeLen++
	if freeLen == freeBatch {
		flushFreesLocked()
	}
	freeMu.Unlock()
}

// flushFreesLocked frees the queued handles; freeMu is held.
func flushFreesLocked() {
	if freeLen > 0 {
		C.gobc_free_n(&freeQ[0], C.size_t(freeLen))
		freeLen = 0
	}
}

// flushFrees frees the queued handles now.
func flushFrees() {
	freeMu.Lock()
	flushFreesLocked()
	freeMu.Unlock()
}
