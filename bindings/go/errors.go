package broadcast

// #include "broadcast.h"
import "C"

// Status is one of the library's BC_ERR_* codes. The non-zero constants below are also the
// sentinel errors of this package: errors.Is(err, broadcast.ErrShape) is true for every failure
// with status BC_ERR_SHAPE.
type Status int32

// The statuses, with the numbers of include/broadcast.h (they never change).
const (
	OK                Status = C.BC_OK
	ErrNullArg        Status = C.BC_ERR_NULL_ARG
	ErrInvalidArg     Status = C.BC_ERR_INVALID_ARG
	ErrShape          Status = C.BC_ERR_SHAPE
	ErrDType          Status = C.BC_ERR_DTYPE
	ErrOverlap        Status = C.BC_ERR_OVERLAP
	ErrOverflow       Status = C.BC_ERR_OVERFLOW
	ErrAlloc          Status = C.BC_ERR_ALLOC
	ErrBufferTooSmall Status = C.BC_ERR_BUFFER_TOO_SMALL
	ErrInternal       Status = C.BC_ERR_INTERNAL
	ErrInvalidHandle  Status = C.BC_ERR_INVALID_HANDLE
	ErrValue          Status = C.BC_ERR_VALUE // the values are refused: an integer division by zero
	ErrReadOnly       Status = C.BC_ERR_READ_ONLY
)

// Error is the library's description of the status (bc_status_str), such as
// "BC_ERR_SHAPE: shapes are not compatible".
func (s Status) Error() string { return C.GoString(C.bc_status_str(C.int32_t(s))) }

// ErrorKind says exactly what went wrong (a BC_ERROR_KIND_* code): which fields of Error apply
// depends on it, as documented in include/broadcast.h.
type ErrorKind int32

// The kinds, with the numbers of include/broadcast.h.
const (
	KindNone                 ErrorKind = C.BC_ERROR_KIND_NONE
	KindNotBroadcastable     ErrorKind = C.BC_ERROR_KIND_NOT_BROADCASTABLE
	KindNaryNotBroadcastable ErrorKind = C.BC_ERROR_KIND_NARY_NOT_BROADCASTABLE
	KindInPlaceMismatch      ErrorKind = C.BC_ERROR_KIND_INPLACE_MISMATCH
	KindOutputShape          ErrorKind = C.BC_ERROR_KIND_OUTPUT_SHAPE
	KindExpandMismatch       ErrorKind = C.BC_ERROR_KIND_EXPAND_MISMATCH
	KindExpandLeading        ErrorKind = C.BC_ERROR_KIND_EXPAND_LEADING
	KindExpandTooFewSizes    ErrorKind = C.BC_ERROR_KIND_EXPAND_TOO_FEW_SIZES
	KindExpandNegative       ErrorKind = C.BC_ERROR_KIND_EXPAND_NEGATIVE
	KindCastRefused          ErrorKind = C.BC_ERROR_KIND_CAST_REFUSED
	KindBoolSubtraction      ErrorKind = C.BC_ERROR_KIND_BOOL_SUBTRACTION
	KindInternalOverlap      ErrorKind = C.BC_ERROR_KIND_INTERNAL_OVERLAP
	KindPartialOverlap       ErrorKind = C.BC_ERROR_KIND_PARTIAL_OVERLAP
	KindOverflow             ErrorKind = C.BC_ERROR_KIND_OVERFLOW
	KindAlloc                ErrorKind = C.BC_ERROR_KIND_ALLOC
	KindInvalidArgument      ErrorKind = C.BC_ERROR_KIND_INVALID_ARGUMENT
	KindBufferTooSmall       ErrorKind = C.BC_ERROR_KIND_BUFFER_TOO_SMALL
	KindNullArg              ErrorKind = C.BC_ERROR_KIND_NULL_ARG
	KindInvalidHandle        ErrorKind = C.BC_ERROR_KIND_INVALID_HANDLE
	KindInternal             ErrorKind = C.BC_ERROR_KIND_INTERNAL
	KindNotImplemented       ErrorKind = C.BC_ERROR_KIND_NOT_IMPLEMENTED
	KindZeroDivision         ErrorKind = C.BC_ERROR_KIND_ZERO_DIVISION
	KindWhereCondition       ErrorKind = C.BC_ERROR_KIND_WHERE_CONDITION
	KindOutDType             ErrorKind = C.BC_ERROR_KIND_OUT_DTYPE
	KindReadOnly             ErrorKind = C.BC_ERROR_KIND_READ_ONLY
	KindViewSize             ErrorKind = C.BC_ERROR_KIND_VIEW_SIZE
	KindViewAmbiguous        ErrorKind = C.BC_ERROR_KIND_VIEW_AMBIGUOUS
	KindViewStrides          ErrorKind = C.BC_ERROR_KIND_VIEW_STRIDES
	KindReadOnlyLegacyExport ErrorKind = C.BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT
)

// Error is a failed call: the library's status, its error as data (bc_error_info and the two
// shapes) and its exact message, all read in the same cgo call as the failing function.
// Fields that do not apply to Kind are -1 (numbers) or nil (shapes).
type Error struct {
	Status         Status
	Kind           ErrorKind
	Dim            int   // the dimension where the conflict is
	SizeA, SizeB   int   // the two conflicting sizes
	Arg            int   // n-shape broadcasting: the index of the mismatching shape
	DTypeA, DTypeB DType // a refused cast: the result type and the written-to type
	ShapeA, ShapeB []int
	Message        string // PyTorch's text, exactly (row-major terms)
}

// Error returns the library's message, unchanged.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the status, so that errors.Is matches the Err* sentinels.
func (e *Error) Unwrap() error { return e.Status }
