// Package ids owns the identifiers of runtime facts: generating sortable,
// prefixed ids and validating caller-supplied ones.
//
// Ids become NATS subject tokens (docs/architecture.md, "Subjects and
// streams"), so a valid id never contains
// '.', '*', '>' or white space, and its length is bounded. Generated ids are
// "<prefix>_<ULID>": they sort by creation time, which keeps listings and
// Redis sorted sets in a natural order.
package ids

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// MaxLen bounds every id, caller-supplied or generated.
const MaxLen = 128

// Prefixes of generated ids, one per kind of runtime identity.
const (
	Event    = "evt"
	Session  = "sess"
	Thread   = "thr"
	Turn     = "turn"
	Task     = "task"
	Run      = "run"
	Attempt  = "att"
	Step     = "step"
	ToolCall = "call"
	Action   = "act"
	Subagent = "sub"
	Process  = "proc"
	Job      = "job"
	JobItem  = "item"
	Channel  = "chan"
	Evidence = "evd"
	Artifact = "art"
	Request  = "req"
	Runtime  = "rt"

	// PermissionAction prefixes the ids of the actions that ask a person
	// to approve a permission request: the permission service mints them
	// (EvaluatePermission's approval_action_id) and the control service's
	// permission reactor alone opens them. They are reserved (Reserved):
	// no caller chooses one.
	PermissionAction = "perm"
)

// Reserved says whether id is in a namespace only the runtime mints:
// "perm_..." (PermissionAction). A caller-supplied action id there is
// refused, so the action a person approves for a permission request can
// only be the one the runtime opened with the runtime's prompt.
func Reserved(id string) bool {
	return strings.HasPrefix(id, PermissionAction+"_")
}

var (
	mu      sync.Mutex
	entropy io.Reader = ulid.Monotonic(rand.Reader, 0)
)

// New returns a new id with the given prefix, e.g. New(ids.Turn) ->
// "turn_01JCX3Q8Z5V1T2N7R4W9K6M0PA". Ids made in one process are strictly
// increasing even within one millisecond.
func New(prefix string) string {
	mu.Lock()
	id := ulid.MustNew(ulid.Timestamp(time.Now()), entropy)
	mu.Unlock()
	return prefix + "_" + id.String()
}

// Error explains why a value is not a valid id.
type Error struct {
	Value  string
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("invalid id %q: %s", e.Value, e.Reason) }

// Validate reports whether s can be used as an id: 1 to MaxLen characters
// from [A-Za-z0-9_-], starting with a letter or digit. The first character
// rule keeps "_" free for reserved subject tokens.
func Validate(s string) error {
	switch {
	case s == "":
		return &Error{Value: s, Reason: "empty"}
	case len(s) > MaxLen:
		return &Error{Value: s[:16] + "...", Reason: fmt.Sprintf("longer than %d characters", MaxLen)}
	case !alnum(s[0]):
		return &Error{Value: s, Reason: "must start with a letter or digit"}
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '-' {
			return &Error{Value: s, Reason: fmt.Sprintf("character %q at %d is not allowed (use A-Z, a-z, 0-9, _ and -)", c, i)}
		}
	}
	return nil
}

// Pattern is the regular expression equivalent of Validate, used in the
// protovalidate rules of request fields.
const Pattern = `^[A-Za-z0-9][A-Za-z0-9_-]*$`

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Derive returns the id with the given prefix that parts determine: the same
// parts give the same id in every process and after every restart. Commands
// derive their events' ids from what identifies them (an idempotency key, a
// turn id, a position), so a retried command appends the same message ids
// and the log recognises it. It has the shape of a generated id, but it does
// not sort by time.
func Derive(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		// Length-prefixed, so ("a","bc") and ("ab","c") differ.
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	var id ulid.ULID
	copy(id[:], h.Sum(nil))
	return prefix + "_" + id.String()
}
