package broadcast

// This file holds the exported trampoline alone: a cgo file with //export may only declare in
// its preamble (the C adapter that calls it is in shims.c).

// #include "shims.h"
import "C"

import (
	"fmt"
	"os"
	"sync/atomic"
)

// handler is the Go warning handler: package-level, since the library's handler is process-wide,
// so no Go pointer is ever given to C.
var handler atomic.Pointer[func(string)]

// SetWarningHandler sends every warning of the library to fn, called on the goroutine of the
// operation that warns, before that operation returns (fn may run on several goroutines at once).
// fn nil restores the default: each warning printed to standard error as "UserWarning: <text>".
// A panic in fn is recovered and printed to standard error: it cannot unwind through C.
func SetWarningHandler(fn func(message string)) {
	if fn == nil {
		C.gobc_set_warning_handler(0)
		handler.Store(nil)
		return
	}
	handler.Store(&fn)
	C.gobc_set_warning_handler(1)
}

//export goBcWarning
func goBcWarning(message *C.char) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(os.Stderr, "broadcast: the warning handler panicked: %v\n", p)
		}
	}()
	text := C.GoString(message)
	if fn := handler.Load(); fn != nil {
		(*fn)(text)
	}
}
