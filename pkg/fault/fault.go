// Package fault is the one vocabulary of errors every service's domain and
// app layers return: a caller's mistake (an invalid field), a missing or
// taken resource, a state that does not allow the command (with a stable
// reason code and metadata), a conflict, an exhausted limit or an
// unavailable dependency (with when to retry), a denial. It has no
// transport in it: pkg/grpcerr turns these into gRPC statuses, in one
// function, so every service answers the same way.
package fault

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an Error; each kind is one gRPC code.
type Kind int

const (
	// KindInvalid: a request field breaks a rule (Violations name them).
	KindInvalid Kind = iota + 1
	// KindNotFound: no such resource for the caller's tenant (Resource,
	// ID). Also for another tenant's resources, so existence does not leak.
	KindNotFound
	// KindAlreadyExists: a create for an id that is taken by something
	// different (Resource, ID, Message).
	KindAlreadyExists
	// KindPrecondition: the state does not allow the command (Reason,
	// Subject, Message, Metadata).
	KindPrecondition
	// KindConflict: concurrent changes kept conflicting; retrying the
	// same request can succeed (RetryAfter).
	KindConflict
	// KindExhausted: a limit, quota or budget says no (Reason,
	// Metadata, RetryAfter when known).
	KindExhausted
	// KindUnavailable: a dependency or a read model is not ready; retry
	// (RetryAfter).
	KindUnavailable
	// KindPermissionDenied: the caller may not do this (Reason and
	// Metadata, when set, become an ErrorInfo).
	KindPermissionDenied
	// KindUnauthenticated: the call carries no credentials.
	KindUnauthenticated
	// KindInternal: the service's own bug; the caller sees only that.
	KindInternal
)

// Violation names a wrong request field (a path like "input.parts[0]");
// Reason, when set, is the broken rule as UPPER_SNAKE ("STRING_MIN_LEN").
type Violation struct {
	Field       string
	Description string
	Reason      string
}

// Error is a refusal or failure a service returns to its caller.
type Error struct {
	Kind Kind
	// Violations of a KindInvalid error, the first one the headline.
	Violations []Violation
	// Resource type and id (KindNotFound, KindAlreadyExists).
	Resource, ID string
	// Reason is a stable UPPER_SNAKE code clients branch on
	// (KindPrecondition, KindExhausted).
	Reason string
	// Subject is what the precondition is about, e.g. "task/task_1"; on a
	// KindNotFound, the request field that named the missing resource.
	Subject string
	// Message says what happened and what would allow the command.
	Message  string
	Metadata map[string]string
	// RetryAfter says when trying again can succeed (0: not known).
	RetryAfter time.Duration
	// Err is the cause, for errors.Is and errors.As; callers never see it.
	Err error
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Kind == KindInvalid && len(e.Violations) > 0:
		return e.Violations[0].Field + ": " + e.Violations[0].Description
	case e.Kind == KindNotFound:
		return fmt.Sprintf("%s %q not found", e.Resource, e.ID)
	}
	return e.Reason
}

// Field is the first violated field of a KindInvalid error, else "".
func (e *Error) Field() string {
	if e.Kind != KindInvalid || len(e.Violations) == 0 {
		return ""
	}
	return e.Violations[0].Field
}

// Under returns a copy of a KindInvalid error whose fields sit under
// prefix ("changes[0]" + "." + "model.id"); any other error becomes an
// invalid prefix, saying why.
func (e *Error) Under(prefix string) *Error {
	if e.Kind != KindInvalid {
		return Invalid(prefix, "%s: %s", prefix, e.Error())
	}
	c := *e
	c.Violations = make([]Violation, len(e.Violations))
	for i, v := range e.Violations {
		c.Violations[i] = Violation{Field: prefix + "." + v.Field, Description: v.Description}
	}
	return &c
}

// As returns the *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Is reports whether err's chain holds an Error of kind k.
func Is(err error, k Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == k
}

// Refused reports whether err is a refusal: the request or the state it
// met says no (invalid, not found, already exists, precondition, exhausted,
// denied), as opposed to a transient or internal failure (conflict,
// unavailable, internal) or an error of no kind at all.
func Refused(err error) bool {
	e, ok := As(err)
	if !ok {
		return false
	}
	switch e.Kind {
	case KindConflict, KindUnavailable, KindInternal:
		return false
	}
	return true
}

// HasReason reports whether err's chain holds an Error with reason.
func HasReason(err error, reason string) bool {
	e, ok := As(err)
	return ok && e.Reason == reason
}

// Invalid is a KindInvalid error on one field.
func Invalid(field, format string, args ...any) *Error {
	return InvalidFields(Violation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// InvalidFields is a KindInvalid error naming every violated field.
func InvalidFields(violations ...Violation) *Error {
	return &Error{Kind: KindInvalid, Violations: violations}
}

// NotFound: no resource of that type and id for the caller's tenant.
func NotFound(resource, id string) *Error {
	return &Error{Kind: KindNotFound, Resource: resource, ID: id}
}

// NotFoundWith: no resource of that id, with a message that says where it
// was looked for ("turn t1 not found in thread th1").
func NotFoundWith(resource, id, message string) *Error {
	return &Error{Kind: KindNotFound, Resource: resource, ID: id, Message: message}
}

// AlreadyExists: the id is taken by something different; description says
// by what or what to do.
func AlreadyExists(resource, id, description string) *Error {
	return &Error{Kind: KindAlreadyExists, Resource: resource, ID: id, Message: description}
}

// Precondition: the state of subject does not allow the command; reason
// is a stable code, description says what state would allow it.
func Precondition(reason, subject, description string, metadata map[string]string) *Error {
	return &Error{Kind: KindPrecondition, Reason: reason, Subject: subject, Message: description, Metadata: metadata}
}

// Conflict: concurrent changes kept conflicting.
func Conflict(description string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindConflict, Message: description, RetryAfter: retryAfter}
}

// Exhausted: a limit, quota or budget refuses; retryAfter (when known) says
// when trying again can succeed.
func Exhausted(reason, description string, retryAfter time.Duration, metadata map[string]string) *Error {
	return &Error{Kind: KindExhausted, Reason: reason, Message: description, RetryAfter: retryAfter, Metadata: metadata}
}

// Unavailable: not ready now; retry after retryAfter.
func Unavailable(description string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindUnavailable, Message: description, RetryAfter: retryAfter}
}

// PermissionDenied: the caller may not do this; reason (may be empty) and
// metadata say why, for clients that branch on it.
func PermissionDenied(reason, description string, metadata map[string]string) *Error {
	return &Error{Kind: KindPermissionDenied, Reason: reason, Message: description, Metadata: metadata}
}

// Unauthenticated: the call carries no usable credentials.
func Unauthenticated(description string) *Error {
	return &Error{Kind: KindUnauthenticated, Message: description}
}

// Internal: the service's own bug (an event it built is invalid, say).
func Internal(description string) *Error {
	return &Error{Kind: KindInternal, Message: description}
}

// Sentinel is an error value for errors.Is (a package's ErrConflict, say)
// whose text stays its own while the caller sees it as the fault as:
// shared packages classify their errors where they declare them, so the
// one mapping to statuses needs to know none of them.
func Sentinel(text string, as *Error) error { return &sentinel{text: text, as: as} }

type sentinel struct {
	text string
	as   *Error
}

func (s *sentinel) Error() string { return s.text }

// Unwrap lets As find the classification.
func (s *sentinel) Unwrap() error { return s.as }
