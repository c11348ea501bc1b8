package tools

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ReadFile reads a text file, optionally a line window of it: a regular
// file only, through a root (confine.go), at most the output cap of it.
type ReadFile struct{}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func (ReadFile) Spec() Spec {
	return Spec{Name: "read_file", Description: "Read a text file. offset/limit select lines (1-based offset).",
		Schema:   `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":0}},"required":["path"],"additionalProperties":false}`,
		ReadOnly: true, ConcurrencySafe: true, Interrupt: "cancel"}
}

func (ReadFile) Plan(sb *Sandbox, raw json.RawMessage) (Access, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return Access{}, err
	}
	if a.Path == "" {
		return Access{}, fail(InvalidArguments, "path is required")
	}
	return Access{Access: eventsv1.Access_ACCESS_READ, Paths: []string{sb.Resolve(a.Path)}}, nil
}

func (ReadFile) Run(ctx context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	abs := sb.Resolve(a.Path)
	var res Result
	err := inRoots("read_file", abs, sb.readRoots(), false, func(r *os.Root, rel string) error {
		f, err := openRegular(r, rel, abs, "read_file")
		if err != nil {
			return err
		}
		defer f.Close()
		res, err = readWindow(ctx, f, a.Offset, a.Limit, sb.maxOutput())
		return err
	})
	return res, err
}

// openRegular opens a regular file for reading. O_NONBLOCK keeps the open
// of a named pipe without a writer from blocking, and the type is taken
// from the open descriptor (fstat), so what is read is what was checked:
// a FIFO, device, socket or directory is refused.
func openRegular(r *os.Root, rel, abs, tool string) (*os.File, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		hint := ""
		if fi.IsDir() {
			hint = " (list_dir lists a directory)"
		}
		return nil, fail(InvalidArguments, "%s is %s, not a regular file: %s reads regular files only%s", abs, kindOf(fi.Mode()), tool, hint)
	}
	return f, nil
}

// readWindow reads lines offset (1-based; 0 is 1) to offset+limit-1 (limit
// 0: to the end) of f, keeping at most capBytes: a file is never read into
// memory whole, and a longer window is truncated to capBytes (the sandbox's
// output cap) with Bytes saying how long it was. Without a window only the
// first capBytes are read. ctx is checked between reads.
func readWindow(ctx context.Context, f *os.File, offset, limit, capBytes int) (Result, error) {
	fi, err := f.Stat()
	if err != nil {
		return Result{}, ioFailure(err)
	}
	size := fi.Size()
	first := max(offset, 1)
	var out []byte
	produced, pos := int64(0), int64(0)
	br := bufio.NewReaderSize(f, 64<<10)
	for line := 1; limit == 0 || line < first+limit; {
		if ctx.Err() != nil {
			return Result{}, fail(Cancelled, "read_file cancelled")
		}
		frag, err := br.ReadSlice('\n')
		pos += int64(len(frag))
		if line >= first {
			produced += int64(len(frag))
			if room := capBytes - len(out); room > 0 {
				out = append(out, frag[:min(room, len(frag))]...)
			}
		}
		if n := len(frag); n > 0 && frag[n-1] == '\n' {
			line++
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return Result{}, ioFailure(err)
		}
		if limit == 0 && line >= first && len(out) >= capBytes {
			// The rest of the file is the rest of the window: its
			// length is known without reading it.
			produced += size - pos
			break
		}
	}
	return Result{Output: string(out), Truncated: produced > int64(len(out)), Bytes: int(produced)}, nil
}

// WriteFile creates or replaces a file inside the write roots, through a
// root (confine.go) and an exclusively created temporary file.
type WriteFile struct{}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (WriteFile) Spec() Spec {
	return Spec{Name: "write_file", Description: "Create or replace a text file with the given content.",
		Schema:      `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`,
		Destructive: true, Interrupt: "finish"}
}

func (WriteFile) Plan(sb *Sandbox, raw json.RawMessage) (Access, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return Access{}, err
	}
	if a.Path == "" {
		return Access{}, fail(InvalidArguments, "path is required")
	}
	return Access{Access: eventsv1.Access_ACCESS_WRITE, Paths: []string{sb.Resolve(a.Path)}}, nil
}

func (WriteFile) Run(_ context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	abs := sb.Resolve(a.Path)
	err := inRoots("write_file", abs, sb.WriteRoots, true, func(r *os.Root, rel string) error {
		return replaceFile(r, rel, abs, sb.WriteRoots, []byte(a.Content))
	})
	if err != nil {
		return Result{}, err
	}
	return sb.cap(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), abs)), nil
}

// replaceFile writes content to a new file beside rel and renames it onto
// rel, so a reader never sees half a file. The temporary file has a random
// name and is created with O_CREATE|O_EXCL, which never follows a link:
// a name planted in advance (a link to a file elsewhere) makes the create
// fail and another name is drawn. The rename replaces what is at rel
// itself, a link included, never what a link points to; a link at rel
// that leads out of the roots is refused rather than replaced, since the
// caller most likely meant the file it points to. (Whether it leads out
// only decides between refusing and replacing the link, both of which
// leave its target alone, so the by-name check for an absolute link,
// which a root never follows, is enough there.)
func replaceFile(r *os.Root, rel, abs string, roots []string, content []byte) error {
	dir := filepath.Dir(rel)
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	switch fi, err := r.Lstat(rel); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case fi.Mode()&os.ModeSymlink != 0:
		if _, err := r.Stat(rel); escapes(err) && !linkStaysIn(r, rel, abs, roots) {
			return err
		}
	case !fi.Mode().IsRegular():
		return fail(InvalidArguments, "%s is %s, not a regular file: write_file replaces regular files only", abs, kindOf(fi.Mode()))
	default:
		perm = fi.Mode().Perm()
	}
	var (
		tmp string
		f   *os.File
		err error
	)
	for range 8 {
		var nonce [8]byte
		_, _ = rand.Read(nonce[:])
		tmp = filepath.Join(dir, "."+filepath.Base(rel)+".agentruntime-tmp-"+hex.EncodeToString(nonce[:]))
		f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(perm) // the mode of the file replaced, whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		_ = r.Remove(tmp)
	}
	return err
}

// linkStaysIn reports whether the link at rel (abs as the call named it)
// names a place inside roots, by name: its target (relative to the link's
// directory) with the links of what exists resolved, a missing target
// included.
func linkStaysIn(r *os.Root, rel, abs string, roots []string) bool {
	dest, err := r.Readlink(rel)
	if err != nil {
		return false
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(filepath.Dir(abs), dest)
	}
	return within(filepath.Clean(dest), roots)
}

// ListDir lists a directory.
type ListDir struct{}

type listArgs struct {
	Path string `json:"path"`
}

func (ListDir) Spec() Spec {
	return Spec{Name: "list_dir", Description: "List a directory's entries (directories end with /).",
		Schema:   `{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`,
		ReadOnly: true, ConcurrencySafe: true, Interrupt: "cancel"}
}

func listPath(raw json.RawMessage) (string, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	return a.Path, nil
}

func (ListDir) Plan(sb *Sandbox, raw json.RawMessage) (Access, error) {
	p, err := listPath(raw)
	if err != nil {
		return Access{}, err
	}
	return Access{Access: eventsv1.Access_ACCESS_READ, Paths: []string{sb.Resolve(p)}}, nil
}

func (ListDir) Run(_ context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	p, err := listPath(raw)
	if err != nil {
		return Result{}, err
	}
	abs := sb.Resolve(p)
	var entries []fs.DirEntry
	err = inRoots("list_dir", abs, sb.readRoots(), false, func(r *os.Root, rel string) error {
		// O_NONBLOCK: a named pipe at the path is refused, not waited on.
		f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fail(InvalidArguments, "%s is %s, not a directory: list_dir lists directories only", abs, kindOf(fi.Mode()))
		}
		entries, err = f.ReadDir(-1)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Name())
		if e.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
	}
	return sb.cap(b.String()), nil
}

// Search finds lines matching a regular expression under a directory.
type Search struct{}

type searchArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	MaxResults int    `json:"max_results"`
}

func (Search) Spec() Spec {
	return Spec{Name: "search", Description: "Search file contents for a regular expression (RE2) under a directory; answers path:line: text.",
		Schema:   `{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"max_results":{"type":"integer","minimum":1}},"required":["pattern"],"additionalProperties":false}`,
		ReadOnly: true, ConcurrencySafe: true, Interrupt: "cancel"}
}

func (Search) parse(raw json.RawMessage) (searchArgs, *regexp.Regexp, error) {
	var a searchArgs
	if err := decode(raw, &a); err != nil {
		return a, nil, err
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil || a.Pattern == "" {
		return a, nil, fail(InvalidArguments, "pattern: %v", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	if a.MaxResults <= 0 {
		a.MaxResults = 200
	}
	return a, re, nil
}

func (s Search) Plan(sb *Sandbox, raw json.RawMessage) (Access, error) {
	a, _, err := s.parse(raw)
	if err != nil {
		return Access{}, err
	}
	return Access{Access: eventsv1.Access_ACCESS_READ, Paths: []string{sb.Resolve(a.Path)}}, nil
}

func (s Search) Run(ctx context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	a, re, err := s.parse(raw)
	if err != nil {
		return Result{}, err
	}
	abs := sb.Resolve(a.Path)
	var hits []string
	err = inRoots("search", abs, sb.readRoots(), false, func(r *os.Root, rel string) error {
		hits = nil
		// The walk goes through the root: it does not follow links (a
		// link is not a regular file and not a directory to descend),
		// and every open stays below the root.
		start := filepath.ToSlash(rel)
		return fs.WalkDir(r.FS(), start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == start {
					return err // the directory asked for: say why not
				}
				return nil // unreadable entries are skipped, not fatal
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if d.IsDir() {
				if n := d.Name(); p != start && (strings.HasPrefix(n, ".") || n == "node_modules") {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := openRegular(r, filepath.FromSlash(p), "", "search")
			if err != nil {
				return nil // replaced by something else since it was listed
			}
			defer f.Close()
			under, _ := filepath.Rel(filepath.FromSlash(start), filepath.FromSlash(p))
			shown, _ := filepath.Rel(sb.Root, filepath.Join(abs, under))
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for n := 1; sc.Scan(); n++ {
				if n%4096 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				if line := sc.Text(); re.MatchString(line) {
					hits = append(hits, fmt.Sprintf("%s:%d: %s", shown, n, line))
					if len(hits) >= a.MaxResults {
						return fs.SkipAll
					}
				}
			}
			return nil
		})
	})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, fail(Cancelled, "search cancelled")
		}
		return Result{}, err
	}
	sort.Strings(hits)
	if len(hits) == 0 {
		return sb.cap("no matches"), nil
	}
	return sb.cap(strings.Join(hits, "\n") + "\n"), nil
}
