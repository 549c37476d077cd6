package broadcast_test

// Memory held behind tensors nobody closes: the collector does not see it, so the package must
// bring the collections that let the finalizers free it.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	bc "libbroadcast/broadcast"
)

// unclosedChild, set in the environment, makes TestUnclosedResultsStayBounded run the loop itself
// (in the fresh process its parent started) rather than start that process.
const unclosedChild = "BC_GO_TEST_UNCLOSED_CHILD"

// A program that relies on finalizers alone: 100 float32 (2048,2048) sums of 16 MiB each,
// dropped without Close. The process's peak resident memory must stay under 3 times one step's
// working set (the two inputs and one result, 48 MiB); 100 results kept would be 1.6 GB. The
// loop runs in a fresh process, so that nothing earlier tests left, in memory or in the
// package's count of it, takes part.
func TestUnclosedResultsStayBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status, which only Linux has")
	}
	if os.Getenv(unclosedChild) != "" {
		unclosedLoop(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestUnclosedResultsStayBounded$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), unclosedChild+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("the loop's process said:\n%s", out)
	if err != nil {
		t.Fatalf("the loop's process failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^peak resident memory \d+ MiB`).Match(out) {
		t.Fatalf("the loop's process did not run the loop")
	}
}

func unclosedLoop(t *testing.T) {
	const n = 2048
	const resultBytes = n * n * 4
	const workingSet = 3 * resultBytes // two inputs and one result
	base := memStatus(t, "VmRSS")
	x := must(bc.Full(bc.Float32, 1.5, n, n))(t)
	y := must(bc.Full(bc.Float32, 2.25, n, n))(t)
	for i := 0; i < 100; i++ {
		r, err := bc.Add.Apply(x, y)
		if err != nil {
			t.Fatal(err)
		}
		// Read an element written last, so that the result was computed through to the end.
		if v, err := bc.At[float32](r, n-1, n-1); err != nil || v != 3.75 {
			t.Fatalf("result %d: last element %v (%v), want 3.75", i, v, err)
		}
	}
	peak := memStatus(t, "VmHWM")
	fmt.Printf("peak resident memory %d MiB (%d MiB before the inputs); one step's working set is %d MiB\n",
		peak>>20, base>>20, workingSet>>20)
	if peak >= 3*workingSet {
		t.Errorf("peak resident memory %d MiB, 3 times one step's working set is %d MiB", peak>>20, 3*workingSet>>20)
	}
	x.Close()
	y.Close()
}

// memStatus is a size line of /proc/self/status (VmRSS, VmHWM, ...), in bytes.
func memStatus(t *testing.T, name string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok || k != name {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("/proc/self/status: %s: %v", s.Text(), err)
		}
		return kb << 10
	}
	t.Fatalf("/proc/self/status has no %s", name)
	return 0
}

// What each kind of call counts toward the package's collections: a result's new storage (its
// elements times their size; 8 bytes each below 512 elements), and nothing for a view or for
// memory the library did not allocate.
func TestStorageBytesCounted(t *testing.T) {
	x := must(bc.Zeros(bc.Float32, 32, 32))(t)
	xt := must(x.Transpose(0, 1))(t)
	wantBytes := func(what string, r *bc.Tensor, want int64) {
		t.Helper()
		if got := bc.StorageBytes(r); got != want {
			t.Errorf("%s counts %d bytes, want %d", what, got, want)
		}
	}
	wantBytes("Zeros(Float32, 32, 32)", x, 4096)
	wantBytes("FromSlice of 600 int16", must(bc.FromSlice([]int{600}, make([]int16, 600)))(t), 1200)
	wantBytes("Ones(Bool, 700)", must(bc.Ones(bc.Bool, 700))(t), 700)
	wantBytes("Ones(Bool, 7), below 512 elements", must(bc.Ones(bc.Bool, 7))(t), 56)
	wantBytes("Add.Apply((32,32) float32, (4,1,1) float64)",
		must(bc.Add.Apply(x, must(bc.Ones(bc.Float64, 4, 1, 1))(t)))(t), 4*32*32*8)
	wantBytes("Lt.Apply (a Bool result)", must(bc.Lt.Apply(x, x))(t), 1024)
	wantBytes("Sum over dim 1, 32 elements", must(bc.Sum.Apply(x, false, 1))(t), 32*8)
	wantBytes("Clone", must(x.Clone())(t), 4096)
	wantBytes("ToDType(Int64)", must(x.ToDType(bc.Int64))(t), 8192)
	wantBytes("Exp", must(bc.Exp.Apply(x))(t), 4096)
	wantBytes("Where", must(bc.Where(must(bc.Ones(bc.Bool, 32))(t), x, x))(t), 4096)

	wantBytes("Transpose (a view)", xt, 0)
	wantBytes("Expand (a view)", must(must(bc.Zeros(bc.Float32, 1, 4))(t).Expand(1000, 4))(t), 0)
	wantBytes("Slice (a view)", must(x.Slice(0, 1, 3, 1))(t), 0)
	wantBytes("Reshape that can view", must(x.Reshape(1024))(t), 0)
	wantBytes("Reshape that must copy", must(xt.Reshape(1024))(t), 4096)
	wantBytes("Flatten that can view", must(x.Flatten(0, 1))(t), 0)
	wantBytes("Flatten that must copy", must(xt.Flatten(0, 1))(t), 4096)
	wantBytes("SumToSize to the same shape (the tensor itself)", must(x.SumToSize(32, 32))(t), 0)
	wantBytes("SumToSize that sums, to 32 elements", must(x.SumToSize(1, 32))(t), 32*8)
	for _, b := range must(bc.BroadcastTensors(x, must(bc.Ones(bc.Float32, 32))(t)))(t) {
		wantBytes("BroadcastTensors (views)", b, 0)
	}
	wantBytes("FromDLPack (the producer's memory)", must(bc.FromDLPack(must(x.ToDLPack())(t)))(t), 0)
	ptr, n, _, err := x.DataPointer()
	noErr(t, err)
	wantBytes("WrapC (the caller's memory)", must(bc.WrapC(bc.Float32, ptr, n, []int{1024}, nil, 0, nil, nil))(t), 0)
	runtime.KeepAlive(x)
}

// A binary operation's result on two operands of a few elements counts a bound of its storage,
// 8 bytes times the product of their element counts, without asking the library; and whatever
// made a tensor, when it counts fewer than 8*512 bytes it has at most an eighth that many elements
// (the package takes that for a bound of the next result's). Chains of small results, broadcasts
// that multiply the elements, views, empty tensors and results past the bound are checked.
func TestSmallResultsCountABound(t *testing.T) {
	var all []*bc.Tensor
	keep := func(r *bc.Tensor) *bc.Tensor { all = append(all, r); return r }
	col := keep(must(bc.Ones(bc.Float32, 3, 1))(t))
	row := keep(must(bc.Ones(bc.Int8, 1, 3))(t))
	sq := keep(must(bc.Add.Apply(col, row))(t)) // (3,3), 9 elements: the bound is exact
	if got := bc.StorageBytes(sq); got != 9*8 {
		t.Errorf("(3,1)+(1,3) counts %d bytes, want %d", got, 9*8)
	}
	v4 := keep(must(bc.Ones(bc.Float64, 4))(t))
	if got := bc.StorageBytes(keep(must(bc.Mul.Apply(v4, v4))(t))); got != 16*8 {
		t.Errorf("(4)*(4) counts %d bytes, want the bound %d", got, 16*8)
	}
	// (3,3)+(3,1)+... : each result's bound multiplies, until it passes 512 elements and the
	// library is asked.
	x := sq
	for i := 0; i < 4; i++ {
		x = keep(must(bc.Add.Apply(x, col))(t))
	}
	big := keep(must(bc.Ones(bc.Float32, 1, 40, 1))(t))
	wide := keep(must(bc.Ones(bc.Float32, 40))(t))
	outer := keep(must(bc.Mul.Apply(big, wide))(t)) // (1,40,40), 1600 elements: asked
	if got := bc.StorageBytes(outer); got != 1600*4 {
		t.Errorf("(1,40,1)*(40) counts %d bytes, want %d", got, 1600*4)
	}
	view := keep(must(row.Expand(3, 3))(t))
	keep(must(bc.Sub.Apply(view, col))(t)) // a view's element count is not known: asked
	keep(must(bc.Sub.Apply(col, view))(t))
	empty := keep(must(bc.Zeros(bc.Float32, 0, 3))(t))
	keep(must(bc.Add.Apply(empty, row))(t))
	keep(must(bc.Lt.Apply(sq, sq))(t))
	// 600 int8 elements count 600 bytes (numel times the element size, from 512 elements up): a
	// count that is no eighth of the element count.
	bytes600 := keep(must(bc.Ones(bc.Int8, 600))(t))
	one := keep(must(bc.Ones(bc.Float32, 1))(t))
	keep(must(bc.Add.Apply(bytes600, one))(t))
	keep(must(bc.Add.Apply(one, bytes600))(t))
	keep(must(bc.Add.Apply(keep(must(bc.Scalar[int64](7))(t)), sq))(t))
	for _, r := range all {
		// No fewer bytes than the library's own count gives: 8 an element below 512 elements,
		// the element size from there.
		n, b := int64(r.Numel()), bc.StorageBytes(r)
		least := 8 * n
		if n >= 512 {
			least = n * int64(r.DType().Size())
		}
		if b > 0 && b < least {
			t.Errorf("%v %v counts %d bytes for %d elements, fewer than %d", r.DType(), r.Shape(), b, n, least)
		}
		r.Close()
	}
}

// Several goroutines dropping results at once cross the bound together: the collections they
// start (one at a time) must neither deadlock nor free a handle twice, and every dropped handle
// is freed once.
func TestUnclosedResultsFromGoroutines(t *testing.T) {
	base := settle()
	f := countFrees(t)
	x := must(bc.Full(bc.Float32, 1, 1024, 1024))(t) // 4 MiB
	var mu sync.Mutex
	var hs []uintptr
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				r, err := bc.Add.Apply(x, x)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				hs = append(hs, bc.Handle(r))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	hs = append(hs, bc.Handle(x))
	x.Close()
	waitLive(t, base)
	f.check(t, hs)
}
