package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

const peerAuthScript = `
model: scripted
turns:
  - match: "the locked gate"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "paint the locked gate", agent: "LOCKED", timeout_ms: 60000}}]
      - text: "Done."
  - match: "the other gate"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "paint the other gate", agent: "REFUSING", timeout_ms: 60000}}]
      - text: "Done."
  - match: "the late gate"
    steps:
      - tool_calls: [{name: spawn_agent, arguments: {objective: "paint the late gate", agent: "LATE", timeout_ms: 60000}}]
      - text: "Done."
`

// A peer whose card declares a bearer scheme and whose binding refuses a
// call without its token (examples/a2a/peer.mjs with PEER_TOKEN) is
// called with the credential --a2a-peer-credentials configures for its
// host and port, and the delegation completes; the secret is in no
// event and no log line. Another such peer, on a port no entry names, is
// sent nothing and refuses: the subagent fails at once, its reason naming
// the host that refused and the flag. A peer that is not up when the
// subagent starts (nothing listens on its port) is tried again, and once
// it is started on that port the delegation completes.
func TestARemoteSubagentCarriesItsCredentialAndWaitsForItsPeer(t *testing.T) {
	const secret = "tok-3f9a-painter"
	locked := startPeerWith(t, "PEER_TOKEN="+secret)
	refusing := startPeerWith(t, "PEER_TOKEN=tok-of-another")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	latePort := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there until the peer starts
	late := fmt.Sprintf("http://127.0.0.1:%d/.well-known/agent-card.json", latePort)

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "painter.token")
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lockedHost := strings.TrimSuffix(strings.TrimPrefix(locked, "http://"), "/.well-known/agent-card.json")
	refusingHost := strings.TrimSuffix(strings.TrimPrefix(refusing, "http://"), "/.well-known/agent-card.json")
	creds := filepath.Join(dir, "peers.yaml")
	if err := os.WriteFile(creds, []byte(fmt.Sprintf("peers:\n  - host: %q\n    scheme: bearer\n    secret_file: %s\n", lockedHost, tokenFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	body := strings.NewReplacer("LOCKED", locked, "REFUSING", refusing, "LATE", late).Replace(peerAuthScript)
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, _ := startDevWithWorkspace(t, "--script", script, "--a2a-peers", "127.0.0.1", "--a2a-peer-credentials", creds)

	// The peer that requires a token gets it.
	seen := runWithAnswers(t, dev.Addr, "locked", "paint the locked gate")
	done := find(seen, ofType("subagent.completed"))
	if done.GetSubagentCompleted().GetSummary() != "Peer answer to: paint the locked gate" {
		t.Fatalf("the peer that requires a token: %v %v", find(seen, ofType("subagent.failed")).GetSubagentFailed().GetSummary(), testkit.Types(seen))
	}
	for _, ev := range seen {
		if raw, _ := protojson.Marshal(ev); strings.Contains(string(raw), secret) {
			t.Fatalf("an event holds the secret: %s", raw)
		}
	}

	// The other is sent no credential, and refuses.
	seen = runWithAnswers(t, dev.Addr, "refused", "paint the other gate")
	failed := find(seen, ofType("subagent.failed"))
	reason := failed.GetSubagentFailed().GetSummary()
	for _, want := range []string{"refused", refusingHost, "401", "--a2a-peer-credentials"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("the refusing peer's subagent failed with %q, want it to say %q (%v)", reason, want, testkit.Types(seen))
		}
	}
	if strings.Contains(reason, "attempts") {
		t.Fatalf("a refusal was tried again: %q", reason)
	}

	// The late one: tried while nothing listens, reached once it does.
	submitText(t, dev.Addr, "late", "paint the late gate")
	spawned := followUntil(t, dev.Addr, "late", 1, ofType("subagent.spawned"))
	// Another process's state: its log says an attempt failed.
	testkit.Eventually(t, "an attempt on the port nobody listens on to fail", func() bool {
		return strings.Contains(dev.Output(), "a2a peer not reached; trying again")
	})
	if got := startPeerWith(t, fmt.Sprintf("PEER_PORT=%d", latePort)); got != late {
		t.Fatalf("the late peer listens at %s, want %s", got, late)
	}
	seen = followUntil(t, dev.Addr, "late", spawned[len(spawned)-1].GetSequence()+1, func(ev *eventsv1.RuntimeEvent) bool {
		return ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed"
	})
	done = find(seen, ofType("subagent.completed"))
	if done.GetSubagentCompleted().GetSummary() != "Peer answer to: paint the late gate" {
		t.Fatalf("the late peer: %v %v", find(seen, ofType("subagent.failed")).GetSubagentFailed().GetSummary(), testkit.Types(seen))
	}
	linked := find(seen, ofType("channel.peer_task.linked"))
	if linked.GetChannelPeerTaskLinked().GetCardUrl() != late {
		t.Fatalf("channel.peer_task.linked = %v", linked)
	}
	if strings.Contains(dev.Output(), secret) {
		t.Fatal("the process logged the secret")
	}
}
