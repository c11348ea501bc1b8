package natsserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
)

// A server killed with SIGKILL and restarted keeps what JetStream
// acknowledged, on the same URL.
func TestKillAndRestartKeepsAcknowledgedMessages(t *testing.T) {
	s := natsserver.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	publish := func() uint64 {
		nc, err := nats.Connect(s.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
		ack, err := js.Publish(ctx, "t.a", []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	if seq := publish(); seq != 1 {
		t.Fatalf("first sequence = %d, want 1", seq)
	}
	s.Kill()
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if _, err := nats.Connect(s.URL, nats.NoReconnect(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("connected to a killed server")
	}
	s.Restart(t)
	if seq := publish(); seq != 2 {
		t.Fatalf("sequence after restart = %d, want 2 (the first message survived the kill)", seq)
	}
	nc, err := nats.Connect(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got, want := nc.ConnectedServerVersion(), mustPinned(t); "v"+got != want {
		t.Fatalf("server version %s, want the pinned %s", got, want)
	}
}

func TestFakeAnnouncesItsVersion(t *testing.T) {
	url := natsserver.Fake(t, natsserver.FakeInfo{Version: "2.9.10", JetStream: true})
	nc, err := nats.Connect(url, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if v := nc.ConnectedServerVersion(); v != "2.9.10" {
		t.Fatalf("version %q, want 2.9.10", v)
	}
}

func mustPinned(t *testing.T) string {
	v, err := natsserver.PinnedVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
