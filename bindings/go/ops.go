package broadcast

// #include "shims.h"
import "C"

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Op is a binary elementwise operation, with PyTorch's semantics (torch.<name>): integer
// arithmetic wraps; Float16 and BFloat16 compute in float32 and round each operation. Each has
// three forms: Apply (a new result), InPlace (into the first operand) and Out (into a caller's
// tensor). Its values are the library's own codes (binary_ops.go lists them).
type Op int32

// String is the operation's name in PyTorch and the library ("add", "floor_divide", ...), or
// "Op(n)" for a code this package does not know.
func (op Op) String() string {
	if op >= 0 && int(op) < len(opNames) {
		return opNames[op]
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}

// Apply returns a op b in a new tensor of the broadcast shape and PyTorch's result type.
func (op Op) Apply(a, b *Tensor) (*Tensor, error) {
	ha, hb, ok := open2(a, b)
	if !ok {
		return nil, errClosed()
	}
	if n := fewElems(a, b); n > 0 {
		// The result's tensor goes into its slot of the young ring before the call, which frees
		// the closed tensor it takes out of it (young.go): no cgo call of its own for that.
		t := &Tensor{nb: uint32(8 * n)} // under 4 KiB
		dead := uintptr(0)
		if debugGC {
			arm(t) // freed at its Close, as every tensor with -tags bcdebug
			opened(t.nbytes())
		} else {
			// swapIn, written out: it is not inlined, and a call costs a few ns.
			dead = reclaim((*Tensor)(atomic.SwapPointer(slotOf(t), unsafe.Pointer(t))))
		}
		r := C.gobc_binary_made(C.int32_t(op), ha, hb, C.uintptr_t(dead))
		runtime.KeepAlive(a) // keep's loop over its arguments cost Out a few percent
		runtime.KeepAlive(b)
		if dead != 0 {
			freed(dead)
		}
		if r.err != nil {
			t.discard()
			return nil, failed(r.err)
		}
		t.h = uintptr(r.out) // read by no one else before Close: see young.go
		return t, nil
	}
	r := C.gobc_binary(C.int32_t(op), ha, hb)
	keep(a, b)
	return owned(r)
}

// fewElems is, when a and b are small enough to tell without asking the library, a bound of the
// elements of their broadcast result below smallElems (the product of theirs: a broadcast
// dimension is the larger of two sizes, each at least 1, or 0), else 0. Only a count under
// fewBytes tells a tensor's elements: it is 8 bytes an element (unclosed.go), where a larger
// count may be the element size times 512 elements or more. A result counted from the bound,
// 8 bytes an element, counts no less than the library's own element count would (below
// smallElems elements) and is a small one (young.go). That spares the smallest results a second
// call into the library, for their element count, which cost them about a tenth of their time.
func fewElems(a, b *Tensor) int64 {
	if a == nil || b == nil {
		return 0
	}
	// Tensor.nb holds a count under fewBytes as it is. A view counts 0: the product is 0 then.
	if a.nb >= fewBytes || b.nb >= fewBytes {
		return 0
	}
	na, nb := int64(a.nb/8), int64(b.nb/8)
	if na*nb >= smallElems {
		return 0
	}
	return na * nb
}

// fewBytes is the least count that is not surely 8 bytes an element: 512 elements of one byte.
const fewBytes = smallElems

// InPlace computes target op= other into target's elements. It is allowed exactly when other
// broadcasts to target's shape and the result type can be cast to target's; when it fails,
// target is unchanged.
func (op Op) InPlace(target, other *Tensor) error {
	ht, ho, ok := open2(target, other)
	if !ok {
		return errClosed()
	}
	r := C.gobc_binary_inplace_err(C.int32_t(op), ht, ho)
	runtime.KeepAlive(target)
	runtime.KeepAlive(other)
	return failure(r)
}

// Out writes a op b into out (destination first, as in math/big), which must have exactly the
// broadcast shape and a type the result type can be cast to; when it fails, out is unchanged.
func (op Op) Out(out, a, b *Tensor) error {
	ha, hb, ok := open2(a, b)
	ho := out.handle()
	if !ok || (ho == 0 && out != nil) {
		return errClosed()
	}
	r := C.gobc_binary_out_err(C.int32_t(op), ha, hb, ho)
	runtime.KeepAlive(out)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	return failure(r)
}

// Where returns where(cond, a, b) in a new tensor: a's element where cond is true, else b's
// (torch.where). The three operands broadcast together; the result type promotes a and b only;
// cond is Bool, or Uint8 (accepted with PyTorch's deprecation warning).
func Where(cond, a, b *Tensor) (*Tensor, error) {
	ha, hb, ok := open2(a, b)
	hc := cond.handle()
	if !ok || (hc == 0 && cond != nil) {
		return nil, errClosed()
	}
	r := C.gobc_where(hc, ha, hb)
	keep(cond, a, b)
	return owned(r)
}

// WhereOut writes where(cond, a, b) into out (destination first, as Op.Out), which must have
// exactly the broadcast shape and the result type; when it fails, out is unchanged.
func WhereOut(out, cond, a, b *Tensor) error {
	hs, err := refs4(out, cond, a, b)
	if err != nil {
		return err
	}
	r := C.gobc_where_out(hs[1], hs[2], hs[3], hs[0])
	keep(out, cond, a, b)
	return check(r)
}
