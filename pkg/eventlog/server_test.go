package eventlog_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// A server older than the log needs is refused at Open, naming the
// version found, the version needed and what needs it.
func TestOpenRefusesAnOldServer(t *testing.T) {
	url := natsserver.Fake(t, natsserver.FakeInfo{Version: "2.9.10", JetStream: true})
	nc, err := nats.Connect(url, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = eventlog.Open(ctx, nc, eventlog.Config{})
	if !errors.Is(err, eventlog.ErrUnfitServer) {
		t.Fatalf("Open on nats-server 2.9.10: %v, want ErrUnfitServer", err)
	}
	for _, want := range []string{"2.9.10", "need " + eventlog.MinServerVersion() + " or later", "several filter subjects (projectors, subscriptions) since 2.10.0", "batch direct gets (loading an aggregate from its subject) since 2.11.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if eventlog.MinServerVersion() != "2.11.0" {
		t.Errorf("MinServerVersion = %s", eventlog.MinServerVersion())
	}
}

// The pinned server passes.
func TestCheckServerAcceptsThePinnedServer(t *testing.T) {
	nc := natstest.Connect(t, natstest.Server(t))
	if err := eventlog.CheckServer(context.Background(), nc); err != nil {
		t.Fatalf("pinned nats-server %s: %v", nc.ConnectedServerVersion(), err)
	}
}
