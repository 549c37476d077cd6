package broadcast_test

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	bc "libbroadcast/broadcast"
)

// headerDefines reads the integer #defines of include/broadcast.h: the values the C library is
// built with, which the Go constants write out as literals.
func headerDefines(t *testing.T) map[string]int64 {
	t.Helper()
	raw, err := os.ReadFile("../../include/broadcast.h")
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]int64{}
	for _, m := range regexp.MustCompile(`(?m)^#define (BC_[A-Z0-9_]+) (-?[0-9]+)$`).FindAllStringSubmatch(string(raw), -1) {
		v, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		defs[m[1]] = v
	}
	if len(defs) < 100 {
		t.Fatalf("only %d #defines found in the header", len(defs))
	}
	return defs
}

type goConst struct {
	macro string
	value int64
	name  string // its String(), or "" for a type without one
}

// goConsts pairs every Go constant with the C constant it stands for.
var goConsts = []goConst{
	{"BC_OK", int64(bc.OK), ""},
	{"BC_ERR_NULL_ARG", int64(bc.ErrNullArg), ""},
	{"BC_ERR_INVALID_ARG", int64(bc.ErrInvalidArg), ""},
	{"BC_ERR_SHAPE", int64(bc.ErrShape), ""},
	{"BC_ERR_DTYPE", int64(bc.ErrDType), ""},
	{"BC_ERR_OVERLAP", int64(bc.ErrOverlap), ""},
	{"BC_ERR_OVERFLOW", int64(bc.ErrOverflow), ""},
	{"BC_ERR_ALLOC", int64(bc.ErrAlloc), ""},
	{"BC_ERR_BUFFER_TOO_SMALL", int64(bc.ErrBufferTooSmall), ""},
	{"BC_ERR_INTERNAL", int64(bc.ErrInternal), ""},
	{"BC_ERR_INVALID_HANDLE", int64(bc.ErrInvalidHandle), ""},
	{"BC_ERR_VALUE", int64(bc.ErrValue), ""},
	{"BC_ERR_READ_ONLY", int64(bc.ErrReadOnly), ""},

	{"BC_ERROR_KIND_NONE", int64(bc.KindNone), bc.KindNone.String()},
	{"BC_ERROR_KIND_NOT_BROADCASTABLE", int64(bc.KindNotBroadcastable), bc.KindNotBroadcastable.String()},
	{"BC_ERROR_KIND_NARY_NOT_BROADCASTABLE", int64(bc.KindNaryNotBroadcastable), bc.KindNaryNotBroadcastable.String()},
	{"BC_ERROR_KIND_INPLACE_MISMATCH", int64(bc.KindInPlaceMismatch), bc.KindInPlaceMismatch.String()},
	{"BC_ERROR_KIND_OUTPUT_SHAPE", int64(bc.KindOutputShape), bc.KindOutputShape.String()},
	{"BC_ERROR_KIND_EXPAND_MISMATCH", int64(bc.KindExpandMismatch), bc.KindExpandMismatch.String()},
	{"BC_ERROR_KIND_EXPAND_LEADING", int64(bc.KindExpandLeading), bc.KindExpandLeading.String()},
	{"BC_ERROR_KIND_EXPAND_TOO_FEW_SIZES", int64(bc.KindExpandTooFewSizes), bc.KindExpandTooFewSizes.String()},
	{"BC_ERROR_KIND_EXPAND_NEGATIVE", int64(bc.KindExpandNegative), bc.KindExpandNegative.String()},
	{"BC_ERROR_KIND_CAST_REFUSED", int64(bc.KindCastRefused), bc.KindCastRefused.String()},
	{"BC_ERROR_KIND_BOOL_SUBTRACTION", int64(bc.KindBoolSubtraction), bc.KindBoolSubtraction.String()},
	{"BC_ERROR_KIND_INTERNAL_OVERLAP", int64(bc.KindInternalOverlap), bc.KindInternalOverlap.String()},
	{"BC_ERROR_KIND_PARTIAL_OVERLAP", int64(bc.KindPartialOverlap), bc.KindPartialOverlap.String()},
	{"BC_ERROR_KIND_OVERFLOW", int64(bc.KindOverflow), bc.KindOverflow.String()},
	{"BC_ERROR_KIND_ALLOC", int64(bc.KindAlloc), bc.KindAlloc.String()},
	{"BC_ERROR_KIND_INVALID_ARGUMENT", int64(bc.KindInvalidArgument), bc.KindInvalidArgument.String()},
	{"BC_ERROR_KIND_BUFFER_TOO_SMALL", int64(bc.KindBufferTooSmall), bc.KindBufferTooSmall.String()},
	{"BC_ERROR_KIND_NULL_ARG", int64(bc.KindNullArg), bc.KindNullArg.String()},
	{"BC_ERROR_KIND_INVALID_HANDLE", int64(bc.KindInvalidHandle), bc.KindInvalidHandle.String()},
	{"BC_ERROR_KIND_INTERNAL", int64(bc.KindInternal), bc.KindInternal.String()},
	{"BC_ERROR_KIND_NOT_IMPLEMENTED", int64(bc.KindNotImplemented), bc.KindNotImplemented.String()},
	{"BC_ERROR_KIND_ZERO_DIVISION", int64(bc.KindZeroDivision), bc.KindZeroDivision.String()},
	{"BC_ERROR_KIND_WHERE_CONDITION", int64(bc.KindWhereCondition), bc.KindWhereCondition.String()},
	{"BC_ERROR_KIND_OUT_DTYPE", int64(bc.KindOutDType), bc.KindOutDType.String()},
	{"BC_ERROR_KIND_DIM_OUT_OF_RANGE", int64(bc.KindDimOutOfRange), bc.KindDimOutOfRange.String()},
	{"BC_ERROR_KIND_DIM_REPEATED", int64(bc.KindDimRepeated), bc.KindDimRepeated.String()},
	{"BC_ERROR_KIND_EMPTY_REDUCTION", int64(bc.KindEmptyReduction), bc.KindEmptyReduction.String()},
	{"BC_ERROR_KIND_REDUCE_DTYPE", int64(bc.KindReduceDType), bc.KindReduceDType.String()},
	{"BC_ERROR_KIND_NOT_EXPANDABLE", int64(bc.KindNotExpandable), bc.KindNotExpandable.String()},
	{"BC_ERROR_KIND_READ_ONLY", int64(bc.KindReadOnly), bc.KindReadOnly.String()},
	{"BC_ERROR_KIND_VIEW_SIZE", int64(bc.KindViewSize), bc.KindViewSize.String()},
	{"BC_ERROR_KIND_VIEW_AMBIGUOUS", int64(bc.KindViewAmbiguous), bc.KindViewAmbiguous.String()},
	{"BC_ERROR_KIND_VIEW_STRIDES", int64(bc.KindViewStrides), bc.KindViewStrides.String()},
	{"BC_ERROR_KIND_READ_ONLY_LEGACY_EXPORT", int64(bc.KindReadOnlyLegacyExport), bc.KindReadOnlyLegacyExport.String()},
	{"BC_ERROR_KIND_NEGATIVE_POWER", int64(bc.KindNegativePower), bc.KindNegativePower.String()},
	{"BC_ERROR_KIND_NUMBER_OVERFLOW", int64(bc.KindNumberOverflow), bc.KindNumberOverflow.String()},

	{"BC_DTYPE_BOOL", int64(bc.Bool), bc.Bool.String()},
	{"BC_DTYPE_UINT8", int64(bc.Uint8), bc.Uint8.String()},
	{"BC_DTYPE_INT8", int64(bc.Int8), bc.Int8.String()},
	{"BC_DTYPE_INT16", int64(bc.Int16), bc.Int16.String()},
	{"BC_DTYPE_INT32", int64(bc.Int32), bc.Int32.String()},
	{"BC_DTYPE_INT64", int64(bc.Int64), bc.Int64.String()},
	{"BC_DTYPE_FLOAT16", int64(bc.Float16), bc.Float16.String()},
	{"BC_DTYPE_BFLOAT16", int64(bc.BFloat16), bc.BFloat16.String()},
	{"BC_DTYPE_FLOAT32", int64(bc.Float32), bc.Float32.String()},
	{"BC_DTYPE_FLOAT64", int64(bc.Float64), bc.Float64.String()},

	{"BC_REDUCE_SUM", int64(bc.Sum), bc.Sum.String()},
	{"BC_REDUCE_MEAN", int64(bc.Mean), bc.Mean.String()},
	{"BC_REDUCE_PROD", int64(bc.Prod), bc.Prod.String()},
	{"BC_REDUCE_AMAX", int64(bc.Amax), bc.Amax.String()},
	{"BC_REDUCE_AMIN", int64(bc.Amin), bc.Amin.String()},

	{"BC_LOOP_NONE", int64(bc.LoopNone), bc.LoopNone.String()},
	{"BC_LOOP_CONTIGUOUS", int64(bc.LoopContiguous), bc.LoopContiguous.String()},
	{"BC_LOOP_BROADCAST", int64(bc.LoopBroadcast), bc.LoopBroadcast.String()},
	{"BC_LOOP_TILED", int64(bc.LoopTiled), bc.LoopTiled.String()},
	{"BC_LOOP_STRIDED", int64(bc.LoopStrided), bc.LoopStrided.String()},

	{"BC_EXPR_MAX_STEPS", bc.ExprMaxSteps, ""},
	{"BC_EXPR_MAX_DEPTH", bc.ExprMaxDepth, ""},
}

// opsByName finds each operation by its PyTorch name, from the generated list.
var opsByName = func() map[string]bc.Op {
	m := map[string]bc.Op{}
	for _, c := range opConsts {
		m[c.name] = bc.Op(c.value)
	}
	return m
}()

// allConsts is every Go constant: the hand-kept ones above and the operation codes generated
// from the engine's tables.
func allConsts() []goConst {
	return append(append(append([]goConst{}, goConsts...), opConsts...), unaryConsts...)
}

// Every Go constant has the value of its C constant, and every C constant of the families the
// package exposes has a Go constant.
func TestConstantsMatchTheHeader(t *testing.T) {
	defs := headerDefines(t)
	seen := map[string]bool{}
	for _, c := range allConsts() {
		seen[c.macro] = true
		v, ok := defs[c.macro]
		if !ok {
			t.Errorf("%s is not in the header", c.macro)
		} else if v != c.value {
			t.Errorf("%s is %d in the header, %d in Go", c.macro, v, c.value)
		}
	}
	for macro := range defs {
		for _, family := range []string{"BC_ERR_", "BC_ERROR_KIND_", "BC_DTYPE_", "BC_OP_", "BC_UNARY_", "BC_REDUCE_", "BC_LOOP_"} {
			if strings.HasPrefix(macro, family) && !strings.HasSuffix(macro, "_COUNT") && !seen[macro] {
				t.Errorf("%s has no Go constant", macro)
			}
		}
	}
	// The codes run without gaps up to the counts, so the lists above are complete.
	for family, count := range map[string]string{"BC_OP_": "BC_OP_COUNT", "BC_UNARY_": "BC_UNARY_COUNT", "BC_REDUCE_": "BC_REDUCE_COUNT", "BC_DTYPE_": "BC_DTYPE_COUNT"} {
		n := 0
		for _, c := range allConsts() {
			if strings.HasPrefix(c.macro, family) {
				n++
			}
		}
		if int64(n) != defs[count] {
			t.Errorf("%d Go constants for %s*, the header counts %d", n, family, defs[count])
		}
	}
}

// String gives the lower-case name of the C constant (the operations' names are those of the
// functions bc_add ... bc_hypot; the dtypes' those of bc_dtype_name), never a number.
func TestStringNamesTheConstant(t *testing.T) {
	families := []string{"BC_ERROR_KIND_", "BC_DTYPE_", "BC_OP_", "BC_UNARY_", "BC_REDUCE_", "BC_LOOP_"}
	for _, c := range allConsts() {
		for _, family := range families {
			if strings.HasPrefix(c.macro, family) {
				if want := strings.ToLower(strings.TrimPrefix(c.macro, family)); c.name != want {
					t.Errorf("%s: String() = %q, want %q", c.macro, c.name, want)
				}
			}
		}
	}
	// fmt prints the names; codes the package does not know print as numbers of their type.
	got := fmt.Sprint(bc.KindCastRefused, " ", bc.FloorDivide, " ", bc.Mean, " ", bc.LoopTiled, " ", bc.BFloat16, " ",
		bc.ErrorKind(99), " ", bc.Op(26), " ", bc.Op(-1), " ", bc.Reduction(5), " ", bc.LoopKind(7), " ", bc.DType(10))
	want := "cast_refused floor_divide mean tiled bfloat16 ErrorKind(99) Op(26) Op(-1) Reduction(5) LoopKind(7) unknown"
	if got != want {
		t.Errorf("printed\n  %s\nwant\n  %s", got, want)
	}
}
