package projector

import "testing"

// A subject is a filter without wildcards: subsumes is also the match.
func TestSubjectMatches(t *testing.T) {
	cases := []struct {
		filter, subject string
		want            bool
	}{
		{"ar.ev.acme.s1.>", "ar.ev.acme.s1.thread.t1", true},
		{"ar.ev.acme.s1.>", "ar.ev.acme.s1", false},
		{"ar.ev.acme.s1.>", "ar.ev.acme.s2.thread.t1", false},
		{"ar.ev.*.*.routing.>", "ar.ev.acme.s1.routing.turn_1", true},
		{"ar.ev.*.*.routing.>", "ar.ev.acme.s1.routingx.turn_1", false},
		{"ar.ev.*.*.routing.*", "ar.ev.acme.s1.routing.turn_1", true},
		{"ar.ev.*.*.routing.*", "ar.ev.acme.s1.routing.turn_1.x", false},
		{"ar.ev.acme.s1.thread.t1", "ar.ev.acme.s1.thread.t1", true},
		{"ar.ev.acme.s1.thread.t1", "ar.ev.acme.s1.thread", false},
		{">", "a", true},
	}
	for _, c := range cases {
		if got := subsumes(c.filter, c.subject); got != c.want {
			t.Errorf("subsumes(%q, %q) = %v, want %v", c.filter, c.subject, got, c.want)
		}
	}
}

// The feed's one subscription reads every consumer's subjects with filters
// that do not overlap (the server refuses overlapping ones).
func TestUnion(t *testing.T) {
	cases := []struct {
		sets [][]string
		want []string
	}{
		{[][]string{{"ar.a.>"}, nil}, nil},
		{[][]string{{"ar.a.>"}, {"ar.a.>"}}, []string{"ar.a.>"}},
		{[][]string{{"ar.*.*.perm.*"}, {"ar.>"}}, []string{"ar.>"}},
		{[][]string{{"ar.>"}, {"ar.*.*.perm.*", "ar.*.*.action.*"}}, []string{"ar.>"}},
		{[][]string{{"ar.*.*.perm.*"}, {"ar.*.*.action.*"}}, []string{"ar.*.*.perm.*", "ar.*.*.action.*"}},
		{[][]string{{"ar.acme.s1.>"}, {"ar.acme.*.task.*"}}, nil},
		{[][]string{{"ar.acme.s1.>"}, {"ar.acme.s2.>"}}, []string{"ar.acme.s1.>", "ar.acme.s2.>"}},
		{[][]string{{"ar.acme.s1.x"}, {"ar.acme.s1.x.y"}}, []string{"ar.acme.s1.x", "ar.acme.s1.x.y"}},
	}
	for _, c := range cases {
		got := union(c.sets...)
		if (got == nil) != (c.want == nil) || len(got) != len(c.want) {
			t.Errorf("union(%q) = %q, want %q", c.sets, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("union(%q) = %q, want %q", c.sets, got, c.want)
			}
		}
	}
}
