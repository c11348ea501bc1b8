package all_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/server"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/kit"
)

// oldRecord is one line of testdata/old-log.jsonl: an event as an old
// build wrote it (its protobuf bytes), where and at which sequence.
type oldRecord struct {
	Sequence uint64 `json:"sequence"`
	Subject  string `json:"subject"`
	Event    []byte `json:"event"` // base64 in the file
}

// TestAnOldLogFoldsIntoTodaysReadModels: testdata/old-log.jsonl is the
// log `agentruntime dev` of commit e81e38c wrote for one thread (recorded
// by scripts/record-old-log): t1 submitted and active, t2, t3, t4 queued,
// t3 removed, t4 promoted, t1 interrupted, so t4 became the active turn
// with t2 queued behind it. Its queue.changed events carry the whole queue
// in a field since reserved and no position: today's control service,
// folding that log into an empty store, answers the thread as the story
// left it.
func TestAnOldLogFoldsIntoTodaysReadModels(t *testing.T) {
	f, err := os.Open("testdata/old-log.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []oldRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r oldRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("testdata/old-log.jsonl line %d: %v", len(recs)+1, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The fixture holds the old shape: queue.changed with the whole queue
	// (unknown to today's message) and no position.
	old := 0
	for _, r := range recs {
		ev := &eventsv1.RuntimeEvent{}
		if err := proto.Unmarshal(r.Event, ev); err != nil {
			t.Fatalf("event %d does not decode with today's protos: %v", r.Sequence, err)
		}
		if q := ev.GetQueueChanged(); ev.GetType() == events.TypeQueueChanged && q.Position == nil && len(q.ProtoReflect().GetUnknown()) > 0 {
			old++
		}
	}
	if old == 0 {
		t.Fatal("the fixture has no queue.changed of the old shape (the whole queue, no position)")
	}

	ctx := testkit.Context(t)
	nc := natstest.Connect(t, natstest.Server(t))
	// A log of one slot per message, as logs made before command messages
	// were (pkg/eventlog slots.go): the old build wrote one event per
	// message.
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Partitions: 1, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Written as the old build wrote them: the same bytes on the same
	// subjects at the same sequences.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ack, err := js.Publish(ctx, r.Subject, r.Event)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Sequence != r.Sequence {
			t.Fatalf("event recorded at %d landed at %d", r.Sequence, ack.Sequence)
		}
	}

	svc, err := all.New(control.Name, kit.Deps{Log: log, Store: projection.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	g, err := server.New(server.Config{Authenticator: auth.Anonymous("dev")})
	if err != nil {
		t.Fatal(err)
	}
	svc.Register(g.GRPC())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = g.Serve(runCtx, lis); done <- struct{}{} }()
	go func() { _ = svc.(kit.Runner).Run(runCtx); done <- struct{}{} }()
	t.Cleanup(func() { stop(); <-done; <-done })
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := controlv1.NewControlServiceClient(conn)

	// The read waits for the read model to hold the whole log.
	head, err := log.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: "s1", ThreadId: "th1", MinSequence: head})
	if err != nil {
		t.Fatal(err)
	}
	th := resp.GetThread()
	t.Logf("thread from the old log: %v", th)
	if th.GetActiveTurnId() != "t4" {
		t.Errorf("active turn %q, want t4 (promoted, then dequeued when t1 was interrupted)", th.GetActiveTurnId())
	}
	if !slices.Equal(th.GetQueuedTurnIds(), []string{"t2"}) {
		t.Errorf("queue %v, want [t2] (t3 removed, t4 dequeued)", th.GetQueuedTurnIds())
	}
	if th.GetStatus() != controlv1.ThreadStatus_THREAD_STATUS_RUNNING {
		t.Errorf("status %v, want running (t4 is active)", th.GetStatus())
	}
	if th.GetLastTurnId() != "t1" || th.GetLastOutcome() != controlv1.TurnStatus_TURN_STATUS_CANCELLED {
		t.Errorf("last turn %q %v, want t1 cancelled (interrupted)", th.GetLastTurnId(), th.GetLastOutcome())
	}
	if th.GetTurnCount() != 4 {
		t.Errorf("turn count %d, want 4", th.GetTurnCount())
	}
}
