package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// The file tools reach a path only through an os.Root opened on one of the
// sandbox's roots. os.Root resolves every component relative to the
// directory it opened (openat with O_NOFOLLOW, one component at a time) and
// follows a symbolic link only while it stays below that directory, so a
// link that points out of the root (a directory link, the file itself, a
// planted temporary name), or one swapped in after a check, fails with an
// error instead of leading the call outside. A check and a later open of
// the same path by name would leave that window open; nothing here opens a
// path by name outside an os.Root.

// errEscapes is the refusal of a link leading out of a root found by this
// package itself (a link the final component of a write names).
var errEscapes = errors.New("a symbolic link leads outside the root")

// escapes reports whether err is a root's refusal of a path leading
// outside it. os.Root reports it with an unexported error whose text is
// "path escapes from parent" (os/file.go); the tests of this package fail
// if that ever changes (the refusals would stop being sandbox violations).
func escapes(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err == errEscapes || err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// inRoot is a root directory and a path below it, as a root names it.
type inRoot struct{ dir, rel string }

// lexicallyUnder is p relative to dir when p is dir or below it.
func lexicallyUnder(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// placements are the roots abs may be reached through, in the order they
// are tried: first the roots abs lies in as written (as configured, then
// with the root's own links resolved), then the roots its resolved path
// lies in, so that a link from one root into another, or an absolute link
// inside a root (which os.Root never follows), still works. Which root is
// tried is only a choice: the open itself is confined to it.
func placements(abs string, roots []string) []inRoot {
	var out []inRoot
	seen := map[inRoot]bool{}
	add := func(dir, p string) {
		if rel, ok := lexicallyUnder(dir, p); ok && !seen[inRoot{dir, rel}] {
			seen[inRoot{dir, rel}] = true
			out = append(out, inRoot{dir, rel})
		}
	}
	for _, r := range roots {
		r = filepath.Clean(r)
		add(r, abs)
		add(realPath(r), abs)
	}
	real := realPath(abs)
	for _, r := range roots {
		add(realPath(filepath.Clean(r)), real)
	}
	return out
}

// inRoots runs fn on abs through the first root that can reach it, for the
// tool op. A path in no root, or one that each root refuses because a link
// leads outside, is a sandbox violation naming the path (and where its
// links lead); a *Failure of fn is returned as it is; any other error is
// a not_found or io_error failure naming abs.
func inRoots(op, abs string, roots []string, write bool, fn func(r *os.Root, rel string) error) error {
	kind, which := eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_READ, "read"
	if write {
		kind, which = eventsv1.ViolationKind_VIOLATION_KIND_FILESYSTEM_WRITE, "write"
	}
	violation := func(format string, args ...any) error {
		f := fail(SandboxViolation, format, args...)
		f.Path, f.Violation = abs, kind
		return f
	}
	cands := placements(abs, roots)
	if len(cands) == 0 {
		return violation("%s is outside the %s roots %v", describe(abs), which, roots)
	}
	var openErr error
	escaped := false
	for _, c := range cands {
		r, err := os.OpenRoot(c.dir)
		if err != nil {
			openErr = err
			continue
		}
		err = fn(r, c.rel)
		r.Close()
		if err == nil {
			return nil
		}
		if !escapes(err) {
			return fileFailure(op, abs, err)
		}
		escaped = true
	}
	if !escaped {
		return fileFailure(op, abs, openErr)
	}
	return violation("%s is refused: a symbolic link on the way leads outside the %s roots %v; links may point only inside them",
		describe(abs), which, roots)
}

// kindOf names a file type for an error the model reads.
func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return fmt.Sprintf("a special file (%v)", m.Type())
}

// fileFailure is err as the model reads it: the tool, the path as the call
// named it (not as a root names it) and the cause.
func fileFailure(op, abs string, err error) error {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	cause := err
	var pe *os.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		cause = pe.Err
	case errors.As(err, &le):
		cause = le.Err
	}
	category := IOError
	if errors.Is(err, fs.ErrNotExist) {
		category = NotFound
	}
	return fail(category, "%s %s: %v", op, abs, cause)
}
