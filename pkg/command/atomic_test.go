package command_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsproxy"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// TestCommandsLandWholeOrNotAtAll cuts the writer's connection to NATS
// between the messages of a command and stops the writer there, as a
// crash would (ADR 0005, "Atomic commands"), in process (dev) and against a
// nats-server process (serve). Chained publishes, the control, leave the
// head of the command in the log; the writer's command message
// (docs/adr/0016-command-messages.md) leaves none of it, and the command
// retried with its key lands whole, once.
func TestCommandsLandWholeOrNotAtAll(t *testing.T) {
	for _, shape := range []string{"dev", "serve"} {
		t.Run(shape, func(t *testing.T) {
			url := ""
			if shape == "dev" {
				url = natstest.Server(t).ClientURL()
			} else {
				url = natsserver.Start(t).URL
			}
			proxy := natsproxy.Start(t, url)
			nc, err := nats.Connect(proxy.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			log, err := eventlog.Open(ctx, nc, eventlog.Config{RuntimeID: "rt_test", Storage: jetstream.FileStorage})
			if err != nil {
				t.Fatal(err)
			}
			// Read the log past the proxy.
			direct, err := nats.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(direct.Close)
			reader, err := eventlog.Open(ctx, direct, eventlog.Config{RuntimeID: "rt_test", Storage: jetstream.FileStorage})
			if err != nil {
				t.Fatal(err)
			}
			count := func(a eventlog.Aggregate) int {
				t.Helper()
				return len(readAllOf(t, reader, a))
			}
			deposits := func(n int) []*eventsv1.RuntimeEvent {
				evs := make([]*eventsv1.RuntimeEvent, n)
				for i := range evs {
					evs[i] = &eventsv1.RuntimeEvent{Type: "runtime.warning",
						Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{Code: "dep:1"}}}
				}
				return evs
			}

			t.Run("chained publishes leave a head", func(t *testing.T) {
				a := eventlog.Aggregate{Tenant: "acme", Session: "sess_chained", Kind: "account", ID: "chained"}
				subject := log.Subjects.Aggregate(a)
				actx, stop := context.WithCancel(ctx)
				seen := 0
				proxy.CutBefore(func(m natsproxy.Msg) bool {
					if m.Subject != subject {
						return false
					}
					if seen++; seen < 2 {
						return false
					}
					stop() // the writer stops here: nothing retries the rest
					return true
				})
				if _, err := log.Append(actx, a, eventlog.ExpectSequence(0), deposits(2)...); err == nil {
					t.Fatal("Append through a cut connection answered success")
				}
				if n := count(a); n != 1 {
					t.Fatalf("the log holds %d of the command's 2 events after the cut, want the head alone (1): the cut is not between the appends", n)
				}
			})

			t.Run("the writer's command does not", func(t *testing.T) {
				a := eventlog.Aggregate{Tenant: "acme", Session: "sess_atomic", Kind: "account", ID: "atomic"}
				w := command.NewWriter(log, account{log}, command.Options{})
				subject := log.Subjects.Aggregate(a)
				const key = "cmd-atomic"
				decide := func(_ context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
					if _, ok := st.Seen(command.DeriveID(a, key, 0)); ok {
						return nil, nil // the command is already in the log
					}
					return deposits(3), nil
				}
				before := proxy.Cuts()
				actx, stop := context.WithCancel(ctx)
				// Before the command's last message: its command message
				// (eventlog.HeaderEvents), a batch's commit, or the third of
				// chained publishes.
				seen := 0
				proxy.CutBefore(func(m natsproxy.Msg) bool {
					if m.Subject != subject {
						return false
					}
					if seen++; seen < 3 && !m.HasHeader(eventlog.HeaderEvents) {
						return false
					}
					stop()
					return true
				})
				if _, err := w.Execute(actx, a, key, decide); err == nil {
					t.Fatal("Execute through a cut connection answered success")
				}
				if proxy.Cuts() != before+1 {
					t.Fatal("the proxy cut nothing: the command did not reach its commit")
				}
				if n := count(a); n != 0 {
					t.Fatalf("the log holds %d of the command's 3 events after the cut, want none", n)
				}
				// The retry (same key, a fresh writer as after a restart) lands
				// all of it; another retry appends nothing.
				w = command.NewWriter(log, account{log}, command.Options{})
				for range 2 {
					if _, err := w.Execute(ctx, a, key, decide); err != nil {
						t.Fatal(err)
					}
				}
				evs := readAllOf(t, reader, a)
				if len(evs) != 3 {
					t.Fatalf("after the retries the log holds %d events, want the command's 3 once", len(evs))
				}
				for i, ev := range evs {
					if want := command.DeriveID(a, key, i); ev.GetEventId() != want {
						t.Errorf("event %d has id %s, want %s (derived from the command's key)", i, ev.GetEventId(), want)
					}
				}
			})
		})
	}
}

func readAllOf(t *testing.T, log *eventlog.Log, a eventlog.Aggregate) []*eventsv1.RuntimeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*eventsv1.RuntimeEvent
	if _, err := log.Read(ctx, []string{log.Subjects.Aggregate(a)}, eventlog.FromStart, func(r *eventlog.Record) error {
		out = append(out, r.Event)
		return nil
	}); err != nil {
		t.Fatalf("read %s: %v", a, err)
	}
	return out
}
