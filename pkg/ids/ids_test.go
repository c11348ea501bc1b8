package ids

import (
	"regexp"
	"sort"
	"strings"
	"testing"
)

func TestNewIsValidPrefixedAndSortable(t *testing.T) {
	const n = 10000
	got := make([]string, n)
	for i := range got {
		got[i] = New(Turn)
	}
	if !sort.StringsAreSorted(got) {
		t.Fatal("ids made one after another are not in sorted order")
	}
	seen := make(map[string]bool, n)
	for _, id := range got {
		if !strings.HasPrefix(id, "turn_") {
			t.Fatalf("id %q lacks its prefix", id)
		}
		if err := Validate(id); err != nil {
			t.Fatalf("generated id is invalid: %v", err)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestValidate(t *testing.T) {
	re := regexp.MustCompile(Pattern)
	cases := []struct {
		in string
		ok bool
	}{
		{"sess_01JCX3Q8Z5V1T2N7R4W9K6M0PA", true},
		{"a", true},
		{"my-thread_2", true},
		{strings.Repeat("a", MaxLen), true},
		{"", false},
		{strings.Repeat("a", MaxLen+1), false},
		{"_reserved", false},
		{"-dash", false},
		{"a.b", false},
		{"a*", false},
		{"a>", false},
		{"a b", false},
		{"a\tb", false},
		{"tenant/x", false},
		{"é", false},
	}
	for _, c := range cases {
		err := Validate(c.in)
		if (err == nil) != c.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", c.in, err, c.ok)
		}
		// The protovalidate pattern must agree with Validate for every id
		// within the length bound, or requests and the log would disagree.
		if len(c.in) <= MaxLen && c.in != "" && re.MatchString(c.in) != c.ok {
			t.Errorf("Pattern and Validate disagree on %q", c.in)
		}
	}
}

func FuzzValidateMatchesPattern(f *testing.F) {
	re := regexp.MustCompile(Pattern)
	f.Add("sess_1")
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, s string) {
		want := s != "" && len(s) <= MaxLen && re.MatchString(s)
		if got := Validate(s) == nil; got != want {
			t.Fatalf("Validate(%q) ok=%v, pattern says %v", s, got, want)
		}
	})
}

func TestDeriveIsDeterministicValidAndDistinct(t *testing.T) {
	a := Derive(Event, "acme/s/thread/t1", "turn_1", "0")
	if a != Derive(Event, "acme/s/thread/t1", "turn_1", "0") {
		t.Fatal("the same parts gave different ids")
	}
	if err := Validate(a); err != nil {
		t.Fatalf("derived id %q is invalid: %v", a, err)
	}
	for _, other := range [][]string{
		{"acme/s/thread/t1", "turn_1", "1"},
		{"acme/s/thread/t1", "turn_10", ""},
		{"acme/s/thread/t1turn_1", "", "0"},
	} {
		if b := Derive(Event, other...); b == a {
			t.Fatalf("parts %q collide with the first id %q", other, a)
		}
	}
}
