package all_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
	"github.com/agentruntime/agentruntime/services/control"
	controlreadmodel "github.com/agentruntime/agentruntime/services/control/readmodel"
	"github.com/agentruntime/agentruntime/services/evidence"
	evidencereadmodel "github.com/agentruntime/agentruntime/services/evidence/readmodel"
)

// rebuildEvents is the size of the log BenchmarkRebuild rebuilds from
// (AR_BENCH_REBUILD_EVENTS overrides it for a quick look).
func rebuildEvents() int {
	if n, err := strconv.Atoi(os.Getenv("AR_BENCH_REBUILD_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// rebuilt is the log BenchmarkRebuild rebuilds from: its directory, how
// many events (one per message) it holds and the position of the last
// (what the read models reach once they hold everything: with eventlog's
// slots a position is not a count).
type rebuilt struct {
	dir    string
	events uint64
	head   uint64
}

var (
	rebuildOnce sync.Once
	rebuildLogs rebuilt
	rebuildErr  error
)

// rebuildLog writes, once per test binary, a log of real sessions: the
// facts the services themselves appended for a session of two threads of
// four turns (submitted, started, 20 model deltas, completed), copied with
// fresh ids until the log holds rebuildEvents events.
func rebuildLog(b *testing.B) rebuilt {
	rebuildOnce.Do(func() {
		rebuildLogs.dir, rebuildErr = os.MkdirTemp("", "ar-rebuild-")
		if rebuildErr != nil {
			return
		}
		rebuildLogs.events, rebuildLogs.head, rebuildErr = writeRebuildLog(b, rebuildLogs.dir, rebuildEvents())
	})
	if rebuildErr != nil {
		b.Fatal(rebuildErr)
	}
	return rebuildLogs
}

// idPattern finds the generated ids (prefix_ULID) in a message.
var idPattern = regexp.MustCompile(`[a-z]{2,10}_[0-9A-Z]{26}`)

func writeRebuildLog(b *testing.B, dir string, total int) (events, head uint64, err error) {
	// The template: what the services append for one session.
	tmpl := newStack(b, dev, control.Name)
	ctx := context.Background()
	c := controlv1.NewControlServiceClient(tmpl.conn(b, control.Name))
	session := ids.New("sess")
	for th := 0; th < 2; th++ {
		thread := ids.New("thread")
		for tu := 0; tu < 4; tu++ {
			turn := runningTurnIn(b, ctx, c, session, thread)
			evs := deltas(turn)[:20]
			if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: evs}); err != nil {
				return 0, 0, err
			}
			if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.completed", TurnId: turn,
				Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done", StopReason: "end_turn"}}}}}); err != nil {
				return 0, 0, err
			}
		}
	}
	type rec struct {
		subject string
		header  nats.Header
		data    []byte
	}
	var template []rec
	var mu sync.Mutex
	if _, err := tmpl.logs[control.Name].Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error {
		r.Event.Sequence = 0
		data, err := proto.Marshal(r.Event)
		if err != nil {
			return err
		}
		mu.Lock()
		template = append(template, rec{subject: r.Subject, header: r.Header, data: data})
		mu.Unlock()
		return nil
	}); err != nil {
		return 0, 0, err
	}
	tmpl.stop()
	// Every id in the template, replaced per copy by one of the same
	// length: the protobuf encoding stays valid byte for byte.
	seen := map[string]int{}
	for _, r := range template {
		for _, id := range idPattern.FindAllString(r.subject+" "+string(r.data), -1) {
			if _, ok := seen[id]; !ok {
				seen[id] = len(seen)
			}
		}
	}
	srv, err := natsembed.Start(natsembed.Config{StoreDir: dir})
	if err != nil {
		return 0, 0, err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	log, err := eventlog.Open(ctx, nc, eventlog.Config{})
	if err != nil {
		return 0, 0, err
	}
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	for copyN := 0; copyN*len(template) < total; copyN++ {
		var pairs []string
		for id, i := range seen {
			pairs = append(pairs, id, id[:len(id)-9]+fmt.Sprintf("%03d%06d", i, copyN))
		}
		for _, r := range template {
			subject, data := r.subject, r.data
			for i := 0; i < len(pairs); i += 2 {
				if bytes.Contains(data, []byte(pairs[i])) {
					data = bytes.ReplaceAll(data, []byte(pairs[i]), []byte(pairs[i+1]))
				}
				if bytes.Contains([]byte(subject), []byte(pairs[i])) {
					subject = string(bytes.ReplaceAll([]byte(subject), []byte(pairs[i]), []byte(pairs[i+1])))
				}
			}
			msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
			// Each event its own message: a command message's event
			// count does not hold for one of its events.
			for k, v := range r.header {
				if k != jetstream.MsgIDHeader && k != eventlog.HeaderEvents {
					msg.Header[k] = v
				}
			}
			if _, err := js.PublishMsgAsync(msg); err != nil {
				return 0, 0, err
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		return 0, 0, fmt.Errorf("the rebuild log was not acknowledged in time")
	}
	st, err := js.Stream(ctx, "AGENTRUNTIME")
	if err != nil {
		return 0, 0, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	head, err = log.Head(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.State.LastSeq, head, nil
}

func runningTurnIn(b testing.TB, ctx context.Context, c controlv1.ControlServiceClient, session, thread string) string {
	b.Helper()
	resp, err := c.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: thread,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
	if err != nil {
		b.Fatal(err)
	}
	turn := resp.GetTurn().GetTurnId()
	if _, err := c.ReportEvents(ctx, &controlv1.ReportEventsRequest{Events: []*eventsv1.RuntimeEvent{{Type: "turn.started", TurnId: turn,
		Payload: &eventsv1.RuntimeEvent_TurnStarted{TurnStarted: &eventsv1.TurnStarted{WorkerId: "w1"}}}}}); err != nil {
		b.Fatal(err)
	}
	return turn
}

// BenchmarkRebuild: control and evidence start on an empty store over a
// log of rebuildEvents events and rebuild their read models until both
// answer at the head, next to a raw ordered consumer reading the same
// stream (no decoding) on the same server in the same run. It reports the
// ratio of throughputs and the Go heap in use (after a GC) once each side
// has finished, beside the process's RSS.
func BenchmarkRebuild(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		b.Run(string(sh), func(b *testing.B) { benchRebuild(b, sh) })
	}
}

func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

func benchRebuild(b *testing.B, sh shape) {
	logs := rebuildLog(b)
	var rawTook, took time.Duration
	var rawHeap, heap, rawRSS, afterRSS float64
	for i := 0; i < b.N; i++ {
		s := newStackAt(b, sh, logs.dir) // the servers only: no service yet
		t0 := time.Now()
		n := rawReplay(b, s, logs.events)
		rawTook += time.Since(t0)
		rawHeap, rawRSS = heapMiB(), rss()
		if n != logs.events {
			b.Fatalf("raw replay read %d of %d", n, logs.events)
		}
		s.stop()

		t0 = time.Now()
		s = newStackAt(b, sh, logs.dir, control.Name, evidence.Name)
		s.waitFor(b, control.Name, controlreadmodel.Name, logs.head)
		s.waitFor(b, evidence.Name, evidencereadmodel.Name, logs.head)
		took += time.Since(t0)
		heap, afterRSS = heapMiB(), rss()
		s.stop()
	}
	n := float64(b.N) * float64(logs.events)
	rate, raw := n/took.Seconds(), n/rawTook.Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(raw, "raw-replay-events/s")
	b.ReportMetric(rate/raw, "ratio")
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(rawHeap, "raw-heap-MiB")
	b.ReportMetric(afterRSS, "rss-MiB")
	b.ReportMetric(rawRSS, "raw-rss-MiB")
	b.ReportMetric(0, "ns/op")
}

// rawReplay reads the whole stream with an ordered consumer, as the
// projectors do, without decoding.
func rawReplay(b *testing.B, s *stack, want uint64) uint64 {
	nc := s.natsConn(b)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	cons, err := js.OrderedConsumer(ctx, "AGENTRUNTIME", jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()
	var n uint64
	for n < want {
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}
