package control_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/kit"
)

// flaky is a colour peer behind faults: its listener drops the first
// drops connections unanswered, its card answers cardFails, then the
// card; its JSON-RPC binding answers rpcFails, then the agent.
type flaky struct {
	peer                 *colourPeer
	url                  string
	dropped, cards, rpcs atomic.Int32
	drops                int32
	cardFails, rpcFails  []int
	// down, while above zero, is how many calls to the binding still
	// answer 503 (each takes one); below zero, every call does.
	down atomic.Int32
}

type dropping struct {
	net.Listener
	f *flaky
}

func (l dropping) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || l.f.dropped.Add(1) > l.f.drops {
			return c, err
		}
		_ = c.Close()
	}
}

// takeDown says whether this call to the binding answers 503, taking
// one of down's.
func (f *flaky) takeDown() bool {
	for {
		d := f.down.Load()
		if d <= 0 {
			return d < 0
		}
		if f.down.CompareAndSwap(d, d-1) {
			return true
		}
	}
}

func startFlaky(t *testing.T, f *flaky) *flaky {
	t.Helper()
	f.peer = &colourPeer{}
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	srv.Listener = dropping{srv.Listener, f}
	srv.Start()
	t.Cleanup(srv.Close)
	card := a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "colours", Description: "d", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL+"/rpc", a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}})
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(f.peer))
	failing := func(n *atomic.Int32, fails []int, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n == &f.rpcs && f.takeDown() {
				n.Add(1)
				http.Error(w, "redeploying", http.StatusServiceUnavailable)
				return
			}
			if i := int(n.Add(1)) - 1; i < len(fails) || (len(fails) > 0 && fails[len(fails)-1] < 0) {
				code := fails[min(i, len(fails)-1)]
				if code < 0 {
					code = -code // every request from here on
				}
				http.Error(w, "not now", code)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux.Handle("/.well-known/agent-card.json", failing(&f.cards, f.cardFails, card))
	mux.Handle("/rpc", failing(&f.rpcs, f.rpcFails, rpc))
	f.url = srv.URL
	return f
}

func (h *harness) spawnPeer(t *testing.T, agent string) *controlv1.Subagent {
	t.Helper()
	ctx := acme(t)
	parent := h.submit(ctx, "s1", "main").Turn
	sp, err := h.client.SpawnSubagent(ctx, &controlv1.SpawnSubagentRequest{SessionId: "s1", ParentThreadId: "main", ParentTurnId: parent.TurnId,
		Objective: "paint the fence", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return sp.GetSubagent()
}

func (h *harness) waitSubagent(t *testing.T, sub string) *controlv1.Subagent {
	t.Helper()
	w, err := h.client.WaitSubagents(acme(t), &controlv1.WaitSubagentsRequest{SessionId: "s1", SubagentIds: []string{sub}, Timeout: durationpb.New(20 * time.Second)})
	if err != nil || !w.GetAllTerminal() {
		t.Fatalf("WaitSubagents = %v, %v", w, err)
	}
	return w.GetSubagents()[0]
}

// A peer that cannot be reached at the start (its connections dropped,
// its card and then its JSON-RPC binding answering 503) is tried again
// until it answers; the objective reaches it once, the delegation
// completes, and none of the failed attempts is in the log.
func TestAPeerNotReachedAtTheStartIsTriedAgain(t *testing.T) {
	f := startFlaky(t, &flaky{drops: 2, cardFails: []int{503, 429}, rpcFails: []int{502}})
	h := newHarnessWith(t, func(h *harness) {
		h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
		h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 20}
	})
	ctx := acme(t)
	sub := h.spawnPeer(t, f.url)
	asked := h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "action.required" && ev.GetActionRequired().GetActionType() == "input"
	})
	if _, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "answer", PayloadJson: `"blue"`}); err != nil {
		t.Fatal(err)
	}
	s := h.waitSubagent(t, sub.GetSubagentId())
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.GetSummary() != "Painted it blue." {
		t.Fatalf("the remote subagent = %v", s)
	}
	if d, c, r, o := f.dropped.Load(), f.cards.Load(), f.rpcs.Load(), f.peer.objectives.Load(); d < 3 || c != 3 || r < 3 || o != 1 {
		t.Fatalf("connections %d (2 dropped), card reads %d (want 3), calls %d (want the refused send, the objective, the answer), objectives %d (want 1)", d, c, r, o)
	}
	// Nothing was recorded of the attempts: the subagent's first fact
	// after its spawn is the peer task's link.
	var before []string
	h.waitEvent(ctx, "s1", func(ev *eventsv1.RuntimeEvent) bool {
		if ev.GetType() == "channel.peer_task.linked" {
			return true
		}
		if ev.GetSubagentId() == sub.GetSubagentId() || ev.GetThreadId() == sub.GetChildThreadId() {
			before = append(before, ev.GetType())
		}
		return false
	})
	if strings.Join(before, ",") != "thread.started,subagent.spawned" {
		t.Fatalf("recorded of the subagent before its link: %v, want its thread and its spawn alone", before)
	}
}

// A peer that refuses for good fails the subagent at its first answer:
// a card that is not there (404), or a binding that refuses the runtime
// (401), whose reason names the host and the flag that gives it a
// credential.
func TestAPeerThatRefusesFailsAtOnce(t *testing.T) {
	for name, c := range map[string]struct {
		f    *flaky
		want []string
	}{
		"no card":      {&flaky{cardFails: []int{-404}}, []string{"the A2A peer could not be reached: ", "404"}},
		"unauthorized": {&flaky{rpcFails: []int{-401}}, []string{"the A2A peer refused the runtime: ", "401", "--a2a-peer-credentials"}},
	} {
		t.Run(name, func(t *testing.T) {
			f := startFlaky(t, c.f)
			h := newHarnessWith(t, func(h *harness) {
				h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
				h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 20}
			})
			s := h.waitSubagent(t, h.spawnPeer(t, f.url).GetSubagentId())
			want := append(c.want, strings.TrimPrefix(f.url, "http://"))
			if name == "no card" {
				want = want[:2] // the card's URL is named, and the answer
			}
			for _, w := range want {
				if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || !strings.Contains(s.GetSummary(), w) {
					t.Fatalf("the remote subagent = %v, want failed saying %q", s, w)
				}
			}
			if strings.Contains(s.GetSummary(), "attempts") || f.cards.Load()+f.rpcs.Load() != map[string]int32{"no card": 1, "unauthorized": 2}[name] {
				t.Fatalf("tried again: %s; card reads %d, calls %d", s.GetSummary(), f.cards.Load(), f.rpcs.Load())
			}
		})
	}
}

// A peer that is never reached fails the subagent after the attempts the
// policy allows, saying how many, over how long, and the last error.
func TestAPeerNeverReachedFailsAfterItsAttempts(t *testing.T) {
	f := startFlaky(t, &flaky{cardFails: []int{-503}})
	h := newHarnessWith(t, func(h *harness) {
		h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
		h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAttempts: 3}
	})
	s := h.waitSubagent(t, h.spawnPeer(t, f.url).GetSubagentId())
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || !strings.Contains(s.GetSummary(), "could not be reached after 3 attempts over ") ||
		!strings.Contains(s.GetSummary(), "503 Service Unavailable") {
		t.Fatalf("the remote subagent = %v", s)
	}
	if n := f.cards.Load(); n != 3 {
		t.Fatalf("the card was read %d times, want 3", n)
	}
}

// A subagent closed while its driver is still trying to reach the peer
// (here: the card answered 503 once, then the objective's call hangs)
// stops at once: the call in flight is abandoned, nothing is sent again,
// and the subagent is closed, not failed.
func TestClosingASubagentStopsReachingItsPeer(t *testing.T) {
	entered, abandoned, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var calls, cards atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		// Read to the end, so the server notices the client leave.
		_, _ = io.Copy(io.Discard, r.Body)
		if n == 1 {
			close(entered)
		}
		select {
		case <-r.Context().Done():
			if n == 1 {
				close(abandoned)
			}
		case <-done:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(done) }) // before the server's Close
	cardHandler := a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "slow", Description: "d", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(hang.URL, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: true}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}})
	card := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cards.Add(1) == 1 {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		cardHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(card.Close)
	h := newHarnessWith(t, func(h *harness) {
		h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
		h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 20}
	})
	ctx := acme(t)
	sub := h.spawnPeer(t, card.URL)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the objective was never sent")
	}
	if _, err := h.client.CloseSubagent(ctx, &controlv1.CloseSubagentRequest{SessionId: "s1", SubagentId: sub.GetSubagentId(), Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-abandoned:
	case <-ctx.Done():
		t.Fatal("the call in flight went on after the close")
	}
	s := h.waitSubagent(t, sub.GetSubagentId())
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED || calls.Load() != 1 || cards.Load() != 2 {
		t.Fatalf("the subagent = %v after %d card reads and %d calls, want closed after 2 and 1", s, cards.Load(), calls.Load())
	}
}

// linkAndAsk spawns a remote subagent on f's peer and waits for the
// peer's question in the parent: the peer task is linked.
func (h *harness) linkAndAsk(t *testing.T, f *flaky) (*controlv1.Subagent, *eventsv1.RuntimeEvent) {
	t.Helper()
	sub := h.spawnPeer(t, f.url)
	asked := h.waitEvent(acme(t), "s1", func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "action.required" && ev.GetActionRequired().GetActionType() == "input"
	})
	return sub, asked
}

// A linked peer that stops answering (every call 503 after its question)
// is not tried forever: the answer is sent again and again within the
// policy's time, then the subagent fails saying the peer could not answer
// about its task, how often it was tried and the last error.
func TestALinkedPeerThatStopsAnsweringFailsAfterItsTime(t *testing.T) {
	f := startFlaky(t, &flaky{})
	h := newHarnessWith(t, func(h *harness) {
		h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
		h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, MaxAttempts: 2, MaxElapsed: 500 * time.Millisecond}
	})
	sub, asked := h.linkAndAsk(t, f)
	f.down.Store(-1)
	calls := f.rpcs.Load()
	if _, err := h.client.RespondAction(acme(t), &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "answer", PayloadJson: `"blue"`}); err != nil {
		t.Fatal(err)
	}
	s := h.waitSubagent(t, sub.GetSubagentId())
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED || !strings.Contains(s.GetSummary(), "the A2A peer could not answer about its task after ") ||
		!strings.Contains(s.GetSummary(), "503 Service Unavailable") {
		t.Fatalf("the remote subagent = %v", s)
	}
	// More attempts than MaxAttempts: once linked, time bounds them.
	if n := f.rpcs.Load() - calls; n <= 2 || f.peer.answers.Load() != 0 {
		t.Fatalf("the answer was tried %d times (want more than 2) and reached the peer %d times (want 0)", n, f.peer.answers.Load())
	}
}

// A linked peer away for a while (its next calls answered 503, more of
// them than MaxAttempts) gets the answer once it is back, and the
// delegation completes.
func TestALinkedPeerBackAfterAnOutageCompletes(t *testing.T) {
	f := startFlaky(t, &flaky{})
	h := newHarnessWith(t, func(h *harness) {
		h.memory, h.a2aPeers = true, []string{"127.0.0.1"}
		h.a2aPeerRetry = kit.A2APeerRetry{MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAttempts: 2, MaxElapsed: time.Minute}
	})
	sub, asked := h.linkAndAsk(t, f)
	f.down.Store(5)
	if _, err := h.client.RespondAction(acme(t), &controlv1.RespondActionRequest{ActionId: asked.GetActionId(), Decision: "answer", PayloadJson: `"blue"`}); err != nil {
		t.Fatal(err)
	}
	s := h.waitSubagent(t, sub.GetSubagentId())
	if s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.GetSummary() != "Painted it blue." || f.peer.answers.Load() != 1 || f.down.Load() > 0 {
		t.Fatalf("the remote subagent = %v after %d answers reached the peer (want 1), %d outage calls left", s, f.peer.answers.Load(), f.down.Load())
	}
}
