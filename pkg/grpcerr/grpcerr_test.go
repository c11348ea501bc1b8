package grpcerr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/pkg/projector"
)

// The kinds the pinned test through real gRPC (services/all) cannot
// provoke on demand: the shared machinery's transient failures.
func TestStatusOfTheSharedMachinery(t *testing.T) {
	cases := []struct {
		err   error
		code  codes.Code
		retry time.Duration
	}{
		{fmt.Errorf("append: %w", eventlog.ErrConflict), codes.Aborted, 100 * time.Millisecond},
		{command.ErrExhausted, codes.Aborted, 100 * time.Millisecond},
		{projector.ErrBehind, codes.Unavailable, 500 * time.Millisecond},
		{fault.Unavailable("not ready", 2*time.Second), codes.Unavailable, 2 * time.Second},
		{fault.Exhausted("QUOTA_EXHAUSTED", "no quota", 3*time.Second, nil), codes.ResourceExhausted, 3 * time.Second},
		{fault.Conflict("lost a race", 0), codes.Aborted, 0},
		{eventlog.ErrInvalid, codes.Internal, 0},
		{context.DeadlineExceeded, codes.DeadlineExceeded, 0},
		{context.Canceled, codes.Canceled, 0},
		{fault.PermissionDenied("", "not yours", nil), codes.PermissionDenied, 0},
		{fault.Unauthenticated("no credentials"), codes.Unauthenticated, 0},
		{status.Error(codes.OutOfRange, "kept"), codes.OutOfRange, 0},
		{errors.New("redis: connection refused"), codes.Unavailable, time.Second}, // an outage: Unavailable with RetryInfo
	}
	for _, c := range cases {
		st := status.Convert(grpcerr.Status(c.err))
		if st.Code() != c.code {
			t.Errorf("%v: code %v, want %v", c.err, st.Code(), c.code)
		}
		var retry time.Duration
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r.GetRetryDelay().AsDuration()
			}
		}
		if retry != c.retry {
			t.Errorf("%v: retry after %v, want %v", c.err, retry, c.retry)
		}
	}
	if grpcerr.Status(nil) != nil {
		t.Error("Status(nil) is not nil")
	}
	// A wrapped fault keeps its kind; the cause of an unknown failure is
	// not shown to the caller.
	if st := status.Convert(grpcerr.Status(fmt.Errorf("load: %w", fault.NotFound("task", "t1")))); st.Code() != codes.NotFound || st.Message() != `task "t1" not found` {
		t.Errorf("wrapped fault: %v", st)
	}
	// A missing resource named by a request field says which field.
	st := status.Convert(grpcerr.Status(&fault.Error{Kind: fault.KindNotFound, Resource: "benchmark configuration", ID: "c1", Subject: "candidate_configuration_id"}))
	var info *errdetails.ResourceInfo
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.ResourceInfo); ok {
			info = ri
		}
	}
	if st.Code() != codes.NotFound || st.Message() != `candidate_configuration_id: benchmark configuration "c1" not found` ||
		info.GetResourceName() != "c1" || info.GetDescription() != "named by candidate_configuration_id" {
		t.Errorf("not found with a subject: %v %v", st, info)
	}
	if st := status.Convert(grpcerr.Status(errors.New("secret dsn"))); st.Message() != "a dependency failed; retry the request" {
		t.Errorf("unknown failure leaks: %q", st.Message())
	}
}

// Every violated field is named, in the details and in the message.
func TestStatusOfInvalidFields(t *testing.T) {
	st := status.Convert(grpcerr.Status(fault.InvalidFields(
		fault.Violation{Field: "session_id", Description: "required", Reason: "REQUIRED"},
		fault.Violation{Description: "one of input or resume is needed"})))
	if st.Code() != codes.InvalidArgument || st.Message() != "invalid request: session_id: required; one of input or resume is needed" {
		t.Fatalf("status %v", st)
	}
	var br *errdetails.BadRequest
	for _, d := range st.Details() {
		if b, ok := d.(*errdetails.BadRequest); ok {
			br = b
		}
	}
	if br == nil || len(br.GetFieldViolations()) != 2 || br.GetFieldViolations()[0].GetReason() != "REQUIRED" || br.GetFieldViolations()[1].GetField() != "" {
		t.Fatalf("details %v", st.Details())
	}
}
