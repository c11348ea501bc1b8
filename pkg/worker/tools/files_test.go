package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// linkedWorkspace is a workspace that may be written everywhere, a
// directory outside it holding victim (content "original"), and nothing
// else: each test plants its own links.
func linkedWorkspace(t *testing.T) (sb *tools.Sandbox, root, outside, victim string) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	victim = filepath.Join(outside, "victim")
	writeFile(t, victim, "original")
	writeFile(t, filepath.Join(root, "a.txt"), "inside\n")
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "sub", "b.txt"), "bee\n")
	return &tools.Sandbox{Root: root, WriteRoots: []string{root}, MaxOutput: 1024}, root, outside, victim
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func argsJSON(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func failure(t *testing.T, err error) *tools.Failure {
	t.Helper()
	var f *tools.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a tool failure, got %v", err)
	}
	return f
}

// requireViolation: err is the sandbox's refusal of abs for the given
// boundary, and the message the model reads names the path.
func requireViolation(t *testing.T, err error, abs string, kind eventsv1.ViolationKind) {
	t.Helper()
	f := failure(t, err)
	if f.Category != tools.SandboxViolation || f.Path != abs || f.Violation != kind || !strings.Contains(f.Message, abs) {
		t.Fatalf("want a %v sandbox violation of %s, got %+v", kind, abs, f)
	}
}

func requireContent(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Fatalf("%s = %q, %v; want %q", p, b, err, want)
	}
}

func requireAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("%s exists (%v); nothing should have been created there", p, err)
	}
}

// A repository can ship the name the previous write_file used for its
// temporary file as a link to a file elsewhere: the write goes to the file
// asked for, and the outside file is untouched.
func TestWriteFileIgnoresAPlantedTemporaryName(t *testing.T) {
	sb, root, _, victim := linkedWorkspace(t)
	symlink(t, victim, filepath.Join(root, "notes.txt.agentruntime-tmp"))
	symlink(t, victim, filepath.Join(root, ".notes.txt.agentruntime-tmp"))
	if _, err := run(t, sb, "write_file", `{"path":"notes.txt","content":"new notes"}`); err != nil {
		t.Fatal(err)
	}
	requireContent(t, victim, "original")
	requireContent(t, filepath.Join(root, "notes.txt"), "new notes")
	if fi, err := os.Lstat(filepath.Join(root, "notes.txt")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("notes.txt: %v, %v", fi, err)
	}
	// No temporary file is left behind; the planted links are as they were.
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != ".notes.txt.agentruntime-tmp a.txt notes.txt notes.txt.agentruntime-tmp sub" {
		t.Fatalf("workspace holds %s", got)
	}
}

// The file asked for is itself a link leading outside (absolute,
// relative, or dangling to a name that does not exist yet): refused, and
// nothing outside is written or created.
func TestWriteFileRefusesATargetLinkedOutside(t *testing.T) {
	sb, root, outside, victim := linkedWorkspace(t)
	rel, err := filepath.Rel(root, victim)
	if err != nil {
		t.Fatal(err)
	}
	symlink(t, victim, filepath.Join(root, "abs.txt"))
	symlink(t, rel, filepath.Join(root, "rel.txt"))
	symlink(t, filepath.Join(outside, "created"), filepath.Join(root, "dangling.txt"))
	for _, name := range []string{"abs.txt", "rel.txt", "dangling.txt"} {
		_, err := run(t, sb, "write_file", argsJSON(t, map[string]any{"path": name, "content": "pwned"}))
		requireViolation(t, err, filepath.Join(root, name), eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE)
		if fi, err := os.Lstat(filepath.Join(root, name)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s was replaced: %v, %v", name, fi, err)
		}
	}
	requireContent(t, victim, "original")
	requireAbsent(t, filepath.Join(outside, "created"))
	// Read through the same links: refused as well.
	for _, name := range []string{"abs.txt", "rel.txt"} {
		_, err := run(t, sb, "read_file", argsJSON(t, map[string]any{"path": name}))
		requireViolation(t, err, filepath.Join(root, name), eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ)
	}
}

// A directory inside the workspace that is a link to a directory outside:
// no tool reads, lists, searches or writes through it.
func TestFileToolsRefuseADirectoryLinkedOutside(t *testing.T) {
	sb, root, outside, victim := linkedWorkspace(t)
	writeFile(t, filepath.Join(outside, "secret"), "s3cr3t\n")
	symlink(t, outside, filepath.Join(root, "escape"))
	// A link to the link, and a link to it from below: the same place.
	symlink(t, "escape", filepath.Join(root, "escape2"))
	symlink(t, "../escape", filepath.Join(root, "sub", "up"))
	read := eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ
	write := eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE
	for _, dir := range []string{"escape", "escape2", "sub/up"} {
		p := func(name string) string { return filepath.Join(root, dir, name) }
		_, err := run(t, sb, "read_file", argsJSON(t, map[string]any{"path": dir + "/secret"}))
		requireViolation(t, err, p("secret"), read)
		_, err = run(t, sb, "list_dir", argsJSON(t, map[string]any{"path": dir}))
		requireViolation(t, err, filepath.Join(root, dir), read)
		_, err = run(t, sb, "search", argsJSON(t, map[string]any{"pattern": "s3cr3t", "path": dir}))
		requireViolation(t, err, filepath.Join(root, dir), read)
		_, err = run(t, sb, "write_file", argsJSON(t, map[string]any{"path": dir + "/victim", "content": "pwned"}))
		requireViolation(t, err, p("victim"), write)
		_, err = run(t, sb, "write_file", argsJSON(t, map[string]any{"path": dir + "/new.txt", "content": "pwned"}))
		requireViolation(t, err, p("new.txt"), write)
		_, err = run(t, sb, "write_file", argsJSON(t, map[string]any{"path": dir + "/deeper/x.txt", "content": "pwned"}))
		requireViolation(t, err, p("deeper/x.txt"), write)
	}
	requireContent(t, victim, "original")
	requireAbsent(t, filepath.Join(outside, "new.txt"))
	requireAbsent(t, filepath.Join(outside, "deeper"))
	// Searching the whole workspace does not follow the link either.
	if r, err := run(t, sb, "search", `{"pattern":"s3cr3t|bee"}`); err != nil || r.Output != "sub/b.txt:1: bee\n" {
		t.Fatalf("search = %q, %v", r.Output, err)
	}
}

// A named pipe in the workspace: read_file, list_dir and write_file say
// what it is at once instead of waiting for a writer, and search passes it
// by. The deadline is far beyond what the calls take; a call that blocked
// on the pipe would reach it.
func TestFileToolsDoNotWaitOnANamedPipe(t *testing.T) {
	sb, root, _, _ := linkedWorkspace(t)
	pipe := filepath.Join(root, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	const deadline = 10 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	type answer struct {
		res tools.Result
		err error
	}
	call := func(name, args string) (tools.Result, error) {
		t.Helper()
		done := make(chan answer, 1)
		start := time.Now()
		go func() {
			res, err := tools.Builtins()[name].Run(ctx, sb, json.RawMessage(args))
			done <- answer{res, err}
		}()
		select {
		case a := <-done:
			if took := time.Since(start); took > deadline/4 {
				t.Fatalf("%s %s took %v", name, args, took)
			}
			return a.res, a.err
		case <-time.After(deadline + 5*time.Second):
			t.Fatalf("%s %s is still waiting on the pipe", name, args)
		}
		return tools.Result{}, nil
	}
	for name, args := range map[string]string{
		"read_file":  `{"path":"pipe"}`,
		"list_dir":   `{"path":"pipe"}`,
		"write_file": `{"path":"pipe","content":"x"}`,
	} {
		_, err := call(name, args)
		if f := failure(t, err); f.Category != tools.InvalidArguments || !strings.Contains(f.Message, pipe) || !strings.Contains(f.Message, "named pipe") {
			t.Fatalf("%s on a pipe: %+v", name, f)
		}
	}
	if fi, err := os.Lstat(pipe); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the pipe was replaced: %v, %v", fi, err)
	}
	if r, err := call("search", `{"pattern":"."}`); err != nil || r.Output != "a.txt:1: inside\nsub/b.txt:1: bee\n" {
		t.Fatalf("search = %q, %v", r.Output, err)
	}
	// A directory is not read as a file either.
	_, err := call("read_file", `{"path":"sub"}`)
	if f := failure(t, err); f.Category != tools.InvalidArguments || !strings.Contains(f.Message, "is a directory") {
		t.Fatalf("read_file on a directory: %+v", f)
	}
}

func TestReadFileHonoursCancellation(t *testing.T) {
	sb, _, _, _ := linkedWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tools.ReadFile{}.Run(ctx, sb, json.RawMessage(`{"path":"a.txt"}`))
	if f := failure(t, err); f.Category != tools.Cancelled {
		t.Fatalf("read_file after cancellation: %+v", f)
	}
}

// A file far larger than the output cap is not read into memory: the
// result is its first MaxOutput bytes, marked truncated, with the file's
// size as what the tool produced.
func TestReadFileOfAHugeFileReadsOnlyTheCap(t *testing.T) {
	sb, root, _, _ := linkedWorkspace(t)
	const size = 1 << 30
	f, err := os.Create(filepath.Join(root, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("head\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // sparse: no disk, no time
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := run(t, sb, "read_file", `{"path":"huge.bin"}`)
	runtime.ReadMemStats(&after)
	if err != nil || len(r.Output) != sb.MaxOutput || !r.Truncated || r.Bytes != size || !strings.HasPrefix(r.Output, "head\n") {
		t.Fatalf("read_file huge: len %d truncated %v bytes %d prefix %q, %v", len(r.Output), r.Truncated, r.Bytes, r.Output[:min(len(r.Output), 8)], err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 8<<20 {
		t.Fatalf("reading the head of a 1 GiB file allocated %d bytes", allocated)
	}
}

// Line windows: exact when they fit, cut to the cap with their length
// said when they do not.
func TestReadFileWindows(t *testing.T) {
	sb, root, _, _ := linkedWorkspace(t)
	var b strings.Builder
	for i := range 100 {
		line := strings.Repeat(string(rune('a'+i%26)), 99) + "\n"
		b.WriteString(line)
	}
	writeFile(t, filepath.Join(root, "lines.txt"), b.String())
	all := b.String()
	for _, c := range []struct {
		args      string
		want      string
		bytes     int
		truncated bool
	}{
		{`{"path":"lines.txt","offset":3,"limit":2}`, all[200:400], 200, false},
		{`{"path":"lines.txt","offset":100,"limit":5}`, all[9900:], 100, false},
		{`{"path":"lines.txt","offset":101}`, "", 0, false},
		{`{"path":"lines.txt","offset":2,"limit":50}`, all[100:1124], 5000, true},
		{`{"path":"lines.txt","offset":2}`, all[100:1124], 9900, true},
		{`{"path":"lines.txt"}`, all[:1024], 10000, true},
	} {
		r, err := run(t, sb, "read_file", c.args)
		if err != nil || r.Output != c.want || r.Bytes != c.bytes || r.Truncated != c.truncated {
			t.Errorf("read_file %s: len %d bytes %d truncated %v, %v; want len %d bytes %d truncated %v",
				c.args, len(r.Output), r.Bytes, r.Truncated, err, len(c.want), c.bytes, c.truncated)
		}
	}
}

// Links that stay inside the roots keep working: relative and absolute
// file links and directory links read and list as their targets; a write
// through a directory link lands in the target directory; a write to a
// file that is a link replaces the link (the write happens at the path
// the call named, never at the file the link names).
func TestLinksInsideTheRootsStillWork(t *testing.T) {
	sb, root, _, _ := linkedWorkspace(t)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, "shared.txt"), "shared\n")
	sb.ReadRoots = []string{root, other}
	symlink(t, "a.txt", filepath.Join(root, "rel.txt"))
	symlink(t, filepath.Join(root, "a.txt"), filepath.Join(root, "abs.txt"))
	symlink(t, "sub", filepath.Join(root, "dir"))
	symlink(t, filepath.Join(other, "shared.txt"), filepath.Join(root, "shared.txt"))
	for path, want := range map[string]string{"rel.txt": "inside\n", "abs.txt": "inside\n", "dir/b.txt": "bee\n", "shared.txt": "shared\n"} {
		if r, err := run(t, sb, "read_file", argsJSON(t, map[string]any{"path": path})); err != nil || r.Output != want {
			t.Errorf("read_file %s = %q, %v", path, r.Output, err)
		}
	}
	if r, err := run(t, sb, "list_dir", `{"path":"dir"}`); err != nil || r.Output != "b.txt\n" {
		t.Fatalf("list_dir dir = %q, %v", r.Output, err)
	}
	if r, err := run(t, sb, "search", `{"pattern":"bee","path":"dir"}`); err != nil || r.Output != "dir/b.txt:1: bee\n" {
		t.Fatalf("search dir = %q, %v", r.Output, err)
	}
	if _, err := run(t, sb, "write_file", `{"path":"dir/new.txt","content":"via the link"}`); err != nil {
		t.Fatal(err)
	}
	requireContent(t, filepath.Join(root, "sub", "new.txt"), "via the link")
	if _, err := run(t, sb, "write_file", `{"path":"rel.txt","content":"replaced"}`); err != nil {
		t.Fatal(err)
	}
	requireContent(t, filepath.Join(root, "rel.txt"), "replaced")
	if _, err := run(t, sb, "write_file", `{"path":"abs.txt","content":"replaced too"}`); err != nil {
		t.Fatal(err)
	}
	requireContent(t, filepath.Join(root, "abs.txt"), "replaced too")
	for _, name := range []string{"rel.txt", "abs.txt"} {
		if fi, err := os.Lstat(filepath.Join(root, name)); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("%s after the write: %v, %v", name, fi, err)
		}
	}
	requireContent(t, filepath.Join(root, "a.txt"), "inside\n")
	// other is a read root, not a write root.
	_, err := run(t, sb, "write_file", argsJSON(t, map[string]any{"path": filepath.Join(other, "shared.txt"), "content": "x"}))
	requireViolation(t, err, filepath.Join(other, "shared.txt"), eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE)
	requireContent(t, filepath.Join(other, "shared.txt"), "shared\n")
}

// Replacing a file keeps its permission bits.
func TestWriteFileKeepsTheMode(t *testing.T) {
	sb, root, _, _ := linkedWorkspace(t)
	script := filepath.Join(root, "run.sh")
	writeFile(t, script, "#!/bin/sh\n")
	if err := os.Chmod(script, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, sb, "write_file", `{"path":"run.sh","content":"#!/bin/sh\necho hi\n"}`); err != nil {
		t.Fatal(err)
	}
	requireContent(t, script, "#!/bin/sh\necho hi\n")
	if fi, err := os.Stat(script); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("run.sh mode %v, %v", fi.Mode(), err)
	}
}
