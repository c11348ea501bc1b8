package tools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// TestShellPlanResolvesLinks: the plan of a shell call names, for each
// word of the command that a link leads elsewhere, where it leads, so the
// permission service judges the target and not only the name; a cwd
// outside the read roots is refused before the call is judged.
func TestShellPlanResolvesLinks(t *testing.T) {
	sb, outside := sandbox(t)
	root := sb.Root
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "inside-link")); err != nil {
		t.Fatal(err)
	}
	plan := func(args string) (tools.Access, error) {
		return tools.Shell{}.Plan(sb, json.RawMessage(args))
	}
	acc, err := plan(`{"command":"cat notes.txt a.txt inside-link; grep -r x escape --file=escape/secret; cd escape && ls secret"}`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range acc.Resolved {
		got[r.Path] = r.Resolved
	}
	want := map[string]string{
		filepath.Join(root, "notes.txt"):     filepath.Join(outside, "secret"),
		filepath.Join(root, "escape"):        outside,
		filepath.Join(root, "escape/secret"): filepath.Join(outside, "secret"),
		filepath.Join(root, "inside-link"):   filepath.Join(root, "a.txt"),
	}
	for p, r := range want {
		if got[p] != r {
			t.Errorf("%s resolves to %q, want %q (all: %v)", p, got[p], r, got)
		}
	}
	if _, ok := got[filepath.Join(root, "a.txt")]; ok {
		t.Errorf("a path that is no link is not reported: %v", got)
	}
	if acc.Cwd != root {
		t.Errorf("cwd %q, want the root %q", acc.Cwd, root)
	}
	if _, err := plan(`{"command":"ls","cwd":"` + outside + `"}`); category(err) != tools.SandboxViolation {
		t.Fatalf("a cwd outside the read roots: %v", err)
	}
	if _, err := plan(`{"command":"ls","cwd":"escape"}`); category(err) != tools.SandboxViolation {
		t.Fatalf("a cwd linked outside the read roots: %v", err)
	}
	if acc, err := plan(`{"command":"ls","cwd":"sub"}`); err != nil || acc.Cwd != filepath.Join(root, "sub") {
		t.Fatalf("a cwd inside: %+v %v", acc, err)
	}
	// Too many words to check is refused, not judged on part of them.
	if _, err := plan(`{"command":"echo` + strings.Repeat(" x", 2000) + `"}`); category(err) != tools.InvalidArguments {
		t.Fatalf("a command of 2,000 words: %v", err)
	}
}
