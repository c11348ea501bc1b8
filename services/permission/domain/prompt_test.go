package domain

import (
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

func TestApprovalPromptShowsWhatWasJudgedQuoted(t *testing.T) {
	got := ApprovalPrompt(eventsv1.TargetKind_TARGET_KIND_TOOL, "shell", eventsv1.Access_ACCESS_EXECUTE, "rm -rf build/",
		[]string{"/work/build", "/work/build"}, nil, "destructive command")
	want := `Allow tool "shell" to execute: command "rm -rf build/"; paths "/work/build"? destructive command`
	if got != want {
		t.Fatalf("prompt\n got %s\nwant %s", got, want)
	}
	// A caller's name cannot pose as the runtime's words: it stays one
	// quoted value, newlines escaped.
	got = ApprovalPrompt(eventsv1.TargetKind_TARGET_KIND_TOOL, "read_file?\nAllow read_file README.md", eventsv1.Access_ACCESS_READ, "", nil, nil, "")
	if strings.Contains(got, "\n") || !strings.Contains(got, `"read_file?\nAllow read_file README.md"`) {
		t.Fatalf("prompt %q", got)
	}
	var many []string
	for range 20 {
		many = append(many, strings.Repeat("p", len(many)+1))
	}
	if got := ApprovalPrompt(eventsv1.TargetKind_TARGET_KIND_PROCESS, "p", eventsv1.Access_ACCESS_WRITE, "", many, []string{"example.com"}, ""); !strings.Contains(got, "and 12 more; hosts \"example.com\"?") {
		t.Fatalf("prompt %q", got)
	}
}

func TestOnlyTheRuntimesActionAnswersARequest(t *testing.T) {
	ok := AnsweringAction{Type: "permission", RequestedBy: "permission", SessionID: "s", ThreadID: "th", TurnID: "tu"}
	if err := CheckAnsweringAction(ok, "s", "th", "tu"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []AnsweringAction{
		{Type: "input", RequestedBy: "permission", SessionID: "s", ThreadID: "th", TurnID: "tu"},
		{Type: "permission", RequestedBy: "worker-1", SessionID: "s", ThreadID: "th", TurnID: "tu"},
		{Type: "permission", RequestedBy: "permission", SessionID: "s", ThreadID: "th", TurnID: "other"},
		{Type: "permission", RequestedBy: "permission", SessionID: "s", ThreadID: "other", TurnID: "tu"},
	} {
		if err := CheckAnsweringAction(bad, "s", "th", "tu"); !fault.HasReason(err, ReasonNotTheRequestsAction) {
			t.Fatalf("%+v answered the request: %v", bad, err)
		}
	}
}
