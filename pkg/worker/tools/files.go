package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// ReadFile reads a text file, optionally a line window of it.
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

func (ReadFile) Run(_ context.Context, sb *Sandbox, raw json.RawMessage) (Result, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	p, err := sb.CheckRead(a.Path)
	if err != nil {
		return Result{}, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Result{}, ioFailure(err)
	}
	s := string(b)
	if a.Offset > 0 || a.Limit > 0 {
		lines := strings.SplitAfter(s, "\n")
		start := max(a.Offset-1, 0)
		if start > len(lines) {
			start = len(lines)
		}
		end := len(lines)
		if a.Limit > 0 && start+a.Limit < end {
			end = start + a.Limit
		}
		s = strings.Join(lines[start:end], "")
	}
	return sb.cap(s), nil
}

// WriteFile creates or replaces a file inside the write roots.
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
	p, err := sb.CheckWrite(a.Path)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return Result{}, ioFailure(err)
	}
	// Write then rename: a reader never sees half a file.
	tmp := p + ".agentruntime-tmp"
	if err := os.WriteFile(tmp, []byte(a.Content), 0o644); err != nil {
		return Result{}, ioFailure(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return Result{}, ioFailure(err)
	}
	return sb.cap(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), p)), nil
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
	rel, err := listPath(raw)
	if err != nil {
		return Result{}, err
	}
	p, err := sb.CheckRead(rel)
	if err != nil {
		return Result{}, err
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return Result{}, ioFailure(err)
	}
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
	root, err := sb.CheckRead(a.Path)
	if err != nil {
		return Result{}, err
	}
	var hits []string
	walkErr := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, not fatal
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !within(p, sb.readRoots()) {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for n := 1; sc.Scan(); n++ {
			if line := sc.Text(); re.MatchString(line) {
				rel, _ := filepath.Rel(sb.Root, p)
				hits = append(hits, fmt.Sprintf("%s:%d: %s", rel, n, line))
				if len(hits) >= a.MaxResults {
					return fs.SkipAll
				}
			}
		}
		return nil
	})
	if walkErr != nil {
		if ctx.Err() != nil {
			return Result{}, fail(Cancelled, "search cancelled")
		}
		return Result{}, ioFailure(walkErr)
	}
	sort.Strings(hits)
	if len(hits) == 0 {
		return sb.cap("no matches"), nil
	}
	return sb.cap(strings.Join(hits, "\n") + "\n"), nil
}
