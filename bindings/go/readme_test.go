package broadcast_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// fenced returns the body of the first ```lang block after heading in the README.
func fenced(t *testing.T, readme, heading, lang string) string {
	t.Helper()
	at := strings.Index(readme, "\n"+heading+"\n")
	if at < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	open := "\n```" + lang + "\n"
	start := strings.Index(readme[at:], open)
	if start < 0 {
		t.Fatalf("README section %q has no %s block", heading, lang)
	}
	body := readme[at+start+len(open):]
	return body[:strings.Index(body, "```\n")]
}

// The README's Go quick start is examples/quickstart/main.go, and it prints what the README
// says when built, as the README tells a user, from a module of its own that requires this one.
func TestReadmeQuickStart(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	prog := fenced(t, readme, "### Go", "go")
	file, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if prog != string(file) {
		t.Errorf("the README's Go block differs from examples/quickstart/main.go")
	}
	want := fenced(t, readme, "### Go", "text")

	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, args := range [][]string{
		{"mod", "init", "quickstart"},
		{"mod", "edit", "-require=libbroadcast/broadcast@v0.0.0", "-replace=libbroadcast/broadcast=" + here},
		{"run", "."},
	} {
		cmd := exec.Command(gobin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if args[0] == "run" && string(out) != want {
			t.Errorf("the quick start printed\n%s\nthe README says\n%s", out, want)
		}
	}
}
