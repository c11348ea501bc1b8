package worker_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
)

type rewritingHook struct {
	permissionv1.UnimplementedHookHandlerServer
}

// HandleHook moves every write_file to REVIEWED.md.
func (rewritingHook) HandleHook(_ context.Context, r *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
	if r.GetToolName() != "write_file" {
		return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE}, nil
	}
	return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE,
		UpdatedInputJson: `{"path":"REVIEWED.md","content":"reviewed by the hook\n"}`}, nil
}

// A pre_tool_use hook's rewritten input is what the decision judged, so it
// is what runs: the file written is the hook's, never the model's.
func TestHookRewrittenInputIsWhatRuns(t *testing.T) {
	rt := startRuntime(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	permissionv1.RegisterHookHandlerServer(g, rewritingHook{})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	ctx := context.Background()
	perm := permissionv1.NewPermissionServiceClient(rt.conn)
	reg, err := perm.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{
		HookId: "reviewer", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: lis.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	// The worker's decisions come after the hook is in the read model.
	if _, err := perm.ListHooks(ctx, &permissionv1.ListHooksRequest{MinSequence: reg.GetWrite().GetSequence()}); err != nil {
		t.Fatal(err)
	}
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("write notes")}); err != nil {
		t.Fatal(err)
	}
	req := tl.until("action.required")
	var judged *eventsv1.PermissionEvaluated
	for _, ev := range tl.seen {
		if pe := ev.GetPermissionEvaluated(); pe != nil && pe.GetName() == "write_file" {
			judged = pe
		}
	}
	if judged == nil || judged.GetUpdatedInputRef() == nil || !strings.Contains(strings.Join(judged.GetPaths(), ","), "REVIEWED.md") {
		t.Fatalf("the decision did not judge the rewrite: %v", judged)
	}
	if got := req.GetActionRequired().GetContext()["path"]; got != "REVIEWED.md" {
		t.Errorf("the person is asked about path %q, want the rewritten REVIEWED.md", got)
	}
	respond(t, rt, req.GetActionId(), "allow_once")
	tl.until("turn.completed")
	b, err := os.ReadFile(filepath.Join(root, "REVIEWED.md"))
	if err != nil || string(b) != "reviewed by the hook\n" {
		t.Fatalf("REVIEWED.md = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("the model's original path was written: %v", err)
	}
}

type blockingHook struct {
	permissionv1.UnimplementedHookHandlerServer
}

func (blockingHook) HandleHook(_ context.Context, r *permissionv1.HandleHookRequest) (*permissionv1.HandleHookResponse, error) {
	if r.GetToolName() != "write_file" {
		return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_CONTINUE}, nil
	}
	return &permissionv1.HandleHookResponse{Decision: eventsv1.HookOutcome_HOOK_OUTCOME_BLOCK, Reason: "notes are frozen"}, nil
}

// The thread read model says why a call was refused, joined from the
// permission service's facts: the cause kind, the hook run, the path; the
// tool.failed incident carries its category.
func TestThreadReadExplainsARefusal(t *testing.T) {
	rt := startRuntime(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	permissionv1.RegisterHookHandlerServer(g, blockingHook{})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	ctx := context.Background()
	perm := permissionv1.NewPermissionServiceClient(rt.conn)
	reg, err := perm.RegisterHook(ctx, &permissionv1.RegisterHookRequest{Hook: &eventsv1.Hook{
		HookId: "freezer", Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE, Handler: &eventsv1.Hook_GrpcTarget{GrpcTarget: lis.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perm.ListHooks(ctx, &permissionv1.ListHooksRequest{MinSequence: reg.GetWrite().GetSequence()}); err != nil {
		t.Fatal(err)
	}
	root := workspace(t)
	rt.startWorker(t, scripted(t, demoScript), root)
	tl := rt.follow(t, "s1")
	if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "main", Input: text("write notes")}); err != nil {
		t.Fatal(err)
	}
	failed := tl.until("tool.failed")
	if failed.GetToolFailed().GetCategory() != "permission_denied" {
		t.Fatalf("tool.failed = %v", failed)
	}
	done := tl.until("turn.completed")
	th, err := rt.control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "main", MinSequence: done.GetSequence()})
	if err != nil {
		t.Fatal(err)
	}
	facts := th.GetThread().GetPermission().GetFacts()
	if facts["refusal_cause"] != "hook" || facts["refusal_hook_run_ids"] == "" || facts["refusal_tool"] != "write_file" ||
		!strings.Contains(facts["refusal_paths"], "NOTES.md") || facts["refusal_tool_call_id"] != failed.GetToolCallId() {
		t.Errorf("the read model does not explain the refusal: %v", facts)
	}
	var categories []string
	for _, in := range th.GetThread().GetIncidents() {
		if in.GetType() == "tool.failed" {
			categories = append(categories, in.GetCategory())
		}
	}
	if len(categories) != 1 || categories[0] != "permission_denied" {
		t.Errorf("tool.failed incidents' categories = %v", categories)
	}
}
