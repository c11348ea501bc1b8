package grpcerr

// The constructors below are what services built statuses with before they
// returned pkg/fault errors; they go when the last service has moved.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// FieldViolation is fault.Violation.
type FieldViolation = fault.Violation

// InvalidField is Status(fault.Invalid(...)).
func InvalidField(field, format string, args ...any) error {
	return Status(fault.Invalid(field, "%s", fmt.Sprintf(format, args...)))
}

// NotFound is Status(fault.NotFound(...)).
func NotFound(kind, id string) error { return Status(fault.NotFound(kind, id)) }

// AlreadyExists is Status(fault.AlreadyExists(...)).
func AlreadyExists(kind, id, description string) error {
	return Status(fault.AlreadyExists(kind, id, description))
}

// FailedPrecondition is Status(fault.Precondition(...)).
func FailedPrecondition(reason, subject, description string, metadata map[string]string) error {
	return Status(fault.Precondition(reason, subject, description, metadata))
}

// ResourceExhausted is Status(fault.Exhausted(...)).
func ResourceExhausted(reason, description string, retryAfter time.Duration, metadata map[string]string) error {
	return Status(fault.Exhausted(reason, description, retryAfter, metadata))
}

// PermissionDenied is Status(fault.PermissionDenied(...)).
func PermissionDenied(description string) error { return Status(fault.PermissionDenied(description)) }

// Infrastructure is Status for the shared machinery's errors and nil for
// anything else.
func Infrastructure(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, command.ErrExhausted), errors.Is(err, eventlog.ErrConflict), errors.Is(err, projector.ErrBehind),
		errors.Is(err, eventlog.ErrInvalid), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Status(err)
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return nil
}
