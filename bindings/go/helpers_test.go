package broadcast_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"

	bc "libbroadcast/broadcast"
)

// must(call())(t) is call's value, or fails the test at once when call failed.
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

// noErr fails the test at once when a call that should succeed does not.
func noErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// f32 builds a float32 tensor of the given shape and data.
func f32(t testing.TB, shape []int, data ...float32) *bc.Tensor {
	t.Helper()
	return must(bc.FromSlice(shape, data))(t)
}

// arange is 0, 1, 2, ... as float32 in the given shape.
func arange(n int, start, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = start + step*float32(i)
	}
	return out
}

func checkShape(t testing.TB, x *bc.Tensor, want ...int) {
	t.Helper()
	if got := x.Shape(); !reflect.DeepEqual(got, append([]int{}, want...)) {
		t.Errorf("shape %v, want %v", got, want)
	}
}

func checkF32(t testing.TB, x *bc.Tensor, want []float32) {
	t.Helper()
	got, err := bc.Data[float32](x)
	if err != nil {
		t.Fatalf("Data: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values %v, want %v", got, want)
	}
}

// checkErr checks a failure: its status (through errors.Is, as a user tests it) and its exact
// message; it returns the *Error for further checks.
func checkErr(t testing.TB, err error, status bc.Status, msg string) *bc.Error {
	t.Helper()
	var e *bc.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error with status %d and message %q, got %v", status, msg, err)
	}
	if !errors.Is(err, status) || e.Status != status {
		t.Errorf("status %d (%v), want %d", e.Status, e.Status, status)
	}
	if e.Message != msg || err.Error() != msg {
		t.Errorf("message\n  %q\nwant\n  %q", e.Message, msg)
	}
	return e
}

// warnings collects the library's warnings until the test ends, then restores the defaults
// (switches off, handler back to standard error).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func captureWarnings(t *testing.T) *warnings {
	w := &warnings{}
	bc.SetWarningHandler(func(m string) {
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.mu.Unlock()
	})
	t.Cleanup(func() {
		bc.SetWarningHandler(nil)
		bc.SetBroadcastWarning(false)
		bc.SetLegacyFallback(false)
	})
	return w
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}
