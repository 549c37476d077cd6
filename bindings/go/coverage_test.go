package broadcast_test

import (
	"strconv"

	bc "libbroadcast/broadcast"

	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// notWrapped lists the C functions the package deliberately does not call, each with the reason.
func notWrapped() map[string]string {
	m := map[string]string{
		"bc_debug_panic": "a test hook of the C library (it panics on purpose to show that no panic " +
			"crosses the boundary); the C tests call it",
		"bc_last_error_status": "the shims read each failure inside the failing cgo call: its status " +
			"is the call's return value, the rest comes from bc_last_error_message, _info and _shape",
		"bc_last_error_clear": "the shims read each failure inside the failing cgo call and never " +
			"read the record otherwise, so a stale failure is never mistaken for a new one",
		"bc_set_streaming": "a per-thread setting, and goroutines move between threads from one " +
			"call to the next; the default policy needs no setting",
		"bc_get_streaming": "as bc_set_streaming",
	}
	// The per-operation and per-reduction functions are the generic ones with a fixed code.
	for _, c := range opConsts {
		op := c.name
		m["bc_"+op] = "bc_binary with this operation's code, which Op.Apply calls"
		m["bc_"+op+"_inplace"] = "bc_binary_inplace with this operation's code, which Op.InPlace calls"
		m["bc_"+op+"_out"] = "bc_binary_out with this operation's code, which Op.Out calls"
	}
	for _, op := range []string{"add", "sub", "mul", "div"} {
		m["bc_"+op+"_scalar"] = "bc_binary_scalar with this operation's code, which Op.ApplyNumber calls"
		m["bc_"+op+"_scalar_inplace"] = "bc_binary_scalar_inplace with this operation's code, which Op.InPlaceNumber calls"
	}
	for _, op := range []string{"sub", "div"} {
		m["bc_r"+op+"_scalar"] = "bc_binary_rscalar with this operation's code, which Op.ApplyNumberFirst calls"
	}
	for _, r := range []string{"sum", "mean", "prod", "amax", "amin"} {
		m["bc_"+r] = "bc_reduce with this reduction's code, which Reduction.Apply calls"
	}
	for op := bc.UnaryOp(0); op.String() != "UnaryOp("+strconv.Itoa(int(op))+")"; op++ {
		m["bc_"+op.String()] = "bc_unary with this operation's code, which UnaryOp.Apply calls"
		if op.HasInPlace() {
			m["bc_"+op.String()+"_inplace"] = "bc_unary_inplace with this operation's code, which UnaryOp.InPlace calls"
		}
		m["bc_"+op.String()+"_out"] = "bc_unary_out with this operation's code, which UnaryOp.Out calls"
	}
	return m
}

// Every function of the C API is called by the package, or listed in notWrapped with a reason. A
// function counts as called when its name appears as C.bc_name in a non-test .go file of the
// package, or is called in shims.c (the package's C side, compiled with it, where the calls
// that must read a failure in the same cgo call are made).
func TestEveryCFunctionIsWrapped(t *testing.T) {
	raw, err := os.ReadFile("../../include/broadcast.h")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^(?:BC_MUST_USE )?(?:const )?(?:struct [a-z_A-Z]+ |[a-z_0-9]+ )\**(bc_[a-z0-9_]+)\(`)
	api := map[string]bool{}
	for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
		api[m[1]] = true
	}
	if len(api) < 150 {
		t.Fatalf("only %d functions found in the header", len(api))
	}

	called := map[string]bool{}
	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	goCall := regexp.MustCompile(`\bC\.(bc_[a-z0-9_]+)\b`)
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goCall.FindAllStringSubmatch(string(src), -1) {
			called[m[1]] = true
		}
	}
	shims, err := os.ReadFile("shims.c")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\b(bc_[a-z0-9_]+)\(`).FindAllStringSubmatch(string(shims), -1) {
		called[m[1]] = true
	}

	reasons := notWrapped()
	var missing, stale, unknown []string
	n := 0
	for f := range api {
		switch {
		case called[f] && reasons[f] != "":
			stale = append(stale, f)
		case called[f]:
			n++
		case reasons[f] == "":
			missing = append(missing, f)
		}
	}
	for f := range reasons {
		if !api[f] {
			unknown = append(unknown, f)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	sort.Strings(unknown)
	if len(missing) > 0 {
		t.Errorf("%d C functions are neither wrapped nor listed in notWrapped: %v", len(missing), missing)
	}
	if len(stale) > 0 {
		t.Errorf("wrapped, but still listed in notWrapped: %v", stale)
	}
	if len(unknown) > 0 {
		t.Errorf("listed in notWrapped, but not in the header: %v", unknown)
	}
	t.Logf("%d of the %d C functions are called by the package; %d are listed as not wrapped", n, len(api), len(reasons))
}
