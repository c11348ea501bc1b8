package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

func sandbox(t *testing.T) (*tools.Sandbox, string) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "b.go"), []byte("package b\nfunc Hello() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s3cr3t"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	return &tools.Sandbox{Root: root, WriteRoots: []string{filepath.Join(root, "sub")}, MaxOutput: 1024}, outside
}

func run(t *testing.T, sb *tools.Sandbox, name, args string) (tools.Result, error) {
	t.Helper()
	tool := tools.Builtins()[name]
	return tool.Run(context.Background(), sb, json.RawMessage(args))
}

func category(err error) string {
	var f *tools.Failure
	if errors.As(err, &f) {
		return f.Category
	}
	return "not a failure: " + err.Error()
}

func TestFileToolsStayInTheirRoots(t *testing.T) {
	sb, outside := sandbox(t)
	if r, err := run(t, sb, "read_file", `{"path":"a.txt","offset":2,"limit":1}`); err != nil || r.Output != "two\n" {
		t.Fatalf("read window = %q, %v", r.Output, err)
	}
	for _, args := range []string{
		`{"path":"` + filepath.Join(outside, "secret") + `"}`,
		`{"path":"../` + filepath.Base(outside) + `/secret"}`,
		`{"path":"escape/secret"}`, // a link out of the root
	} {
		_, err := run(t, sb, "read_file", args)
		if category(err) != tools.SandboxViolation {
			t.Errorf("read %s: %v", args, err)
		}
		// The refusal names the path and the boundary, for the report.
		if f := (*tools.Failure)(nil); !errors.As(err, &f) || f.Path == "" || f.Violation != eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ {
			t.Errorf("read %s: failure %+v", args, f)
		}
	}
	_, err := run(t, sb, "write_file", `{"path":"a.txt","content":"x"}`)
	if f := (*tools.Failure)(nil); !errors.As(err, &f) || f.Category != tools.SandboxViolation ||
		f.Path != filepath.Join(sb.Root, "a.txt") || f.Violation != eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE {
		t.Fatalf("write outside the write roots: %+v", err)
	}
	if _, err := run(t, sb, "write_file", `{"path":"sub/new/c.txt","content":"hello"}`); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(sb.Root, "sub/new/c.txt")); string(b) != "hello" {
		t.Fatalf("written %q", b)
	}
	if _, err := run(t, sb, "read_file", `{"path":"nope"}`); category(err) != tools.NotFound {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := run(t, sb, "read_file", `{"path":"a.txt","bogus":1}`); category(err) != tools.InvalidArguments {
		t.Fatalf("unknown argument: %v", err)
	}
	if r, err := run(t, sb, "list_dir", `{}`); err != nil || r.Output != "a.txt\nescape\nsub/\n" {
		t.Fatalf("list = %q, %v", r.Output, err)
	}
	if r, err := run(t, sb, "search", `{"pattern":"func \\w+"}`); err != nil || !strings.Contains(r.Output, "sub/b.go:2: func Hello() {}") || strings.Contains(r.Output, "s3cr3t") {
		t.Fatalf("search = %q, %v", r.Output, err)
	}
	if _, err := run(t, sb, "search", `{"pattern":"("}`); category(err) != tools.InvalidArguments {
		t.Fatalf("bad pattern: %v", err)
	}
}

func TestShell(t *testing.T) {
	sb, _ := sandbox(t)
	t.Setenv("AR_TEST_SECRET", "leak")
	r, err := run(t, sb, "shell", `{"command":"cat; pwd; echo ${AR_TEST_SECRET:-none}","stdin":"from stdin\n","cwd":"sub"}`)
	if err != nil || r.Output != "exit status 0\nfrom stdin\n"+filepath.Join(sb.Root, "sub")+"\nnone\n" {
		t.Fatalf("shell = %q, %v", r.Output, err)
	}
	if _, err := run(t, sb, "shell", `{"command":"echo oops; exit 3"}`); category(err) != tools.ExitStatus || !strings.Contains(err.(*tools.Failure).Output, "oops") {
		t.Fatalf("exit 3: %v", err)
	}
	start := time.Now()
	if _, err := run(t, sb, "shell", `{"command":"sleep 30 & sleep 30","timeout_ms":200}`); category(err) != tools.TimedOut {
		t.Fatalf("timeout: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the timeout did not kill the process group (%v)", time.Since(start))
	}
	r, err = run(t, sb, "shell", `{"command":"head -c 5000 /dev/zero"}`)
	if err != nil || !r.Truncated || r.Bytes != 5000 || len(r.Output) > 1100 {
		t.Fatalf("cap: truncated=%v bytes=%d len=%d %v", r.Truncated, r.Bytes, len(r.Output), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-time.After(100 * time.Millisecond); cancel() }()
	if _, err := (tools.Shell{}).Run(ctx, sb, json.RawMessage(`{"command":"sleep 30"}`)); category(err) != tools.Cancelled {
		t.Fatalf("interrupt: %v", err)
	}
}

func TestSpecsAndPlans(t *testing.T) {
	sb, _ := sandbox(t)
	want := map[string]eventsv1.Access{"read_file": eventsv1.Access_ACCESS_READ, "list_dir": eventsv1.Access_ACCESS_READ,
		"search": eventsv1.Access_ACCESS_READ, "write_file": eventsv1.Access_ACCESS_WRITE, "shell": eventsv1.Access_ACCESS_EXECUTE}
	args := map[string]string{"read_file": `{"path":"a.txt"}`, "list_dir": `{}`, "search": `{"pattern":"x"}`,
		"write_file": `{"path":"sub/x","content":""}`, "shell": `{"command":"ls"}`}
	for name, tool := range tools.Builtins() {
		s := tool.Spec()
		var schema map[string]any
		if err := json.Unmarshal([]byte(s.Schema), &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s schema: %v", name, err)
		}
		if s.ReadOnly && !s.ConcurrencySafe || s.ReadOnly == s.Destructive {
			t.Errorf("%s flags %+v", name, s)
		}
		a, err := tool.Plan(sb, json.RawMessage(args[name]))
		if err != nil || a.Access != want[name] {
			t.Errorf("%s plan = %+v, %v", name, a, err)
		}
	}
}
