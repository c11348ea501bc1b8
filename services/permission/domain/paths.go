package domain

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ErrUncheckablePath: a path whose target cannot be known from its text
// (home-relative, shell expansions, globs, control characters, invalid
// UTF-8). Such a path is never inside a sandbox boundary.
var ErrUncheckablePath = errors.New("path cannot be checked")

// NormalizePath returns the absolute, clean, NFC form of p, relative paths
// taken from cwd. It is lexical: it does not follow symlinks (the
// executing host reports resolved paths, checked with CheckPath).
//
// It refuses what would make a lexical check lie: NUL and other control
// characters, Unicode format characters (bidi overrides, zero-width joiners
// that make two names look alike), invalid UTF-8, "~" (the shell's home,
// unknown here) and a relative path without an absolute cwd. Lookalike
// characters such as U+FF0F (fullwidth solidus) are not separators to any
// filesystem, so they stay part of a name and cannot climb out of a root.
func NormalizePath(cwd, p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty", ErrUncheckablePath)
	}
	if err := checkText(p); err != nil {
		return "", err
	}
	if strings.HasPrefix(p, "~") {
		return "", fmt.Errorf("%w: %q is relative to a home directory", ErrUncheckablePath, p)
	}
	if !strings.HasPrefix(p, "/") {
		if cwd == "" || !strings.HasPrefix(cwd, "/") {
			return "", fmt.Errorf("%w: %q is relative and there is no absolute cwd", ErrUncheckablePath, p)
		}
		if err := checkText(cwd); err != nil {
			return "", err
		}
		p = cwd + "/" + p
	}
	// path.Clean resolves "." and "..", collapses separators, and never
	// climbs above "/".
	return path.Clean(norm.NFC.String(p)), nil
}

func checkText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: not valid UTF-8", ErrUncheckablePath)
	}
	for _, r := range s {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%w: contains control or format character %U", ErrUncheckablePath, r)
		}
	}
	return nil
}

// Within reports whether the normalized path p is root or below it. Both
// must be NormalizePath results; the comparison is by whole path elements
// ("/work" does not contain "/workspace").
func Within(root, p string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// WithinAny reports whether p is within one of roots.
func WithinAny(roots []string, p string) bool {
	for _, r := range roots {
		if Within(r, p) {
			return true
		}
	}
	return false
}

// NormalizeRoots normalizes sandbox roots, which must be absolute.
func NormalizeRoots(roots []string) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if !strings.HasPrefix(r, "/") {
			return nil, fmt.Errorf("%w: root %q is not absolute", ErrUncheckablePath, r)
		}
		n, err := NormalizePath("/", r)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}
