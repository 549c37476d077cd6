//go:build !bcdebug

package broadcast

const debugGC = false
