package projector

import "testing"

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
		if got := subjectMatches(c.filter, c.subject); got != c.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", c.filter, c.subject, got, c.want)
		}
	}
}
