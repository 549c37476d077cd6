// Package broadcast binds libbroadcast: tensors with exactly PyTorch's broadcasting semantics
// (shapes, result types, messages), computed by the C library through cgo.
//
//	a := broadcast.Must(broadcast.Ones(broadcast.Float32, 4, 1))
//	b := broadcast.Must(broadcast.FromSlice([]int{4}, []float32{0.5, 1.5, 2.5, 3.5}))
//	c, err := broadcast.Add.Apply(a, b) // (4,1) + (4,) -> (4,4)
//
// # Tensors
//
// A *Tensor owns one library handle. Close frees it at once (it is idempotent); a finalizer frees
// it otherwise (see Memory). A closed tensor is refused by every call with an *Error (ErrInvalidHandle, "tensor is
// closed"), never a panic. Shapes are []int in row-major order; an empty shape is a 0-d tensor.
// Element types are the ten DType values; FromSlice, Data, CopyTo and At take the matching Go
// type (Float16Bits and BFloat16Bits hold half-precision bits) and refuse another with ErrDType.
//
// Views (Expand, BroadcastTo, Permute, Transpose, Slice, AsStrided, View, Unsqueeze, Squeeze,
// SqueezeAll; Reshape and Flatten when the strides allow) share their tensor's elements and are
// tensors of their own: closing a tensor does not invalidate its views. Clone, Contiguous and
// ToDType copy.
//
// String (and so fmt's %v) prints a tensor as PyTorch does, such as "tensor([[1., 2.]])";
// Text returns the same text, or the error. DataPointer, ToDLPack and FromDLPack share memory
// with C code and other libraries without a copy.
//
// # Memory
//
// A tensor's elements live in the library's memory, outside Go's heap, where the garbage
// collector neither sees them nor counts them when it decides to run. Close frees them (at once,
// but for small results: below).
// A tensor dropped without Close is freed by its finalizer, which runs only after a collection
// has found the tensor unreachable (a result of less than 64 KiB gets its finalizer only if it is
// still open at the next collection, or about 8 such results later: setting and clearing a
// finalizer would cost a short-lived result more than its cgo calls; so a small one dropped
// unclosed waits for a second collection). Such a small result's handle is also freed a little
// after its Close, and always before LiveCount counts: a cgo call to free each would cost as much
// as the operation. A binary operation on operands of a few elements frees it inside its own cgo
// call, about 8 such results later; other results are freed with up to 7 others in one cgo call. So that dropped tensors cannot pile up
// while Go's own allocations bring no collection, the package counts the bytes of storage behind
// its open tensors and calls runtime.GC itself when they pass half again (and at least 16 MiB
// more than) what its previous collection left. A program that drops its results unclosed thus
// holds about half again the memory of the tensors it still uses (at least 16 MiB more), and pays
// a collection each time the bound is passed; one that closes its tensors seldom or never
// reaches it. Only storage the library allocated for a result counts (for a binary operation on
// two operands of a few elements, a bound of it: 8 bytes times the product of their element
// counts, known without asking the library): a view shares its tensor's storage, and memory given to WrapC or FromDLPack is freed by its owner. Finalizers run one at a time on one goroutine: one that
// blocks holds up the freeing of every dropped tensor.
//
// # Operations
//
// Each Op (Add, Sub, Mul, Div, the comparisons Eq to Ge, and the rest of the constants listed
// under Op, one per operation of the library's table) has three forms: op.Apply(a, b) returns a
// new tensor, op.InPlace(target, other) writes into target, op.Out(out, a, b) writes
// into out. Where(cond, a, b) and WhereOut(out, cond, a, b) choose elements from a or b.
//
// An Expr evaluates several operations in one pass over memory, with exactly the separate calls'
// results: broadcast.Add.Of(broadcast.Mul.Of(broadcast.Input(0), broadcast.Input(1)),
// broadcast.Input(2)).Eval(a, b, c) is a*b + c.
//
// A new result is laid out as PyTorch lays it out (the inputs' dimension order when they share
// one); Data and CopyTo always read it in row-major order.
//
// With a number for an operand (PyTorch's rule for Python numbers: it promotes by category only,
// so Int32 plus 2.5 is Float32 and Uint8 plus 300 stays Uint8): op.ApplyNumber(t, n),
// op.ApplyNumberFirst(n, t) and op.InPlaceNumber(t, n), with n made by NumberOf(2.5).
//
// # Planning
//
// op.Plan(a, b), op.PlanInPlace(target, other) and op.PlanOut(out, a, b) take each operand as a
// Geometry (type, shape, strides; no memory) and report what the call would do: the result's
// type, shape and strides, its warnings, how it would run and what it would allocate, or the very
// *Error the call would return.
//
// # Errors
//
// Every failure is an *Error holding the library's status, its error kind, the dimension, sizes
// and shapes involved, and its exact message, all read in the same cgo call as the failing
// function. errors.Is(err, broadcast.ErrShape) tests the status.
//
// # Linking
//
// By default the package finds the library with pkg-config (package "broadcast": the
// broadcast.pc that `make install` writes). Without an installed library, either put a
// broadcast-uninstalled.pc on PKG_CONFIG_PATH (`make go-test` writes one for the repository's
// build in target/pkgconfig), or build with -tags nopkgconfig and give the flags yourself:
//
//	CGO_CFLAGS="-I$REPO/include" CGO_LDFLAGS="-L$REPO/target/release -Wl,-rpath,$REPO/target/release -lbroadcast" go build -tags nopkgconfig
//
// At run time the shared library must be found: through the rpath above, a system library
// directory, or LD_LIBRARY_PATH. The package checks at init that the library loaded is not older
// than the header it was compiled against.
package broadcast
