package broadcast

// #include "shims.h"
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// A finalizer costs a Go value more than its cgo calls do: runtime.SetFinalizer when a tensor is
// made and SetFinalizer(t, nil) when it is closed take as long together as one to two empty cgo
// calls (`make go-bench`, BenchmarkOwnerFinalizer); and a cgo call to free each result costs as
// much as the library's whole work on a small operation. Most small results are closed soon after
// they are made. So a new tensor with a small storage of its own (below youngBytes) gets no
// finalizer at first: it is young, held by the package so that it cannot be collected without
// one, and closing it only marks it closed (one compare-and-swap, no lock, no cgo call). Young
// tensors are held in one of two places:
//
//   - The young ring holds the results of small binary operations (fewElems, ops.go), the
//     package's cheapest allocating calls. Such a call puts its result's tensor into a slot of
//     the ring before its cgo call, by one atomic swap that also hands the tensor taken out to
//     exactly one party, the call: the shim frees that tensor's handle first if it is closed (as
//     a C loop frees a result before making the next: the library reuses the memory it just
//     released); if open, the call arms it (below). The call sets its tensor's handle after the
//     cgo call: the ring reads the handle of a tensor only once it is closed (Close follows the
//     call), and arms an open one without reading it (its finalizer cannot run before the call
//     returns it). If the call fails, the tensor is retired (discard): nothing is freed or
//     counted for it. A slot is chosen without shared state (a shared counter would cost every
//     call one more locked instruction): its group by the goroutine's stack address, so that
//     goroutines calling at once seldom take each other's tensors, and its place in the group by
//     the new tensor's address, which successive allocations advance by one Tensor. Two
//     goroutines may still pick one slot; the swap keeps that correct, and only makes the tensor
//     taken out armed sooner if open.
//   - The young list holds the other small results (those of calls whose storage count comes
//     back from the shim, after the call), under a mutex: when a new tensor finds it full
//     (youngMax tensors), it frees the closed ones' handles in one cgo call and arms the others.
//
// An armed tensor gets its finalizer, and is freed by Close or its finalizer as any other. Both
// places are swept (closed tensors freed, the others left) before LiveCount counts, and flushed
// (closed tensors freed, open ones armed, every place emptied) before each collection the package
// starts and after each garbage collection (a finalizer on a tick object tells when one has run).
//
// What it changes: a small tensor dropped unclosed is freed after the second garbage collection
// at most (the first arms it) instead of the first, or once it is taken out of its place; a small
// tensor's handle is freed a little after its Close: when its slot is next reused (about youngMax
// small results later from the same goroutine) or youngMax results later on the list, or at the
// next collection (the two hold at most youngSlots+youngMax tensors of less than youngBytes each,
// 2.5 MiB in all). Nothing else can tell: a closed tensor's handle is never used again. Views
// (which share another tensor's storage, and may keep a large one alive), tensors over memory the
// library did not allocate (WrapC, FromDLPack: their release callback runs on the thread of the
// Close that frees them), and large results get their finalizer at once and are freed by Close
// itself, as every tensor is with -tags bcdebug.

const (
	// youngMax is the most tensors on the young list, and the number of slots of a group of the
	// young ring: how many small results one goroutine makes before its slots come round again.
	youngMax = 8
	// youngGroups is the number of groups of the young ring.
	youngGroups = 4
	// youngSlots is the number of slots of the young ring.
	youngSlots = youngMax * youngGroups
	// youngBytes is the storage below which a new tensor starts young.
	youngBytes = 64 << 10
)

// A tensor's states (Tensor.st). stYoung goes to stYoungClosed (Close) or stArmed (armed);
// stArmed to stClosed (Close or the finalizer); the party that takes an stYoungClosed tensor out
// of its place frees its handle. stClosed also marks a tensor put into its slot by a call that
// then failed (discard). The open states come first: a tensor is closed when st >= stYoungClosed
// (one comparison, which keeps handle, and so open2, inlined).
const (
	stYoung int32 = iota
	stArmed
	stYoungClosed
	stClosed
)

var (
	// young is the young ring (*Tensor; nil: an empty slot), used only through sync/atomic's
	// pointer functions. (Not atomic.Pointer[Tensor]: its generic methods are calls around those
	// calls, which cost a small call a few percent.)
	young [youngSlots]unsafe.Pointer

	youngMu sync.Mutex
	// youngList is the young list (youngMu held).
	youngList = make([]*Tensor, 0, youngMax)
	// youngOpen is the storage of the tensors put on the young list since it was last armed,
	// not yet counted in openBytes (unclosed.go): counted when the list is armed, once for
	// youngMax tensors, instead of by an atomic addition for each.
	youngOpen int64
	// dead holds the handles freed in one cgo call (youngMu held); ndead of them.
	dead  [youngMax]C.uintptr_t
	ndead int
	// batchFrees counts the cgo calls that freed handles of dead (tests read it).
	batchFrees int
)

// slotOf is the slot of the young ring for the new tensor t.
func slotOf(t *Tensor) *unsafe.Pointer {
	var here byte
	// Goroutine stacks are 2 KiB apart at least; a frame's place in its stack changes little
	// from one call to the next.
	g := uintptr(unsafe.Pointer(&here)) >> 11 * 0x9E3779B97F4A7C15 >> (64 - 2) // youngGroups = 4
	i := uintptr(unsafe.Pointer(t)) / unsafe.Sizeof(Tensor{}) % youngMax
	return &young[g*youngMax+i]
}

// swapIn puts the new tensor t into its slot of the young ring, and returns the tensor it takes
// out (or nil).
func swapIn(t *Tensor) *Tensor {
	return (*Tensor)(atomic.SwapPointer(slotOf(t), unsafe.Pointer(t)))
}

// reclaim takes charge of old, just taken out of its slot (or nil): it returns the handle to
// free when old is closed, else 0; an open one it arms. (Inlined: a closed tensor, the common
// case, costs a load and a comparison.)
func reclaim(old *Tensor) uintptr {
	if old != nil && atomic.LoadInt32(&old.st) == stYoungClosed { // for good: nothing else leaves it
		return old.h
	}
	return reclaimOpen(old)
}

// reclaimOpen is reclaim of a tensor not seen closed (or nil).
func reclaimOpen(old *Tensor) uintptr {
	if old == nil {
		return 0
	}
	switch atomic.LoadInt32(&old.st) {
	case stYoung:
		if atomic.CompareAndSwapInt32(&old.st, stYoung, stArmed) {
			runtime.SetFinalizer(old, (*Tensor).free)
			opened(old.nbytes())
			return 0
		}
		// Closed since: stYoungClosed, for good.
		return old.h
	case stYoungClosed:
		return old.h
	}
	return 0 // stClosed: a failed call's tensor (discard), nothing to free
}

// discard retires t, put into its slot before the call that was to make its handle, when that
// call failed: nobody frees anything for it.
func (t *Tensor) discard() {
	for {
		switch atomic.LoadInt32(&t.st) {
		case stYoung:
			if atomic.CompareAndSwapInt32(&t.st, stYoung, stClosed) {
				return
			}
		case stArmed: // taken out of its slot meanwhile, open: its storage was counted
			if atomic.CompareAndSwapInt32(&t.st, stArmed, stClosed) {
				runtime.SetFinalizer(t, nil)
				closed(t.nbytes())
				return
			}
		default:
			return
		}
	}
}

// adopt gives the new tensor t its finalizer, or puts it on the young list, and counts its
// storage.
func adopt(t *Tensor) {
	if debugGC || t.nbytes() <= 0 || t.nbytes() >= youngBytes {
		arm(t)
		if t.nbytes() > 0 {
			opened(t.nbytes())
		}
		return
	}
	youngMu.Lock()
	if len(youngList) < youngMax {
		youngList = append(youngList, t)
		youngOpen += t.nbytes()
		youngMu.Unlock()
		return
	}
	// The list is full: it is armed before t joins it, not after, so that t (open, and most
	// likely closed soon) is not armed the moment it is made: that would cost it a finalizer set
	// and cleared, one result in youngMax.
	n := youngOpen
	armList()
	youngList = append(youngList, t)
	youngOpen = t.nbytes()
	youngMu.Unlock()
	opened(n) // outside the lock: it may collect, which arms the young list
}

// arm sets the finalizer of t, new or young. A Close racing with it may clear the finalizer
// before it is set: it then runs on a closed tensor and finds nothing to free.
func arm(t *Tensor) {
	atomic.StoreInt32(&t.st, stArmed)
	runtime.SetFinalizer(t, (*Tensor).free)
}

// armList frees the young list's closed tensors in one cgo call, arms those still open, empties
// the list and clears youngOpen (the caller counts it). youngMu is held.
func armList() {
	youngOpen = 0
	bytes := int64(0)
	for _, t := range youngList {
		// A closed one is seen by a plain load (a compare-and-swap that fails is a locked
		// instruction all the same, a tenth of a small call's cost).
		if atomic.LoadInt32(&t.st) == stYoung && atomic.CompareAndSwapInt32(&t.st, stYoung, stArmed) {
			runtime.SetFinalizer(t, (*Tensor).free)
		} else { // stYoungClosed, for good: nothing else leaves it
			addDead(t.h)
			bytes += t.nbytes()
		}
	}
	freeDead()
	closed(bytes)
	for i := range youngList {
		youngList[i] = nil
	}
	youngList = youngList[:0]
}

// addDead adds h to the handles freed together, and frees them when there are youngMax. youngMu
// is held.
func addDead(h uintptr) {
	dead[ndead] = C.uintptr_t(h)
	ndead++
	if ndead == youngMax {
		freeDead()
	}
}

// freeDead frees the handles in dead in one cgo call. youngMu is held.
func freeDead() {
	if ndead == 0 {
		return
	}
	C.gobc_free_n(&dead[0], C.size_t(ndead))
	batchFrees++
	for _, h := range dead[:ndead] {
		freed(uintptr(h))
	}
	ndead = 0
}

// freed tells the hook, if any, of the handle h, freed by a call of the young tensors'.
func freed(h uintptr) {
	if freeHook.Load() != nil {
		callHook(h)
	}
}

func callHook(h uintptr) {
	if hook := freeHook.Load(); hook != nil {
		(*hook)(h)
	}
}

// sweepYoung frees the handles of the young tensors closed, and leaves the open ones young.
func sweepYoung() {
	youngMu.Lock()
	n, kept, bytes := 0, 0, int64(0)
	for _, t := range youngList {
		if atomic.LoadInt32(&t.st) == stYoungClosed { // for good: nothing else leaves it
			addDead(t.h)
			n++
			bytes += t.nbytes()
		} else {
			youngList[kept] = t
			kept++
		}
	}
	for i := kept; i < len(youngList); i++ {
		youngList[i] = nil
	}
	youngList = youngList[:kept]
	youngOpen -= bytes
	for i := range young {
		s := &young[i]
		if t := (*Tensor)(atomic.LoadPointer(s)); t != nil &&
			atomic.LoadInt32(&t.st) == stYoungClosed &&
			atomic.CompareAndSwapPointer(s, unsafe.Pointer(t), nil) {
			addDead(t.h)
		}
	}
	freeDead()
	youngMu.Unlock()
}

// flushYoung frees the young tensors closed and arms the others, emptying the young list and
// ring: before a collection the package starts, so that it can find the dropped ones unreachable,
// and after each collection.
func flushYoung() {
	youngMu.Lock()
	n := youngOpen
	armList()
	for i := range young {
		t := (*Tensor)(atomic.SwapPointer(&young[i], nil))
		if t == nil {
			continue
		}
		if atomic.LoadInt32(&t.st) == stYoung && atomic.CompareAndSwapInt32(&t.st, stYoung, stArmed) {
			runtime.SetFinalizer(t, (*Tensor).free)
			n += t.nbytes()
		} else if atomic.LoadInt32(&t.st) == stYoungClosed {
			addDead(t.h)
		}
	}
	freeDead()
	youngMu.Unlock()
	openBytes.Add(n) // counted without a check of the bound: collect calls this
}

// tick's finalizer runs after each garbage collection (one that found the tick unreachable):
// it arms the young tensors, so that the next collection can free those dropped since, and sets
// up the next tick. (Not a tiny object: those may share a block, and so a lifetime, with others.)
type tick struct{ _ [16]byte }

func init() {
	if !debugGC { // -tags bcdebug arms every tensor at once: nothing is young
		newTick()
	}
}

func newTick() {
	runtime.SetFinalizer(&tick{}, func(*tick) {
		flushYoung()
		newTick()
	})
}
