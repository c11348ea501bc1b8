package eventlog

import (
	"fmt"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/ids"
)

// NoSession is the session token of facts that belong to no session (a
// tenant's routing registry, policies...). Ids never start with "_", so it
// cannot collide with a real session.
const NoSession = "_"

// Aggregate names the unit of consistency a command decides on: one subject
// in the log, "<prefix>.<tenant>.<session>.<kind>.<id>". Appends to one
// aggregate are serialized by the expected-last-subject-sequence check.
type Aggregate struct {
	Tenant  string
	Session string // NoSession for session-less facts
	Kind    string // e.g. "session", "thread", "task", "job"
	ID      string
}

func (a Aggregate) validate() error {
	if err := ids.Validate(a.Tenant); err != nil {
		return fmt.Errorf("%w: aggregate tenant: %v", ErrInvalid, err)
	}
	if a.Session != NoSession {
		if err := ids.Validate(a.Session); err != nil {
			return fmt.Errorf("%w: aggregate session: %v", ErrInvalid, err)
		}
	}
	if err := ids.Validate(a.Kind); err != nil {
		return fmt.Errorf("%w: aggregate kind: %v", ErrInvalid, err)
	}
	if err := ids.Validate(a.ID); err != nil {
		return fmt.Errorf("%w: aggregate id: %v", ErrInvalid, err)
	}
	return nil
}

func (a Aggregate) String() string {
	return a.Tenant + "/" + a.Session + "/" + a.Kind + "/" + a.ID
}

// Subjects builds the subjects and filters of one log.
type Subjects struct{ Prefix string }

// Aggregate is the subject an aggregate's events are appended to.
func (s Subjects) Aggregate(a Aggregate) string {
	return strings.Join([]string{s.Prefix, a.Tenant, a.Session, a.Kind, a.ID}, ".")
}

// All is the stream's subject space.
func (s Subjects) All() string { return s.Prefix + ".>" }

// Tenant filters one tenant's whole story.
func (s Subjects) Tenant(tenant string) string { return s.Prefix + "." + tenant + ".>" }

// Session filters one session's whole story.
func (s Subjects) Session(tenant, session string) string {
	return s.Prefix + "." + tenant + "." + session + ".>"
}

// Kind filters every aggregate of one kind in a tenant, across sessions.
func (s Subjects) Kind(tenant, kind string) string {
	return s.Prefix + "." + tenant + ".*." + kind + ".*"
}

// Scope returns the tenant and session tokens of an aggregate subject of
// this log; ok is false for a subject outside it.
func (s Subjects) Scope(subject string) (tenant, session string, ok bool) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".")
	if !ok {
		return "", "", false
	}
	tenant, rest, ok = strings.Cut(rest, ".")
	if !ok {
		return "", "", false
	}
	session, _, ok = strings.Cut(rest, ".")
	return tenant, session, ok
}
