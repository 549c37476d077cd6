package broadcast

// #include "broadcast.h"
import "C"

import "strconv"

// Status is the library's status code of a failed call. Every Status except OK is also an
// error value, the sentinel of its kind of failure: errors.Is(err, broadcast.ErrShape) is true
// for every *Error whose Status is ErrShape.
type Status int32

// The statuses. The values are the library's own codes (they never change).
const (
	// OK is success; no *Error has it.
	OK Status = 0
	// ErrNullArg: an argument that is required was missing (a nil tensor).
	ErrNullArg Status = 1
	// ErrInvalidArg: an argument is outside its domain (an unknown dtype or operation, a negative
	// size, a dimension out of range, a view outside its storage, data of the wrong length, ...).
	ErrInvalidArg Status = 2
	// ErrShape: shapes that do not broadcast, an invalid expand or view, or an in-place operation
	// that would change the shape of its target.
	ErrShape Status = 3
	// ErrDType: a result type that cannot be cast to the written-to tensor's, an operation not
	// defined for the element types (bool subtraction, bitwise operations on floats, ...), or
	// elements read as a Go type that is not the tensor's.
	ErrDType Status = 4
	// ErrOverlap: a written-to tensor whose elements share memory, or that partly overlaps an
	// input.
	ErrOverlap Status = 5
	// ErrOverflow: a count of elements or bytes too large to represent, or a tensor too large to
	// format as text.
	ErrOverflow Status = 6
	// ErrAlloc: memory could not be allocated, or every handle is in use.
	ErrAlloc Status = 7
	// ErrBufferTooSmall: a destination slice is shorter than what must be written.
	ErrBufferTooSmall Status = 8
	// ErrInternal: the library caught an internal error (a panic); it remains usable.
	ErrInternal Status = 9
	// ErrInvalidHandle: a tensor that is no longer live (closed).
	ErrInvalidHandle Status = 10
	// ErrValue: types and shapes are fine but the values are refused: an integer division,
	// remainder or fmod by zero.
	ErrValue Status = 11
	// ErrReadOnly: a write to a tensor that must not be written (memory shared read-only).
	ErrReadOnly Status = 12
)

// Error is the library's description of the status, such as
// "BC_ERR_SHAPE: shapes are not compatible".
func (s Status) Error() string { return C.GoString(C.bc_status_str(C.int32_t(s))) }

// ErrorKind says exactly what went wrong, for callers that react to a failure rather than print
// it. Which fields of an Error apply depends on the kind, as each constant says; the others are
// -1 (numbers) or nil (shapes).
type ErrorKind int32

// The error kinds. The values are the library's own codes.
const (
	// KindNone: no details beyond the status.
	KindNone ErrorKind = 0
	// KindNotBroadcastable: two shapes do not broadcast. Dim (of the result, from the left),
	// SizeA and SizeB are the conflict; ShapeA and ShapeB the two shapes.
	KindNotBroadcastable ErrorKind = 1
	// KindNaryNotBroadcastable: several shapes do not broadcast. Arg is the index of the shape,
	// Dim its dimension (negative, from the right), SizeA its size; ShapeA is that shape and
	// ShapeB the common shape so far.
	KindNaryNotBroadcastable ErrorKind = 2
	// KindInPlaceMismatch: in place, the other operand does not expand to the target. Dim, SizeA
	// (the target's size) and SizeB (the other's); ShapeA the target's shape, ShapeB the other's.
	KindInPlaceMismatch ErrorKind = 3
	// KindOutputShape: the written-to tensor's shape (ShapeA) is not the broadcast shape
	// (ShapeB).
	KindOutputShape ErrorKind = 4
	// KindExpandMismatch: Expand to a size (SizeA) that does not match the existing size (SizeB)
	// at Dim; ShapeA the tensor's shape, ShapeB the sizes asked for.
	KindExpandMismatch ErrorKind = 5
	// KindExpandLeading: Expand with -1 in a new leading dimension Dim; ShapeA the tensor's shape,
	// ShapeB the sizes asked for.
	KindExpandLeading ErrorKind = 6
	// KindExpandTooFewSizes: Expand to fewer sizes (SizeA) than the tensor has dimensions
	// (SizeB).
	KindExpandTooFewSizes ErrorKind = 7
	// KindExpandNegative: Expand to a negative size SizeA at Dim.
	KindExpandNegative ErrorKind = 8
	// KindCastRefused: the result type (DTypeA) cannot be cast to the written-to type (DTypeB).
	KindCastRefused ErrorKind = 9
	// KindBoolSubtraction: a subtraction with bool operands.
	KindBoolSubtraction ErrorKind = 10
	// KindInternalOverlap: two elements of the written-to tensor share a memory location.
	KindInternalOverlap ErrorKind = 11
	// KindPartialOverlap: the written-to tensor partly overlaps an input.
	KindPartialOverlap ErrorKind = 12
	// KindOverflow: an element or byte count does not fit (the message names it). For a tensor
	// too large to format as text, SizeA is the number of elements the formatter would read.
	KindOverflow ErrorKind = 13
	// KindAlloc: an allocation failed. SizeA is the bytes requested, or -1 when every handle was
	// in use.
	KindAlloc ErrorKind = 14
	// KindInvalidArgument: an argument outside its domain (the message says which and why).
	KindInvalidArgument ErrorKind = 15
	// KindBufferTooSmall: SizeA bytes were needed and SizeB given.
	KindBufferTooSmall ErrorKind = 16
	// KindNullArg: a required argument was missing (a nil tensor; the message names it).
	KindNullArg ErrorKind = 17
	// KindInvalidHandle: a tensor that is not live (closed).
	KindInvalidHandle ErrorKind = 18
	// KindInternal: the library caught an internal error (a panic).
	KindInternal ErrorKind = 19
	// KindNotImplemented: the operation has no kernel for the type it computes in (DTypeA).
	KindNotImplemented ErrorKind = 30
	// KindZeroDivision: an integer division, remainder or fmod by zero (status ErrValue).
	KindZeroDivision ErrorKind = 31
	// KindWhereCondition: Where's condition has a type (DTypeA) that is neither Bool nor Uint8.
	KindWhereCondition ErrorKind = 32
	// KindOutDType: the written-to tensor's type (DTypeB) is not the result type (DTypeA) where
	// it must be.
	KindOutDType ErrorKind = 33
	// KindDimOutOfRange: a dimension out of range: Dim as given, SizeA the tensor's number of
	// dimensions.
	KindDimOutOfRange ErrorKind = 50
	// KindDimRepeated: a reduction names dimension Dim (counted from 0) twice.
	KindDimRepeated ErrorKind = 51
	// KindEmptyReduction: Amax or Amin with nothing to reduce: Dim is the empty dimension, or -1
	// when no dimension was given and the tensor has no elements.
	KindEmptyReduction ErrorKind = 52
	// KindReduceDType: a reduction not defined for the input's type (DTypeA), such as the mean of
	// integers.
	KindReduceDType ErrorKind = 53
	// KindNotExpandable: SumToSize to a shape (ShapeA) the tensor's shape (ShapeB) does not
	// expand from.
	KindNotExpandable ErrorKind = 54
	// KindReadOnly: a write to a tensor that must not be written (status ErrReadOnly).
	KindReadOnly ErrorKind = 60
	// KindViewSize: View or Reshape to sizes (ShapeB, with any -1) that do not hold the tensor's
	// SizeA elements.
	KindViewSize ErrorKind = 61
	// KindViewAmbiguous: View or Reshape of an empty tensor where -1 could be any size; ShapeB
	// the sizes asked for.
	KindViewAmbiguous ErrorKind = 62
	// KindViewStrides: View of a tensor whose strides do not allow the new shape without a copy
	// (use Reshape); ShapeA the tensor's shape, ShapeB the shape asked for.
	KindViewStrides ErrorKind = 63
	// KindReadOnlyLegacyExport: a tensor that must not be written given to the unversioned
	// DLPack export, which cannot mark it read-only (status ErrReadOnly).
	KindReadOnlyLegacyExport ErrorKind = 64
	// KindNegativePower: an integer or bool tensor to a negative integer power given as a number.
	KindNegativePower ErrorKind = 70
	// KindNumberOverflow: a number Pow reads in the type it computes in (DTypeA) does not fit it.
	KindNumberOverflow ErrorKind = 71
)

var kindNames = map[ErrorKind]string{
	KindNone: "none", KindNotBroadcastable: "not_broadcastable",
	KindNaryNotBroadcastable: "nary_not_broadcastable", KindInPlaceMismatch: "inplace_mismatch",
	KindOutputShape: "output_shape", KindExpandMismatch: "expand_mismatch",
	KindExpandLeading: "expand_leading", KindExpandTooFewSizes: "expand_too_few_sizes",
	KindExpandNegative: "expand_negative", KindCastRefused: "cast_refused",
	KindBoolSubtraction: "bool_subtraction", KindInternalOverlap: "internal_overlap",
	KindPartialOverlap: "partial_overlap", KindOverflow: "overflow", KindAlloc: "alloc",
	KindInvalidArgument: "invalid_argument", KindBufferTooSmall: "buffer_too_small",
	KindNullArg: "null_arg", KindInvalidHandle: "invalid_handle", KindInternal: "internal",
	KindNotImplemented: "not_implemented", KindZeroDivision: "zero_division",
	KindWhereCondition: "where_condition", KindOutDType: "out_dtype",
	KindDimOutOfRange: "dim_out_of_range", KindDimRepeated: "dim_repeated",
	KindEmptyReduction: "empty_reduction", KindReduceDType: "reduce_dtype",
	KindNotExpandable: "not_expandable", KindReadOnly: "read_only", KindViewSize: "view_size",
	KindViewAmbiguous: "view_ambiguous", KindViewStrides: "view_strides",
	KindReadOnlyLegacyExport: "read_only_legacy_export", KindNegativePower: "negative_power",
	KindNumberOverflow: "number_overflow",
}

// String is the kind's name, the library's name for it in lower case ("not_broadcastable",
// "cast_refused", ...), or "ErrorKind(n)" for a code this package does not know.
func (k ErrorKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
}

// Error is a failed call: the library's status, its error as data and its exact message, all
// read in the same cgo call as the failing function. Fields that do not apply to Kind are -1
// (numbers) or nil (shapes). Failures the package finds itself before calling the library (a
// closed tensor, elements read as the wrong Go type, arguments of mismatched lengths) are
// *Error values too, with the status and kind the library would give.
type Error struct {
	Status         Status    // the kind of failure; also what errors.Is compares
	Kind           ErrorKind // exactly what went wrong; it says which fields below apply
	Dim            int       // the dimension where the conflict is
	SizeA, SizeB   int       // the two conflicting sizes (or counts, as Kind says)
	Arg            int       // n-shape broadcasting: the index of the mismatching shape
	DTypeA, DTypeB DType     // the two element types involved, as Kind says
	ShapeA, ShapeB []int     // the two shapes involved, as Kind says
	Message        string    // PyTorch's text, exactly (row-major terms)
}

// Error returns the library's message, unchanged.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the status, so that errors.Is matches the Err* sentinels.
func (e *Error) Unwrap() error { return e.Status }

// goError is a failure found by the package itself, before any call to the library: every
// field that does not apply is -1 or nil, as in the library's own errors.
func goError(s Status, k ErrorKind, msg string) *Error {
	return &Error{Status: s, Kind: k, Dim: -1, SizeA: -1, SizeB: -1, Arg: -1, DTypeA: -1,
		DTypeB: -1, Message: msg}
}
