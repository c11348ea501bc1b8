package worker_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// logBuffer is a worker log the test can read while the worker writes it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// While permission is not serving the worker claims nothing and says
// which service it waits for; once it serves, the queued turn runs.
func TestWorkerClaimsNothingWhilePermissionIsNotServing(t *testing.T) {
	rt := startRuntime(t)
	permissionName := permissionv1.PermissionService_ServiceDesc.ServiceName
	rt.srv.MarkNotServing(permissionName)
	logs := &logBuffer{}
	rt.startWorker(t, scripted(t, demoScript), workspace(t), func(c *worker.Config) {
		c.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(logs, testWriter{t}), nil))
	})
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", TurnId: "turn1", Input: text("notes")}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the worker to say permission is not serving", func() bool {
		l := logs.String()
		return strings.Contains(l, "not claiming") && strings.Contains(l, permissionName+" (NOT_SERVING)")
	})
	if l := logs.String(); strings.Contains(l, "ControlService (") || strings.Contains(l, "RoutingService (") {
		t.Fatalf("the worker blamed a serving service:\n%s", l)
	}
	servedAt := time.Now()
	rt.srv.MarkServing(permissionName)
	started := tl.until("turn.started")
	if at := started.GetTimestamp().AsTime(); at.Before(servedAt) {
		t.Fatalf("turn.started at %s, before permission served (%s): the worker claimed while permission was down", at, servedAt)
	}
	tl.until("action.required")
}

// A permission call that fails for infrastructure reasons is retried
// within bounds: two Unavailable answers cost the turn nothing.
func TestPermissionUnavailableBrieflyIsRetried(t *testing.T) {
	rt := startRuntime(t)
	rt.failPermission.Store(2)
	rt.startWorker(t, scripted(t, demoScript), workspace(t))
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("notes")}); err != nil {
		t.Fatal(err)
	}
	respond(t, rt, tl.until("action.required").GetActionId(), "allow_once")
	tl.until("turn.completed")
	for _, ev := range tl.seen {
		if ev.GetType() == "tool.failed" {
			t.Fatalf("a retried permission call still failed the tool: %v", ev)
		}
	}
	if n := rt.failPermission.Load(); n != 0 {
		t.Fatalf("%d injected failures left: the permission service was not called as expected", n)
	}
}

// A turn whose permission checks could not be made (beyond the retry
// bound) ends failed, never completed, even when the model says it is done.
func TestTurnWhosePermissionChecksFailedIsNotCompleted(t *testing.T) {
	rt := startRuntime(t)
	rt.failPermission.Store(-1)
	rt.startWorker(t, scripted(t, demoScript), workspace(t), func(c *worker.Config) { c.InfraRetry = 300 * time.Millisecond })
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(context.Background(), &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("notes")}); err != nil {
		t.Fatal(err)
	}
	failed := tl.until("turn.failed")
	if got := failed.GetTurnFailed().GetCategory(); got != "permission_unavailable" {
		t.Fatalf("turn.failed category %q, want permission_unavailable: %v", got, failed)
	}
	for _, ev := range tl.seen {
		if ev.GetType() == "turn.completed" {
			t.Fatalf("turn completed although no permission check could be made: %v", testkit.Types(tl.seen))
		}
	}
}
