package domain

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct{ cwd, in, want string }{
		{"/work", "a/b", "/work/a/b"},
		{"/work", "../etc/passwd", "/etc/passwd"},
		{"/work", "/work/../../../etc", "/etc"},
		{"/work", "./a//b/./c/..", "/work/a/b"},
		{"/", "..", "/"},
		{"/work", "/abs", "/abs"},
		{"/work/", "x", "/work/x"},
		// Fullwidth solidus and one-dot leaders are names, not separators.
		{"/work", "..／etc", "/work/..／etc"},
		{"/work", "\u2024\u2024/x", "/work/\u2024\u2024/x"},
		// NFD and NFC spellings of "é" normalize to one.
		{"/work", "e\u0301", "/work/\u00e9"},
	} {
		got, err := NormalizePath(tc.cwd, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizePath(%q, %q) = %q, %v; want %q", tc.cwd, tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ cwd, in string }{
		{"/work", ""},
		{"/work", "~/x"},
		{"", "rel"},
		{"relative", "x"},
		{"/work", "a\x00b"},
		{"/work", "a\u202eb"},                 // right-to-left override
		{"/work", "a\u200db"},                 // zero-width joiner
		{"/work", "a\nb"},                     // control
		{"/work", string([]byte{0xff, 0xfe})}, // invalid UTF-8
	} {
		if got, err := NormalizePath(tc.cwd, tc.in); !errors.Is(err, ErrUncheckablePath) {
			t.Errorf("NormalizePath(%q, %q) = %q, %v; want ErrUncheckablePath", tc.cwd, tc.in, got, err)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		root, p string
		want    bool
	}{
		{"/work", "/work", true},
		{"/work", "/work/a", true},
		{"/work", "/workspace", false},
		{"/work", "/wor", false},
		{"/", "/anything", true},
		{"/work/a", "/work", false},
	} {
		if got := Within(tc.root, tc.p); got != tc.want {
			t.Errorf("Within(%q, %q) = %v", tc.root, tc.p, got)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"/src/**", "/src", true},
		{"/src/**", "/src/a/b.go", true},
		{"/src/*", "/src/a/b.go", false},
		{"/src/*.go", "/src/a.go", true},
		{"/src/?.go", "/src/ab.go", false},
		{"**/.env", "/work/x/.env", true},
		{"/etc/**", "/etcetera", false},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 60), false},
	} {
		if got := MatchPathGlob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("MatchPathGlob(%q, %q) = %v", tc.pattern, tc.s, got)
		}
	}
	if !MatchGlob("*.github.com", "api.github.com", '.') || MatchGlob("*.github.com", "github.com", '.') || MatchGlob("*.github.com", "a.b.github.com", '.') {
		t.Error("host globs: * stays within one label")
	}
	if !MatchGlob("fs.*", "fs.write", 0) || MatchGlob("fs.*", "shell", 0) {
		t.Error("tool globs")
	}
}

// FuzzNormalizePath: whatever the input, a normalized path is absolute,
// clean, valid UTF-8, free of ".." elements and control characters, stable
// under a second normalization, and inside a root only by whole elements.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"a", "../../etc/passwd", "/work/../x", "./a/./b//c", "..／x", "e\u0301", "a\u202eb", "~/x", "/", "....//", "a/../../../../b", "\u2024\u2024/x", "%2e%2e/x"} {
		f.Add("/work", s)
	}
	f.Fuzz(func(t *testing.T, cwd, in string) {
		got, err := NormalizePath(cwd, in)
		if err != nil {
			if !errors.Is(err, ErrUncheckablePath) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		if !strings.HasPrefix(got, "/") || path.Clean(got) != got || !utf8.ValidString(got) {
			t.Fatalf("NormalizePath(%q, %q) = %q: not absolute, clean UTF-8", cwd, in, got)
		}
		for _, el := range strings.Split(got, "/") {
			if el == ".." || el == "." {
				t.Fatalf("NormalizePath(%q, %q) = %q keeps a %q element", cwd, in, got, el)
			}
		}
		if again, err := NormalizePath("/elsewhere", got); err != nil || again != got {
			t.Fatalf("not stable: %q -> %q, %v", got, again, err)
		}
		if checkText(got) != nil {
			t.Fatalf("%q keeps control or format characters", got)
		}
		root := "/work"
		if Within(root, got) && got != root && !strings.HasPrefix(got, root+"/") {
			t.Fatalf("Within(%q, %q) but not by whole elements", root, got)
		}
	})
}
