package broadcast

// #include "broadcast.h"
import "C"

import "math"

// DType is an element type. Its values are the library's own codes.
type DType int32

// String is the library's name of the type ("float32", ...; "unknown" for other codes).
func (d DType) String() string { return C.GoString(C.bc_dtype_name(C.int32_t(d))) }

// Size is the size of one element in bytes (0 for an unknown code).
func (d DType) Size() int { return int(C.bc_dtype_size(C.int32_t(d))) }

// Float16Bits is an IEEE binary16 value held as its bits: the Go element type of Float16 tensors.
type Float16Bits uint16

// BFloat16Bits is a bfloat16 value held as its bits: the Go element type of BFloat16 tensors.
type BFloat16Bits uint16

// Float32 widens h exactly.
func (h Float16Bits) Float32() float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
	default: // zero or subnormal: frac * 2^-24
		v := float32(frac) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	}
}

// Float32 widens b exactly.
func (b BFloat16Bits) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// Elem is the set of Go element types, one per dtype: bool, uint8, int8, int16, int32, int64,
// Float16Bits (float16), BFloat16Bits (bfloat16), float32, float64. To build a float16 or bfloat16 tensor from
// float32 values, make a Float32 tensor and convert it with ToDType (rounding to nearest even).
type Elem interface {
	bool | uint8 | int8 | int16 | int32 | int64 | Float16Bits | BFloat16Bits | float32 | float64
}

// DTypeOf is the dtype whose elements are Go values of type T.
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case bool:
		return Bool
	case uint8:
		return Uint8
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case Float16Bits:
		return Float16
	case BFloat16Bits:
		return BFloat16
	case float32:
		return Float32
	default:
		return Float64
	}
}
