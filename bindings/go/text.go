package broadcast

// #include <stdlib.h>
// #include "shims.h"
import "C"

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// stringMax is the longest text String writes: a broadcast view can print far more elements
// than it stores (16 dimensions of 4 over one element are 2^32 of them, about 44 GB of text).
const stringMax = 64 << 20

// Text returns t as PyTorch's str(tensor) writes it with its default print options, such as
// "tensor([[1, 2],\n        [3, 4]], dtype=torch.int32)": floats with 4 decimals, or in
// scientific notation when their magnitudes call for it; rows wrapped at 80 columns; over 1000
// elements only 3 at each edge of every dimension, around "...". A tensor whose text would need
// more than 2^20 elements read is refused (ErrOverflow); the text of a large broadcast view
// can still be very long, as every dimension of 6 or less is shown whole.
func (t *Tensor) Text() (string, error) { return t.text(math.MaxUint64) }

// text is Text, refused with ErrOverflow when the text is longer than max bytes.
func (t *Tensor) text(max uint64) (string, error) {
	h, err := t.ref()
	if err != nil {
		return "", err
	}
	var buf *C.char
	r := C.gobc_format(h, C.size_t(max), &buf)
	keep(t)
	if err := check(r); err != nil {
		return "", err
	}
	if buf == nil {
		e := goError(ErrOverflow, KindOverflow, "the text of the tensor is "+
			strconv.FormatInt(int64(r.val), 10)+" bytes long, more than the "+
			strconv.Itoa(stringMax)+" String writes")
		e.SizeA = int(r.val)
		return "", e
	}
	defer C.free(unsafe.Pointer(buf))
	return C.GoStringN(buf, C.int(r.val)), nil
}

// String returns t as Text does, so that fmt's %v and %s print PyTorch's text. A closed tensor
// is "<closed tensor>", a nil one "<nil>"; a tensor Text refuses, or whose text is longer than
// 64 MiB, is described instead, as "<float32 tensor of shape (4, 4): " and the reason, then ">".
func (t *Tensor) String() string {
	if t == nil {
		return "<nil>"
	}
	s, err := t.text(stringMax)
	if err == nil {
		return s
	}
	if e, ok := err.(*Error); ok && e.Status == ErrInvalidHandle {
		return "<closed tensor>"
	}
	shape := t.Shape()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	return "<" + t.DType().String() + " tensor of shape (" + strings.Join(dims, ", ") + "): " +
		err.Error() + ">"
}

// Format makes fmt print a tensor through the library's text (String): %v and %s print it, %q
// quotes it, %x and %X print it in hex, each with fmt's width, precision and flags as for a
// string; %#v prints GoString (fmt would otherwise show the struct's handle, a number of no use).
// Another verb prints as fmt prints a wrong one: %!d(*broadcast.Tensor=tensor([1, 2])).
func (t *Tensor) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, t.GoString())
	case verb == 'v' || verb == 's' || verb == 'q' || verb == 'x' || verb == 'X':
		if verb == 'v' {
			verb = 's'
		}
		directive := "%"
		for _, flag := range "-+# 0" {
			if f.Flag(int(flag)) {
				directive += string(flag)
			}
		}
		if w, ok := f.Width(); ok {
			directive += strconv.Itoa(w)
		}
		if p, ok := f.Precision(); ok {
			directive += "." + strconv.Itoa(p)
		}
		fmt.Fprintf(f, directive+string(verb), t.String())
	default:
		fmt.Fprintf(f, "%%!%c(*broadcast.Tensor=%s)", verb, t.String())
	}
}

// GoString describes t by its type and shape, as &broadcast.Tensor{DType: float32, Shape: [2 3]}
// ("&broadcast.Tensor{closed}" once closed, "(*broadcast.Tensor)(nil)" for nil): fmt's %#v.
func (t *Tensor) GoString() string {
	if t == nil {
		return "(*broadcast.Tensor)(nil)"
	}
	d, shape := t.DType(), t.Shape()
	if d < 0 || shape == nil {
		return "&broadcast.Tensor{closed}"
	}
	return fmt.Sprintf("&broadcast.Tensor{DType: %s, Shape: %v}", d, shape)
}
