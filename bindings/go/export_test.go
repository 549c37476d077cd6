package broadcast

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
func StorageBytes(t *Tensor) int64 { return t.nbytes }

// Armed reports whether t's finalizer has been set (young.go).
func Armed(t *Tensor) bool { return t.st.Load() == stArmed }

// YoungLen is the number of tensors on the young list.
func YoungLen() int {
	youngMu.Lock()
	defer youngMu.Unlock()
	return len(young)
}

// YoungMax and YoungBytes are the young list's bounds; DebugGC is true with -tags bcdebug.
const (
	YoungMax   = youngMax
	YoungBytes = youngBytes
	DebugGC    = debugGC
)

// FlushYoung frees the young list's closed tensors and arms the others, leaving it empty.
func FlushYoung() { flushYoung() }

// OpenBytes is the storage counted for the open tensors (unclosed.go), the young list's not yet
// added to the count included.
func OpenBytes() int64 {
	youngMu.Lock()
	defer youngMu.Unlock()
	return openBytes.Load() + youngOpen
}
