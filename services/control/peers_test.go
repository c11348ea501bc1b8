package control_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
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

// colourPeer is an A2A agent on the Go SDK's server (a2asrv): a new task
// asks which colour (input-required); the answer completes it.
type colourPeer struct {
	objectives, answers, cancels atomic.Int32
}

// startColourPeer serves a colourPeer's card and JSON-RPC binding; the
// card says it streams.
func startColourPeer(t *testing.T) (*colourPeer, string) { return startColourPeerStreaming(t, true) }

func startColourPeerStreaming(t *testing.T, streaming bool) (*colourPeer, string) {
	peer := &colourPeer{}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/.well-known/agent-card.json", a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "colours", Description: "d", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: streaming}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}}))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(peer)))
	return peer, srv.URL
}

func (p *colourPeer) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			p.objectives.Add(1)
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if strings.Contains(ec.Message.Parts[0].Text(), "refuse") {
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Not my job."))), nil)
				return
			}
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Which colour?"))), nil)
			return
		}
		p.answers.Add(1)
		said := ""
		for _, part := range ec.Message.Parts {
			said += part.Text()
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("Painted it "+said+"."))), nil)
	}
}

func (p *colourPeer) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	p.cancels.Add(1)
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// A remote subagent's state is the log's: a peer waiting for input when
// the control service restarts (its read model rebuilt from the log) is
// not sent its objective again; the person's answer, given after the
// restart, reaches the peer in the same task and completes the subagent.
func TestARemoteSubagentGoesOnAfterARestart(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "not streaming"}[streaming], func(t *testing.T) {
			goesOnAfterARestart(t, streaming)
		})
	}
}

func goesOnAfterARestart(t *testing.T, streaming bool) {
	peer, url := startColourPeerStreaming(t, streaming)
	h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, []string{"127.0.0.1"} })
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Objective: "paint the fence", Agent: url})
	if err != nil {
		t.Fatal(err)
	}
	sub := sp.GetSubagent().GetSubagentId()
	asked := h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "action.required" && ev.GetActionRequired().GetActionType() == "input"
	})
	if asked.GetTurnId() != parent.TurnId || asked.GetActionRequired().GetPrompt() != "Which colour?" {
		t.Fatalf("the peer's question = %v", asked)
	}
	// The question's fact is recorded after the action: wait for it, so
	// the restart finds the action linked to the peer task.
	h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetChannelPeerTaskUpdated().GetInputActionId() == asked.GetActionId()
	})

	h.restart(true)
	if _, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "answer", PayloadJson: `"blue"`}); err != nil {
		t.Fatal(err)
	}
	w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{sub}, Timeout: durationpb.New(15 * time.Second)})
	if err != nil || !w.GetAllTerminal() {
		t.Fatalf("WaitSubagents = %v, %v", w, err)
	}
	s := w.GetSubagents()[0]
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.GetSummary() != "Painted it blue." || s.GetPeerState() != "completed" || s.GetPeerTaskId() == "" {
		t.Fatalf("the remote subagent = %v", s)
	}
	if o, a := peer.objectives.Load(), peer.answers.Load(); o != 1 || a != 1 {
		t.Fatalf("the peer got %d objectives and %d answers, want 1 and 1", o, a)
	}
}

// Interrupting a remote subagent's thread (it has no turns) closes the
// subagent, and the peer's task is cancelled on the peer.
func TestInterruptingARemoteSubagentCancelsThePeerTask(t *testing.T) {
	peer, url := startColourPeer(t)
	h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, []string{"127.0.0.1"} })
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Objective: "paint the fence", Agent: url})
	if err != nil {
		t.Fatal(err)
	}
	h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetChannelPeerTaskUpdated().GetState() == "input_required"
	})
	ir, err := h.client.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: sp.GetSubagent().GetChildThreadId(), Reason: "enough"})
	if err != nil || !ir.GetAccepted() {
		t.Fatalf("InterruptTurn = %v, %v", ir, err)
	}
	canceled := h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool { return ev.GetChannelPeerTaskUpdated().GetState() == "canceled" })
	if canceled.GetSubagentId() != sp.GetSubagent().GetSubagentId() || peer.cancels.Load() != 1 {
		t.Fatalf("canceled %v; the peer got %d cancels, want 1", canceled, peer.cancels.Load())
	}
	subs, err := h.client.ListSubagents(ctx, &controlv1.ListSubagentsRequest{SessionId: "s1", ThreadId: "main", MinSequence: canceled.GetSequence()})
	if err != nil || subs.GetSubagents()[0].GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED {
		t.Fatalf("ListSubagents = %v, %v", subs, err)
	}
}

// A peer task the peer ends other than completed (here rejected) fails
// the subagent with the peer's reason, which the parent reads.
func TestAPeerThatRejectsFailsTheSubagent(t *testing.T) {
	_, url := startColourPeer(t)
	h := newHarnessWith(t, func(h *harness) { h.memory, h.a2aPeers = true, []string{"127.0.0.1"} })
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Objective: "refuse this", Agent: url})
	if err != nil {
		t.Fatal(err)
	}
	w, err := h.client.WaitSubagents(ctx, &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{sp.GetSubagent().GetSubagentId()}, Timeout: durationpb.New(15 * time.Second)})
	if err != nil || !w.GetAllTerminal() {
		t.Fatalf("WaitSubagents = %v, %v", w, err)
	}
	if s := w.GetSubagents()[0]; s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || s.GetPeerState() != "rejected" ||
		s.GetSummary() != "the A2A peer's task ended rejected: Not my job." {
		t.Fatalf("the remote subagent = %v", s)
	}
	failed := h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool { return ev.GetType() == "subagent.failed" })
	if failed.GetRefs()["parent_thread_id"] != "main" || failed.GetThreadId() != sp.GetSubagent().GetChildThreadId() {
		t.Fatalf("subagent.failed = %v", failed)
	}
}

// waitEvent follows a session from its start to the first event ok
// accepts.
func (h *harness) waitEvent(ctx context.Context, session string, ok func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	s, err := h.client.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	for {
		m, err := s.Recv()
		if err != nil {
			h.t.Fatalf("waiting for an event: %v", err)
		}
		if ev := m.GetEvent(); ev != nil && ok(ev) {
			return ev
		}
	}
}
