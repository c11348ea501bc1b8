package control_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// A remote subagent names its peer by a card URL the allowlist
// (--a2a-peers) holds: any other, or any with no allowlist, is refused
// naming the field, and nothing is spawned.
func TestSpawningAnA2APeerNeedsAnAllowedHost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peers []string
		agent string
	}{
		{"no allowlist", nil, "http://127.0.0.1:9/.well-known/agent-card.json"},
		{"another host", []string{"peers.example.com"}, "http://169.254.169.254/.well-known/agent-card.json"},
		{"another port", []string{"peers.example.com:443"}, "https://peers.example.com:8443/card.json"},
		{"not http", []string{"peers.example.com"}, "file://peers.example.com/etc/passwd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, tc.peers })
			ctx := acme(t)
			parent := h.submit(ctx, "s1", "main").Turn
			_, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
				Objective: "paint the fence", Agent: tc.agent})
			assertCode(t, err, codes.InvalidArgument, "agent")
			subs, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main"})
			if err != nil || len(subs.GetSubagents()) != 0 {
				t.Fatalf("a refused spawn left subagents: %v %v", subs, err)
			}
		})
	}
	h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, []string{"127.0.0.1"} })
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	_, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Agent: "http://127.0.0.1:9/.well-known/agent-card.json"})
	assertCode(t, err, codes.InvalidArgument, "objective")
}

// An allowed card that points its interfaces at a host the allowlist
// does not hold (an internal address, say) is not followed: the internal
// host gets no request and the subagent fails saying why.
func TestAPeerCardCannotPointTheRuntimeElsewhere(t *testing.T) {
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		http.Error(w, "no", http.StatusTeapot)
	}))
	defer internal.Close()
	// The same loopback server under a name the allowlist does not hold.
	elsewhere := strings.Replace(internal.URL, "127.0.0.1", "localhost", 1) + "/a2a/jsonrpc"
	card := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"name":"sly","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, elsewhere)
	}))
	defer card.Close()
	h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, []string{"127.0.0.1"} })
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Objective: "paint the fence", Agent: card.URL + "/.well-known/agent-card.json"})
	if err != nil {
		t.Fatal(err)
	}
	if sp.GetSubagent().GetAgent() == "" {
		t.Fatalf("spawned %v, want its agent", sp.GetSubagent())
	}
	w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{sp.GetSubagent().GetSubagentId()}, Timeout: durationpb.New(15 * time.Second)})
	if err != nil || !w.GetAllTerminal() {
		t.Fatalf("WaitSubagents = %v, %v", w, err)
	}
	s := w.GetSubagents()[0]
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || !strings.Contains(s.GetSummary(), "allowed host") {
		t.Fatalf("the subagent = %v, want failed for want of an allowed interface", s)
	}
	if n := internalHits.Load(); n != 0 {
		t.Fatalf("the host the card named got %d requests", n)
	}
}
