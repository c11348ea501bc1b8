// Package grpcerr turns the errors services return into the gRPC statuses
// callers see (docs/architecture.md, "Errors: one vocabulary, one
// mapping"), with rich details, so a caller learns which
// field is wrong (BadRequest), which precondition failed and why
// (PreconditionFailure, ErrorInfo reason and metadata), what does not exist
// (ResourceInfo), or when to retry (RetryInfo). A caller's mistake is never
// Internal.
//
// Status is the repository's one error-to-status function: services and
// the server kit return pkg/fault errors and never build statuses
// themselves. It imports nothing of the project but pkg/fault, so any
// package can use it.
package grpcerr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

// Domain identifies agentruntime in google.rpc.ErrorInfo details.
const Domain = "agentruntime.dev"

// Status returns the gRPC status error a caller sees for err: nil for nil,
// the mapped status of a fault.Error anywhere in err's chain (the shared
// packages' sentinels, such as eventlog.ErrConflict, are classified where
// they are declared), the context's own codes, err itself when it already
// is a status, and Unavailable for anything else (a dependency failed; its
// cause is the server's to record, not the caller's to read).
func Status(err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := fault.As(err); ok {
		return fromFault(fe)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "canceled")
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return with(codes.Unavailable, "a dependency failed; retry the request", retry(time.Second)...)
}

func fromFault(e *fault.Error) error {
	switch e.Kind {
	case fault.KindInvalid:
		br := &errdetails.BadRequest{}
		lines := make([]string, 0, len(e.Violations))
		for _, v := range e.Violations {
			br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description, Reason: v.Reason})
			if v.Field != "" {
				lines = append(lines, v.Field+": "+v.Description)
			} else {
				lines = append(lines, v.Description)
			}
		}
		msg := "invalid request"
		if len(lines) > 0 {
			msg += ": " + strings.Join(lines, "; ")
		}
		return with(codes.InvalidArgument, msg, br)
	case fault.KindNotFound:
		if e.Subject != "" {
			// The request field that named it (e.g. one of two ids of the
			// same resource type).
			return with(codes.NotFound, fmt.Sprintf("%s: %s %q not found", e.Subject, e.Resource, e.ID),
				&errdetails.ResourceInfo{ResourceType: e.Resource, ResourceName: e.ID, Description: "named by " + e.Subject})
		}
		return with(codes.NotFound, fmt.Sprintf("%s %q not found", e.Resource, e.ID),
			&errdetails.ResourceInfo{ResourceType: e.Resource, ResourceName: e.ID})
	case fault.KindAlreadyExists:
		return with(codes.AlreadyExists, fmt.Sprintf("%s %q already exists: %s", e.Resource, e.ID, e.Message),
			&errdetails.ResourceInfo{ResourceType: e.Resource, ResourceName: e.ID, Description: e.Message})
	case fault.KindPrecondition:
		return with(codes.FailedPrecondition, e.Message,
			&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: e.Reason, Subject: e.Subject, Description: e.Message,
			}}},
			&errdetails.ErrorInfo{Reason: e.Reason, Domain: Domain, Metadata: e.Metadata})
	case fault.KindConflict:
		return with(codes.Aborted, e.Message, retry(e.RetryAfter)...)
	case fault.KindExhausted:
		details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: e.Reason, Domain: Domain, Metadata: e.Metadata}}
		return with(codes.ResourceExhausted, e.Message, append(details, retry(e.RetryAfter)...)...)
	case fault.KindUnavailable:
		var details []protoadapt.MessageV1
		if e.Reason != "" {
			// e.g. a stream ended by shutdown says where to resume.
			details = append(details, &errdetails.ErrorInfo{Reason: e.Reason, Domain: Domain, Metadata: e.Metadata})
		}
		return with(codes.Unavailable, e.Message, append(details, retry(e.RetryAfter)...)...)
	case fault.KindPermissionDenied:
		if e.Reason == "" {
			return with(codes.PermissionDenied, e.Message)
		}
		return with(codes.PermissionDenied, e.Message, &errdetails.ErrorInfo{Reason: e.Reason, Domain: Domain, Metadata: e.Metadata})
	case fault.KindUnauthenticated:
		return with(codes.Unauthenticated, e.Message)
	case fault.KindInternal:
		return with(codes.Internal, e.Message)
	}
	return status.Error(codes.Internal, "internal error: an error of unknown kind")
}

func retry(after time.Duration) []protoadapt.MessageV1 {
	if after <= 0 {
		return nil
	}
	return []protoadapt.MessageV1{&errdetails.RetryInfo{RetryDelay: durationpb.New(after)}}
}

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
