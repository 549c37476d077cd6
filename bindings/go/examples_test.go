package broadcast_test

import (
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The standardize example prints the first four rows of its standardized, masked matrix: the
// values a float64 computation in Go gives, to PyTorch's four decimals.
func TestExampleStandardize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(gobin, "run", "./examples/standardize").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/standardize: %v\n%s", err, out)
	}
	text := string(out)
	if !strings.HasPrefix(text, "tensor([[") || !strings.HasSuffix(text, "]])\n") || strings.Count(text, "\n") != 4 {
		t.Fatalf("not four rows of a tensor:\n%s", text)
	}

	// The reference, from the same data.
	const rows, cols = 1000, 8
	x := make([]float64, rows*cols)
	for i := range x {
		u := float32((i/8*37+i%8*11)%100) / 100
		x[i] = float64(u * u * u * float32(i%8+1))
	}
	var want []float64
	var mean, std [cols]float64
	for j := 0; j < cols; j++ {
		for i := 0; i < rows; i++ {
			mean[j] += x[i*cols+j] / rows
		}
		for i := 0; i < rows; i++ {
			std[j] += (x[i*cols+j] - mean[j]) * (x[i*cols+j] - mean[j]) / rows
		}
		std[j] = math.Sqrt(std[j])
	}
	masked := 0
	for i := 0; i < 4; i++ {
		for j := 0; j < cols; j++ {
			z := (x[i*cols+j] - mean[j]) / std[j]
			if z > 2 {
				z, masked = 0, masked+1
			}
			want = append(want, z)
		}
	}
	if masked == 0 {
		t.Fatalf("no value of the first rows is above 2: the example does not show the mask")
	}

	nums := regexp.MustCompile(`-?[0-9]+\.[0-9]*(?:e[+-][0-9]+)?`).FindAllString(text, -1)
	if len(nums) != len(want) {
		t.Fatalf("%d numbers printed, want %d:\n%s", len(nums), len(want), text)
	}
	for k, s := range nums {
		got, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want[k]) > 0.0001*math.Max(1, math.Abs(want[k])) {
			t.Errorf("row %d, column %d: printed %s, want %.6f", k/cols, k%cols, s, want[k])
		}
	}
}
