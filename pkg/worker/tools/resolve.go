package tools

import (
	"path/filepath"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxResolved bounds the resolutions one evaluation carries (the
// permission service takes at most 256).
const maxResolved = 256

// maxWords bounds how many words of a command line are looked at, and
// maxProbes how many paths (a word under one of the line's directories)
// are resolved.
const (
	maxWords  = 1024
	maxProbes = 4096
)

// Resolution is a path of a call as the permission service will judge it
// and the path it leads to through symbolic links.
type Resolution struct{ Path, Resolved string }

// ResolveShellPaths finds the words of a command line that name existing
// paths and resolve, through symbolic links, somewhere else than their
// name says: README.md linking to /etc/passwd, a directory linking out.
// The permission service judges a command's paths by name, relative to
// the cwd and to the literal cd targets of the line; for each such path a
// link leads elsewhere, it gets the link's target too and judges both.
// Paths are absolute; a target inside one of the roots is given under the
// root's name, so a root that is itself reached through a link (/tmp on
// some systems) does not make every path look outside. complete is false
// when the line has more words, paths or links than are looked at: the
// caller must not have it judged on a partial answer.
func ResolveShellPaths(line, cwd string, roots []string) (out []Resolution, complete bool) {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, true // the service refuses to bound what does not parse
	}
	var words []string
	dirs := []string{cwd}
	syntax.Walk(file, func(n syntax.Node) bool {
		if len(words) > maxWords {
			return false
		}
		switch x := n.(type) {
		case *syntax.CallExpr:
			// cd's targets: the service judges what follows in them.
			if len(x.Args) == 2 {
				if name, ok := literal(x.Args[0]); ok && name == "cd" {
					if d, ok := literal(x.Args[1]); ok {
						dirs = append(dirs, join(dirs[len(dirs)-1], d))
					}
				}
			}
		case *syntax.Word:
			if v, ok := literal(x); ok {
				words = append(words, v)
				if strings.HasPrefix(v, "-") {
					// --file=x, -fx is not followed: --opt=value only.
					if _, val, found := strings.Cut(v, "="); found {
						words = append(words, val)
					}
				}
			}
		}
		return true
	})
	realRoots := make([]string, len(roots))
	for i, r := range roots {
		realRoots[i] = realPath(filepath.Clean(r))
	}
	if len(words) > maxWords {
		return nil, false
	}
	seen := map[string]bool{}
	for _, w := range words {
		if w == "" || strings.HasPrefix(w, "~") || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "/") {
			continue
		}
		for _, d := range dirs {
			p := join(d, w)
			if seen[p] {
				continue
			}
			if len(out) >= maxResolved || len(seen) >= maxProbes {
				return nil, false
			}
			seen[p] = true
			real := realPath(p)
			for i, rr := range realRoots {
				if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					real = filepath.Join(filepath.Clean(roots[i]), rel)
					break
				}
			}
			if real != p {
				out = append(out, Resolution{Path: p, Resolved: real})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, true
}

func join(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// literal is a word's value when it needs no expansion.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			if x.Dollar {
				return "", false
			}
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
