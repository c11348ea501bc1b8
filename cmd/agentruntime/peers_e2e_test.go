package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// startPeer runs examples/a2a/peer.mjs (an A2A agent on @a2a-js/sdk's
// server classes) and answers its card URL. Without node or the
// example's installed dependencies the test is skipped, unless
// AGENTRUNTIME_A2A_PEER is set (scripts/test installs them and sets
// it): there a missing peer fails.
func startPeer(t *testing.T) string { return startPeerWith(t) }

// startPeerWith runs the peer with env added to the test's environment
// (PEER_TOKEN, PEER_PORT: examples/a2a/peer.mjs).
func startPeerWith(t *testing.T, env ...string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "a2a"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, statErr := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk")); err != nil || statErr != nil {
		if os.Getenv("AGENTRUNTIME_A2A_PEER") != "" {
			t.Fatalf("the A2A peer cannot run: node %v, examples/a2a/node_modules: %v", err, statErr)
		}
		t.Skip("node or examples/a2a's dependencies are missing; scripts/test installs them (ensure_npm_deps examples/a2a)")
	}
	cmd := exec.Command(node, "peer.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`peer listening (\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				got <- m[1]
				return
			}
		}
		close(got)
	}()
	select {
	case base, ok := <-got:
		if !ok {
			t.Fatalf("the peer exited before listening: %s", stderr.String())
		}
		return base + "/.well-known/agent-card.json"
	case <-time.After(20 * time.Second):
		t.Fatalf("the peer did not listen in 20 s: %s", stderr.String())
	}
	return ""
}

// peerTask reads a task from the peer itself (JSON-RPC GetTask): the
// peer's own account of what it was sent.
func peerTask(t *testing.T, card, id string) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": map[string]any{"id": id}})
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodPost, strings.TrimSuffix(card, "/.well-known/agent-card.json")+"/a2a/jsonrpc", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error != nil {
		t.Fatalf("GetTask %s on the peer: %v %v", id, err, r.Error)
	}
	return r.Result
}

const peerScript = `
model: scripted
turns:
  - match: "paint the fence"
    steps:
      - text: "Asking the painter."
        tool_calls: [{name: spawn_agent, arguments: {objective: "paint the fence; ask me the colour", agent: "CARD", timeout_ms: 60000}}]
      - text: "The painter is done."
  - match: "wait for nothing"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "hang on", agent: "CARD", timeout_ms: 1500}}]
      - text: "It took too long."
`

// runWithAnswers submits input to the thread named like the session and
// follows the session from its start until its first turn ends,
// answering each action on the way: a permission is allowed once
// (RespondAction), the peer's input is answered "blue" (`agentruntime
// respond`, as a request_user_input question is). It returns what it saw.
func runWithAnswers(t *testing.T, addr, session, input string) []*eventsv1.RuntimeEvent {
	t.Helper()
	submitText(t, addr, session, input)
	return followWithAnswers(t, addr, session)
}

// submitText submits input to the thread named like the session.
func submitText(t *testing.T, addr, session, input string) {
	t.Helper()
	c := controlv1.NewControlServiceClient(dial(t, addr))
	if _, err := c.SubmitTurn(testkit.Context(t), &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: session,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: input}}}}); err != nil {
		t.Fatal(err)
	}
}

// followWithAnswers follows the session from its start until its first
// turn ends, answering as runWithAnswers does.
func followWithAnswers(t *testing.T, addr, session string) []*eventsv1.RuntimeEvent {
	t.Helper()
	return followUntil(t, addr, session, 1, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"
	})
}

// followUntil follows the session from the sequence from, answering as
// runWithAnswers does, up to the first event until accepts.
func followUntil(t *testing.T, addr, session string, from uint64, until func(*eventsv1.RuntimeEvent) bool) []*eventsv1.RuntimeEvent {
	t.Helper()
	c := controlv1.NewControlServiceClient(dial(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := c.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*eventsv1.RuntimeEvent
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("after %v: %v", testkit.Types(seen), err)
		}
		ev := m.GetEvent()
		if ev == nil {
			continue
		}
		seen = append(seen, ev)
		if until(ev) {
			return seen
		}
		switch ev.GetType() {
		case "action.required":
			if ev.GetActionRequired().GetActionType() == "input" {
				// A person answers the peer's question with the CLI.
				cli(t, "respond", "--addr", addr, "--action", ev.GetActionId(), "blue")
				continue
			}
			if _, err := c.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: ev.GetActionId(), Decision: "allow_once"}); err != nil {
				t.Fatalf("answering %v: %v", ev, err)
			}
		}
	}
}

func find(seen []*eventsv1.RuntimeEvent, ok func(*eventsv1.RuntimeEvent) bool) *eventsv1.RuntimeEvent {
	for _, ev := range seen {
		if ok(ev) {
			return ev
		}
	}
	return nil
}

func ofType(typ string) func(*eventsv1.RuntimeEvent) bool {
	return func(ev *eventsv1.RuntimeEvent) bool { return ev.GetType() == typ }
}

// A parent turn delegates to a remote A2A agent (spawn_agent's agent):
// the control service sends the objective to the peer, records the
// peer's task and context ids (channel.peer_task.linked), turns the
// peer's input-required into an input action on the parent's turn, sends
// the person's answer to the peer in the same task, and completes the
// subagent with the peer's artifact, which the parent's spawn_agent
// answers. A subagent whose wait times out is closed and its peer task
// cancelled on the peer. A card URL the allowlist does not hold is
// refused naming the field.
func TestAParentTurnDelegatesToAnA2APeer(t *testing.T) {
	card := startPeer(t)
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(peerScript, "CARD", card)), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, _ := startDevWithWorkspace(t, "--script", script, "--a2a-peers", "127.0.0.1")
	c := controlv1.NewControlServiceClient(dial(t, dev.Addr))

	seen := runWithAnswers(t, dev.Addr, "paint", "paint the fence")
	end := seen[len(seen)-1]
	if end.GetType() != "turn.completed" || end.GetThreadId() != "paint" {
		t.Fatalf("the parent turn ended %v after %v", end, testkit.Types(seen))
	}
	spawned := find(seen, ofType("subagent.spawned"))
	if spawned.GetSubagentSpawned().GetAgent() != card {
		t.Fatalf("subagent.spawned = %v, want agent %s", spawned, card)
	}
	child := spawned.GetSubagentSpawned().GetChildThreadId()
	linked := find(seen, ofType("channel.peer_task.linked"))
	lp := linked.GetChannelPeerTaskLinked()
	if linked.GetSubagentId() != spawned.GetSubagentId() || linked.GetThreadId() != child || linked.GetChannelId() == "" ||
		lp.GetTaskId() == "" || lp.GetContextId() == "" || lp.GetCardUrl() != card || lp.GetPeerName() != "paint-peer" {
		t.Fatalf("channel.peer_task.linked = %v", linked)
	}
	input := find(seen, func(ev *eventsv1.RuntimeEvent) bool { return ev.GetActionRequired().GetActionType() == "input" })
	if input == nil || input.GetThreadId() != "paint" || input.GetTurnId() != spawned.GetTurnId() || input.GetActionRequired().GetPrompt() != "Which colour should it be?" {
		t.Fatalf("the peer's input-required on the parent's turn = %v", input)
	}
	asked := find(seen, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetChannelPeerTaskUpdated().GetState() == "input_required"
	})
	if asked.GetChannelPeerTaskUpdated().GetInputActionId() != input.GetActionId() {
		t.Fatalf("channel.peer_task.updated input_required = %v, want the input action %s", asked, input.GetActionId())
	}
	var states []string
	for _, ev := range seen {
		if p := ev.GetChannelPeerTaskUpdated(); p != nil && p.GetState() != "" {
			states = append(states, p.GetState())
		}
	}
	if got := strings.Join(states, ","); !strings.HasSuffix(got, "input_required,working,completed") {
		t.Fatalf("the peer task's states %s, want ...input_required,working,completed", got)
	}
	done := find(seen, ofType("subagent.completed"))
	if done.GetSubagentCompleted().GetSummary() != "Painted it blue." || done.GetRefs()["parent_thread_id"] != "paint" {
		t.Fatalf("subagent.completed = %v", done)
	}
	result := find(seen, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "tool.result" && ev.GetThreadId() == "paint"
	})
	if !strings.Contains(result.GetToolResult().GetPreview(), "completed: Painted it blue.") {
		t.Fatalf("spawn_agent answered %q", result.GetToolResult().GetPreview())
	}
	// The peer's own record: one task, the answer sent into it.
	task := peerTask(t, card, lp.GetTaskId())
	if task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" || task["contextId"] != lp.GetContextId() {
		t.Fatalf("the peer's task = %v", task)
	}
	if h, _ := json.Marshal(task["history"]); !strings.Contains(string(h), `"blue"`) {
		t.Fatalf("the peer's task history holds no answer: %s", h)
	}
	subs, err := c.ListSubagents(testkit.Context(t), &controlv1.ListSubagentsRequest{SessionId: "paint", ThreadId: "paint", MinSequence: end.GetSequence()})
	if err != nil || len(subs.GetSubagents()) != 1 {
		t.Fatalf("ListSubagents = %v, %v", subs, err)
	}
	if s := subs.GetSubagents()[0]; s.GetAgent() != card || s.GetPeerTaskId() != lp.GetTaskId() || s.GetPeerContextId() != lp.GetContextId() ||
		s.GetPeerState() != "completed" || s.GetStatus() != controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED || s.GetPeerActionId() != "" {
		t.Fatalf("the remote subagent = %v", s)
	}

	// The parent stops waiting: the subagent is closed and the peer's
	// task cancelled on the peer.
	seen = runWithAnswers(t, dev.Addr, "hang", "wait for nothing")
	spawned = find(seen, ofType("subagent.spawned"))
	linked = find(seen, ofType("channel.peer_task.linked"))
	if spawned == nil || linked == nil || find(seen, ofType("subagent.closed")) == nil {
		t.Fatalf("want the subagent spawned, linked and closed: %v", testkit.Types(seen))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := c.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "hang", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("no channel.peer_task.updated canceled: %v", err)
		}
		if p := m.GetEvent().GetChannelPeerTaskUpdated(); p.GetState() == "canceled" {
			break
		}
	}
	if st := peerTask(t, card, linked.GetChannelPeerTaskLinked().GetTaskId())["status"].(map[string]any)["state"]; st != "TASK_STATE_CANCELED" {
		t.Fatalf("the peer's task is %v, want TASK_STATE_CANCELED", st)
	}

	// Only allowed hosts: the field is named.
	_, err = c.SpawnSubagent(testkit.Context(t), &controlv1.SpawnSubagentRequest{SessionId: "paint", ParentThreadId: "paint", ParentTurnId: end.GetTurnId(),
		Objective: "x", Agent: "http://metadata.internal/.well-known/agent-card.json"})
	assertFieldViolation(t, err, "agent")
}
