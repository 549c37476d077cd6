//go:build bcfault

package broadcast_test

import (
	"errors"
	"runtime"
	"testing"

	bc "libbroadcast/broadcast"
)

// When a shim's own allocation fails, its error is the status's own: the library's error
// record belongs to an earlier call and must not be reported with it.
func TestShimAllocFailureIsItsOwn(t *testing.T) {
	// The library's record is per OS thread: the earlier failure and the checked call share one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e := bc.Add.Of(bc.Input(0), bc.Input(1))
	ga := bc.Geometry{DType: bc.Float32, Shape: []int{2, 3}}
	gc := bc.Geometry{DType: bc.Float32, Shape: []int{4}}
	if _, err := e.Plan(ga, gc); !errors.Is(err, bc.ErrShape) {
		t.Fatalf("the earlier failure: %v", err)
	}
	bc.FailShimAlloc(1) // the geometries gobc_plan_expr builds
	_, err := e.Plan(ga, ga)
	bc.FailShimAlloc(0)
	var be *bc.Error
	if !errors.As(err, &be) || be.Status != bc.ErrAlloc || be.Message != bc.ErrAlloc.Error() {
		t.Errorf("got %#v, want ErrAlloc with the message %q", err, bc.ErrAlloc.Error())
	}
}

// Text's buffer is the shim's own allocation: its failure is ErrAlloc, and String describes the
// tensor instead.
func TestShimAllocFailureInText(t *testing.T) {
	x, err := bc.Ones(bc.Int32, 2)
	if err != nil {
		t.Fatal(err)
	}
	bc.FailShimAlloc(1)
	_, err = x.Text()
	bc.FailShimAlloc(0)
	var be *bc.Error
	if !errors.As(err, &be) || be.Status != bc.ErrAlloc || be.Message != bc.ErrAlloc.Error() {
		t.Errorf("got %#v, want ErrAlloc with the message %q", err, bc.ErrAlloc.Error())
	}
	bc.FailShimAlloc(1)
	s := x.String()
	bc.FailShimAlloc(0)
	if want := "<int32 tensor of shape (2): " + bc.ErrAlloc.Error() + ">"; s != want {
		t.Errorf("String %q, want %q", s, want)
	}
}

// The hot shims (a binary operation's three forms) return a static record of the status alone
// when there is no memory to capture a failure: the error is the status's own, and the record is
// not freed (a free of it would crash the test).
func TestShimAllocFailureInBinaryCalls(t *testing.T) {
	x := must(bc.Ones(bc.Float32, 4))(t)
	y := must(bc.Ones(bc.Float32, 3))(t)
	calls := map[string]func() error{
		"Apply":   func() error { _, err := bc.Add.Apply(x, y); return err },
		"InPlace": func() error { return bc.Add.InPlace(x, y) },
		"Out":     func() error { return bc.Add.Out(x, x, y) },
	}
	for name, call := range calls {
		for round := 0; round < 2; round++ { // the same static record twice
			bc.FailShimAlloc(1)
			err := call()
			bc.FailShimAlloc(0)
			var be *bc.Error
			if !errors.As(err, &be) || be.Status != bc.ErrShape || be.Message != bc.ErrShape.Error() {
				t.Errorf("%s: got %#v, want ErrShape with the message %q", name, err, bc.ErrShape.Error())
			}
		}
		// With memory, the library's own message and details.
		var be *bc.Error
		if err := call(); !errors.As(err, &be) || be.Status != bc.ErrShape || be.Message == bc.ErrShape.Error() || be.SizeA != 4 {
			t.Errorf("%s with memory: got %#v, want ErrShape with the library's message", name, err)
		}
	}
	x.Close()
	y.Close()
}
