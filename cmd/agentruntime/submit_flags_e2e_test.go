package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// `agentruntime submit --priority --fairness-key` on the real binary: the
// turn.submitted it records carries them (docs/services/control.md, "Claim
// order"), and a priority out of range is refused before anything is sent.
func TestSubmitPriorityAndFairnessKeyFlags(t *testing.T) {
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", t.TempDir())
	cli(t, "submit", "--addr", dev.Addr, "--session", "fair", "--thread", "t1", "--priority", "1", "--fairness-key", "user-42", "write notes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := controlv1.NewControlServiceClient(dial(t, dev.Addr)).SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: "fair", Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1, TypePrefixes: []string{"turn.submitted"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.Recv()
	for err == nil && m.GetEvent().GetType() != "turn.submitted" {
		m, err = stream.Recv() // what the stream says before events (its position)
	}
	if err != nil {
		t.Fatal(err)
	}
	if p := m.GetEvent().GetTurnSubmitted(); p.GetPriority() != 1 || p.GetFairnessKey() != "user-42" || p.GetFairnessWeight() != 1 {
		t.Fatalf("turn.submitted = %v", m.GetEvent())
	}
	out, err := exec.Command(binary, "submit", "--addr", dev.Addr, "--priority", "6", "x").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--priority 6") {
		t.Fatalf("--priority 6: %v %s", err, out)
	}
}
