package broadcast_test

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	bc "libbroadcast/broadcast"
)

// 16 goroutines under GOMAXPROCS=4 fail over and over, each with its own shapes, yielding between
// calls and dropping successful results for the finalizers to free on other threads. Every error
// must carry its own goroutine's message, status and data: the package reads the per-thread last
// error inside the failing cgo call, so a goroutine moving between threads cannot see another's.
func TestErrorStorm(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const goroutines = 16
	calls := 20000 // per goroutine: 320,000 failing calls in all
	if testing.Short() {
		calls = 200
	}
	var mixed, checked atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			a := must(bc.Ones(bc.Float32, g+2))(t)
			b := must(bc.Ones(bc.Float32, g+3))(t)
			ok := must(bc.Ones(bc.Float32, 1))(t)
			want := fmt.Sprintf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension 0", g+2, g+3)
			for i := 0; i < calls; i++ {
				_, err := bc.Add.Apply(a, b)
				var e *bc.Error
				checked.Add(1)
				if !errors.As(err, &e) || e.Message != want || e.Status != bc.ErrShape ||
					e.SizeA != g+2 || e.SizeB != g+3 || !reflect.DeepEqual(e.ShapeA, []int{g + 2}) {
					if mixed.Add(1) == 1 {
						first.Store(fmt.Sprintf("goroutine %d got %v (%+v)", g, err, e))
					}
				}
				if i%8 == 0 {
					must(bc.Add.Apply(a, ok))(t) // a success, left to the finalizer
				}
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	t.Logf("%d failing calls from %d goroutines (GOMAXPROCS=4): %d mixed messages", checked.Load(), goroutines, mixed.Load())
	if mixed.Load() != 0 {
		t.Errorf("%d of %d errors were not the goroutine's own; first: %v", mixed.Load(), checked.Load(), first.Load())
	}
}
