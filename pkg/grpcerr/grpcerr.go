// Package grpcerr owns the vocabulary of errors every service answers with
// (DESIGN §10): gRPC status codes with rich details, so a caller learns
// which field is wrong, which precondition failed, what does not exist, or
// when to retry. A caller's mistake is never Internal.
//
// Each service keeps one function that maps its domain errors onto these.
package grpcerr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// Domain identifies agentruntime in google.rpc.ErrorInfo details.
const Domain = "agentruntime.dev"

func with(code codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st := status.New(code, msg)
	if len(details) == 0 {
		return st.Err()
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}

// FieldViolation names a wrong request field (a path like "input.parts[0]").
type FieldViolation struct {
	Field       string
	Description string
}

// InvalidArgument: the request breaks a rule; every violated field is named.
func InvalidArgument(violations ...FieldViolation) error {
	br := &errdetails.BadRequest{}
	msg := "invalid request"
	for i, v := range violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description})
		if i == 0 {
			msg = fmt.Sprintf("invalid request: %s: %s", v.Field, v.Description)
		}
	}
	return with(codes.InvalidArgument, msg, br)
}

// InvalidField is InvalidArgument for one field.
func InvalidField(field, format string, args ...any) error {
	return InvalidArgument(FieldViolation{Field: field, Description: fmt.Sprintf(format, args...)})
}

// NotFound: no such resource for this tenant. Used for another tenant's
// resources too, so existence does not leak.
func NotFound(kind, id string) error {
	return with(codes.NotFound, fmt.Sprintf("%s %q not found", kind, id),
		&errdetails.ResourceInfo{ResourceType: kind, ResourceName: id})
}

// AlreadyExists: a create for an id that is taken by something different.
func AlreadyExists(kind, id, description string) error {
	return with(codes.AlreadyExists, fmt.Sprintf("%s %q already exists: %s", kind, id, description),
		&errdetails.ResourceInfo{ResourceType: kind, ResourceName: id, Description: description})
}

// FailedPrecondition: the state does not allow the command, e.g. an illegal
// transition. reason is a stable UPPER_SNAKE code; description says what
// state would allow it ("task is completed; retry needs failed, cancelled,
// timed_out or lost").
func FailedPrecondition(reason, subject, description string, metadata map[string]string) error {
	return with(codes.FailedPrecondition, description,
		&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{
			Type: reason, Subject: subject, Description: description,
		}}},
		&errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata})
}

// ResourceExhausted: a limit, quota or budget says no; retryAfter (when
// known) says when trying again can succeed.
func ResourceExhausted(reason, description string, retryAfter time.Duration, metadata map[string]string) error {
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: Domain, Metadata: metadata}}
	if retryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	}
	return with(codes.ResourceExhausted, description, details...)
}

// PermissionDenied: the caller's role may not do this.
func PermissionDenied(description string) error {
	return with(codes.PermissionDenied, description)
}

// Infrastructure maps the errors of the shared machinery (event log,
// command executor, projector, context) onto statuses, and returns nil for
// anything else so a service's own mapping can handle its domain errors:
//
//	if st := grpcerr.Infrastructure(err); st != nil { return st }
func Infrastructure(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, command.ErrExhausted), errors.Is(err, eventlog.ErrConflict):
		return with(codes.Aborted, "concurrent changes kept conflicting; retry the request",
			&errdetails.RetryInfo{RetryDelay: durationpb.New(100 * time.Millisecond)})
	case errors.Is(err, projector.ErrBehind):
		return with(codes.Unavailable, "the read model is catching up; retry the request",
			&errdetails.RetryInfo{RetryDelay: durationpb.New(500 * time.Millisecond)})
	case errors.Is(err, eventlog.ErrInvalid):
		// Requests are validated before they become events; an invalid event
		// here is the service's own bug, not the caller's.
		return status.Error(codes.Internal, "internal error: the service produced an invalid event")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled")
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return nil
}
