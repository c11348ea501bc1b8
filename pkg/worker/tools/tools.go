// Package tools holds a worker's built-in tools (read_file, write_file,
// list_dir, search, shell): each with a JSON schema and the flags the
// runtime schedules and reports by, and each confined to a sandbox's read
// and write roots. Permission is not decided here: the worker asks the
// permission service with the Access a call declares before running it.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Spec describes a tool to the model and to the runtime.
type Spec struct {
	Name, Description string
	// Schema is the JSON Schema of the arguments.
	Schema          string
	ReadOnly        bool
	Destructive     bool
	ConcurrencySafe bool
	// Interrupt is what an interrupt does to a running call: "cancel"
	// (stop it), "finish" (let it end), "block".
	Interrupt string
}

// ToolSpec is the registry form (RegisterTools).
func (s Spec) ToolSpec() *eventsv1.ToolSpec {
	return &eventsv1.ToolSpec{Name: s.Name, Description: s.Description, InputSchemaJson: s.Schema,
		ReadOnly: s.ReadOnly, Destructive: s.Destructive, ConcurrencySafe: s.ConcurrencySafe, InterruptBehavior: s.Interrupt}
}

// Access is what a call will do, for the permission decision.
type Access struct {
	Access  eventsv1.Access
	Paths   []string
	Command string
	Cwd     string
	// Resolved: paths of the call that symbolic links lead elsewhere, with
	// where they lead (ResolveShellPaths).
	Resolved []Resolution
}

// Result is a call's output as the model sees it.
type Result struct {
	Output string
	// Truncated: Output was cut to the sandbox's output cap.
	Truncated bool
	// Bytes is the size before truncation.
	Bytes int
}

// Failure categories (tool.failed category).
const (
	InvalidArguments = "invalid_arguments"
	SandboxViolation = "sandbox_violation"
	NotFound         = "not_found"
	IOError          = "io_error"
	TimedOut         = "timeout"
	Cancelled        = "cancelled"
	ExitStatus       = "exit_status"
	// LimitExceeded: the call would exceed a bound of the worker (its
	// background processes per turn or in all).
	LimitExceeded = "limit_exceeded"
)

// Failure is a call that did not succeed, with a stable category.
type Failure struct {
	Category, Message string
	// Output produced before the failure (a command's output).
	Output string
	// For a sandbox violation: the path refused (as resolved) and which
	// boundary refused it, so the runner can report it.
	Path      string
	Violation eventsv1.ViolationKind
}

func (f *Failure) Error() string { return f.Category + ": " + f.Message }

func fail(category, format string, args ...any) *Failure {
	return &Failure{Category: category, Message: fmt.Sprintf(format, args...)}
}

// Tool is one built-in tool.
type Tool interface {
	Spec() Spec
	// Plan parses the arguments and says what the call touches.
	Plan(sb *Sandbox, args json.RawMessage) (Access, error)
	// Run performs the call inside the sandbox.
	Run(ctx context.Context, sb *Sandbox, args json.RawMessage) (Result, error)
}

// Sandbox is where tools may act: every path is resolved against Root and
// must fall inside ReadRoots (reads) or WriteRoots (writes).
type Sandbox struct {
	// Root is the working directory relative paths start from.
	Root string
	// ReadRoots and WriteRoots; empty ReadRoots means {Root}; empty
	// WriteRoots means no writes at all.
	ReadRoots, WriteRoots []string
	// EnvAllow names the environment variables a shell command inherits.
	EnvAllow []string
	// MaxOutput caps a result in bytes (default 64 KiB).
	MaxOutput int
	// ShellTimeout is a command's default time limit (default 2 minutes).
	ShellTimeout time.Duration
	// Isolate, when set, is the command line shell commands run under to
	// confine them (e.g. unshare with a new user and network namespace);
	// the shell and its arguments are appended. Empty: no confinement
	// beyond the above.
	Isolate []string
	// Confine, when set, runs shell commands confined on the filesystem:
	// Argv goes between Isolate and the shell, Env is added to the
	// command's environment (pkg/worker/confine's helper and its
	// trigger). Empty: the command sees the worker's filesystem view.
	Confine Wrapper
}

// Wrapper is a command prefix and the variables it needs.
type Wrapper struct {
	Argv, Env []string
}

// DefaultEnvAllow is what a shell command inherits when EnvAllow is empty.
var DefaultEnvAllow = []string{"PATH", "HOME", "LANG", "TERM", "TMPDIR"}

// EffectiveReadRoots is where reads may go.
func (sb *Sandbox) EffectiveReadRoots() []string { return sb.readRoots() }

// EffectiveEnvAllow names the variables a shell command inherits.
func (sb *Sandbox) EffectiveEnvAllow() []string {
	if len(sb.EnvAllow) == 0 {
		return DefaultEnvAllow
	}
	return sb.EnvAllow
}

// shellArgv is /bin/sh -c line, under Isolate and Confine when set.
func (sb *Sandbox) shellArgv(line string) []string {
	argv := append(append([]string(nil), sb.Isolate...), sb.Confine.Argv...)
	return append(argv, "/bin/sh", "-c", line)
}

// shellEnv is the allowlisted environment and what Confine needs.
func (sb *Sandbox) shellEnv() []string {
	return append(allowedEnv(sb.EffectiveEnvAllow()), sb.Confine.Env...)
}

func (sb *Sandbox) maxOutput() int {
	if sb.MaxOutput > 0 {
		return sb.MaxOutput
	}
	return 64 << 10
}

func (sb *Sandbox) readRoots() []string {
	if len(sb.ReadRoots) == 0 {
		return []string{sb.Root}
	}
	return sb.ReadRoots
}

// Resolve makes p absolute (relative to Root) and clean.
func (sb *Sandbox) Resolve(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(sb.Root, p)
	}
	return filepath.Clean(p)
}

// within reports whether p is inside one of roots, after resolving
// symbolic links of what exists, so a link cannot lead outside.
func within(p string, roots []string) bool {
	real := realPath(p)
	for _, r := range roots {
		rr := realPath(filepath.Clean(r))
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// realPath resolves links in the longest existing prefix of p.
func realPath(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// CheckRead refuses a path outside the read roots, by name: it suits a
// place a command starts in (shell's cwd). The file tools do not check and
// then open by name, which a link swapped in between would redirect: they
// open through a root (confine.go).
func (sb *Sandbox) CheckRead(p string) (string, error) {
	abs := sb.Resolve(p)
	if !within(abs, sb.readRoots()) {
		f := fail(SandboxViolation, "%s is outside the read roots %v", describe(abs), sb.readRoots())
		f.Path, f.Violation = abs, eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ
		return "", f
	}
	return abs, nil
}

// describe names a path and, when links lead elsewhere, where.
func describe(abs string) string {
	if real := realPath(abs); real != abs {
		return abs + " (a link to " + real + ")"
	}
	return abs
}

func (sb *Sandbox) cap(s string) Result {
	r := Result{Output: s, Bytes: len(s)}
	if max := sb.maxOutput(); len(s) > max {
		r.Output, r.Truncated = s[:max], true
	}
	return r
}

func decode(args json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(InvalidArguments, "%v", err)
	}
	return nil
}

func ioFailure(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fail(NotFound, "%v", err)
	}
	return fail(IOError, "%v", err)
}

// Builtins returns the built-in tools by name.
func Builtins() map[string]Tool {
	out := map[string]Tool{}
	for _, t := range []Tool{ReadFile{}, WriteFile{}, ListDir{}, Search{}, Shell{}} {
		out[t.Spec().Name] = t
	}
	return out
}
