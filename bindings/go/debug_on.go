//go:build bcdebug

package broadcast

// With -tags bcdebug every handle read runs a garbage collection, so that a tensor not kept
// alive across its C call (a missing runtime.KeepAlive) is finalized early and shows up.
const debugGC = true
