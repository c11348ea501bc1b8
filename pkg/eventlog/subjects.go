package eventlog

import (
	"fmt"
	"hash/fnv"
	"strconv"
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
//
// With one partition (the default) an aggregate's subject is
// "<prefix>.<tenant>.<session>.<kind>.<id>". With P > 1 a partition token
// follows the prefix, "<prefix>.p<k>.<tenant>...", k = PartitionOf(tenant,
// session): the subject alone says which stream holds the event
// (docs/adr/0013-partitions-of-the-log.md).
type Subjects struct {
	Prefix string
	// Partitions of the log; 0 and 1 both mean one stream.
	Partitions int
	// view is the partition the filters of Subjects.Partition are confined
	// to, plus one; 0 is the whole log.
	view int
}

func (s Subjects) parts() int { return max(s.Partitions, 1) }

// PartitionOf is the partition of a session's events: fnv-1a of
// "<tenant>.<session>" modulo the partition count. Session-less facts
// (NoSession) hash as that session, so a tenant's are in one partition.
func (s Subjects) PartitionOf(tenant, session string) int {
	n := s.parts()
	if n == 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	_, _ = h.Write([]byte{'.'})
	_, _ = h.Write([]byte(session))
	return int(h.Sum32() % uint32(n))
}

// Partition confines the filters built from the result (All, Tenant,
// Kind) to partition k: the subjects of the k-th stream.
func (s Subjects) Partition(k int) Subjects {
	s.view = k + 1
	return s
}

// in is the subject prefix of partition k.
func (s Subjects) in(k int) string {
	if s.parts() == 1 {
		return s.Prefix
	}
	return s.Prefix + ".p" + strconv.Itoa(k)
}

// any is the subject prefix of a filter across partitions: the view's
// partition, or every partition.
func (s Subjects) any() string {
	switch {
	case s.parts() == 1:
		return s.Prefix
	case s.view > 0:
		return s.in(s.view - 1)
	}
	return s.Prefix + ".*"
}

// Aggregate is the subject an aggregate's events are appended to.
func (s Subjects) Aggregate(a Aggregate) string {
	return strings.Join([]string{s.in(s.PartitionOf(a.Tenant, a.Session)), a.Tenant, a.Session, a.Kind, a.ID}, ".")
}

// All is the log's subject space (of the view's partition, for a view).
func (s Subjects) All() string { return s.any() + ".>" }

// Tenant filters one tenant's whole story.
func (s Subjects) Tenant(tenant string) string { return s.any() + "." + tenant + ".>" }

// Session filters one session's whole story.
func (s Subjects) Session(tenant, session string) string {
	return s.in(s.PartitionOf(tenant, session)) + "." + tenant + "." + session + ".>"
}

// Kind filters every aggregate of one kind in a tenant, across sessions.
func (s Subjects) Kind(tenant, kind string) string {
	return s.any() + "." + tenant + ".*." + kind + ".*"
}

// Scope returns the tenant and session tokens of an aggregate subject of
// this log; ok is false for a subject outside it.
func (s Subjects) Scope(subject string) (tenant, session string, ok bool) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".")
	if !ok {
		return "", "", false
	}
	if s.parts() > 1 {
		if _, rest, ok = strings.Cut(rest, "."); !ok {
			return "", "", false
		}
	}
	tenant, rest, ok = strings.Cut(rest, ".")
	if !ok {
		return "", "", false
	}
	session, _, ok = strings.Cut(rest, ".")
	return tenant, session, ok
}

// partitionOfFilter is the partition a filter is confined to, when it is:
// ok is false for a filter that spans partitions (a wildcard in the
// partition token, or outside the log's prefix).
func (s Subjects) partitionOfFilter(filter string) (int, bool) {
	if s.parts() == 1 {
		return 0, true
	}
	rest, ok := strings.CutPrefix(filter, s.Prefix+".p")
	if !ok {
		return 0, false
	}
	token, _, _ := strings.Cut(rest, ".")
	k, err := strconv.Atoi(token)
	if err != nil || k < 0 || k >= s.parts() {
		return 0, false
	}
	return k, true
}

// confine rewrites a filter that spans partitions (a wildcard partition
// token) to partition k's subjects, so a consumer of the k-th stream asks
// it only for subjects it holds.
func (s Subjects) confine(filter string, k int) string {
	if s.parts() == 1 {
		return filter
	}
	if rest, ok := strings.CutPrefix(filter, s.Prefix+".*."); ok {
		return s.in(k) + "." + rest
	}
	if filter == s.Prefix+".>" {
		return s.in(k) + ".>"
	}
	return filter
}
