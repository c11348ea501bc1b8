package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
)

func connectAll(t testing.TB, urls string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// While the engine does not answer, an append retries until its caller's
// deadline and then answers Unavailable with RetryInfo (never Internal);
// the same event appended again once the server is back lands once.
func TestAppendDuringAnOutageAnswersUnavailableAndLandsOnceAfter(t *testing.T) {
	srv := natsserver.Start(t)
	log, err := eventlog.Open(context.Background(), connectAll(t, srv.URL), eventlog.Config{RuntimeID: "rt_test"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	_, err = log.Append(ctx, agg, eventlog.ExpectSequence(0), withEventID(warning("a"), "evt_outage"))
	cancel()
	if !errors.Is(err, eventlog.ErrUnavailable) {
		t.Fatalf("append with the server down: %v, want ErrUnavailable", err)
	}
	st := status.Convert(grpcerr.Status(err))
	if st.Code() != codes.Unavailable {
		t.Fatalf("the caller sees %v, want Unavailable", st)
	}
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	if retry == nil || retry.GetRetryDelay().AsDuration() <= 0 {
		t.Fatalf("Unavailable without RetryInfo: %v", st.Details())
	}
	// The retried command, started while the server is still down, lands
	// once the server is back.
	done := make(chan error, 1)
	go func() {
		_, err := log.Append(testkit.Context(t), agg, eventlog.ExpectSequence(0), withEventID(warning("a"), "evt_outage"))
		done <- err
	}()
	srv.Restart(t)
	if err := <-done; err != nil {
		t.Fatalf("append across the restart: %v", err)
	}
	if evs := readAll(t, log, log.Subjects.Aggregate(agg)); len(evs) != 1 || evs[0].GetEventId() != "evt_outage" {
		t.Fatalf("the log holds %v, want evt_outage once", evs)
	}
}

// r3Log opens a log at R3 on a cluster of three nats-server processes.
func r3Log(t *testing.T) (*natsserver.Cluster, *nats.Conn, *eventlog.Log) {
	t.Helper()
	cluster := natsserver.StartCluster(t, 3)
	nc := connectAll(t, cluster.URLs())
	log, err := eventlog.Open(testkit.Context(t), nc, eventlog.Config{RuntimeID: "rt_test", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	return cluster, nc, log
}

func withEventID(ev *eventsv1.RuntimeEvent, id string) *eventsv1.RuntimeEvent {
	ev.EventId = id
	return ev
}

// On an R3 stream, killing the node that leads the stream (twice, a
// different node each time) is an election the writers wait out: every
// append either lands or answers Unavailable, each retried with the same
// event id until acknowledged, and every acknowledged event is in the log
// exactly once, in each writer's order. A subscription started before the
// kills notices the lost server and resumes where it was: it delivers the
// whole log with no gap and no duplicate.
func TestElectionsAreRetriesOnAnR3Stream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	cluster, nc, log := r3Log(t)
	ctx := testkit.Context(t)
	sub, err := log.Subscribe(ctx, nil, eventlog.FromStart)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	var (
		subMu  sync.Mutex
		subSeq []uint64
	)
	subCtx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	go func() {
		for {
			r, err := sub.Next(subCtx)
			if err != nil {
				return
			}
			subMu.Lock()
			subSeq = append(subSeq, r.Event.Sequence)
			subMu.Unlock()
		}
	}()

	const writers = 4
	var (
		mu      sync.Mutex
		acked   = make([]int, writers)
		lastAck time.Time
		stalls  []time.Duration
		badErrs []error
		unavail int
		// ackAt is where each acknowledged event was said to be, so a
		// lost one can be told from one the read missed.
		ackAt = map[string]eventlog.Appended{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := eventlog.Aggregate{Tenant: "acme", Session: fmt.Sprintf("sess_w%d", w), Kind: "session", ID: fmt.Sprintf("sess_w%d", w)}
			var expect uint64
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("evt_w%d_%05d", w, i)
				for {
					actx, cancel := context.WithTimeout(ctx, 3*time.Second)
					got, err := log.Append(actx, a, eventlog.ExpectSequence(expect), withEventID(warning("w"), id))
					cancel()
					mu.Lock()
					switch {
					case err == nil:
						now := time.Now()
						if !lastAck.IsZero() && now.Sub(lastAck) > 500*time.Millisecond {
							stalls = append(stalls, now.Sub(lastAck))
						}
						lastAck = now
						acked[w]++
						ackAt[id] = got[0]
					case errors.Is(err, eventlog.ErrUnavailable):
						unavail++
					default:
						badErrs = append(badErrs, fmt.Errorf("%s: %w", id, err))
					}
					mu.Unlock()
					if err == nil {
						expect = got[0].Sequence
						break
					}
					if !errors.Is(err, eventlog.ErrUnavailable) {
						return
					}
				}
			}
		}()
	}
	progress := func(n int) {
		t.Helper()
		mu.Lock()
		base := append([]int(nil), acked...)
		mu.Unlock()
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			ok := true
			for w := range writers {
				ok = ok && acked[w] >= base[w]+n
			}
			bad := len(badErrs)
			mu.Unlock()
			if ok {
				return
			}
			if bad > 0 || time.Now().After(deadline) {
				close(stop)
				wg.Wait()
				t.Fatalf("writers stopped progressing (acked %v from %v): %v", acked, base, badErrs)
			}
			time.Sleep(20 * time.Millisecond) // polling the writers' progress
		}
	}
	progress(20)
	var killed []*natsserver.Server
	for round := range 2 {
		leader, err := cluster.StreamLeader(ctx, nc, "AGENTRUNTIME")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range killed {
			if k == leader {
				t.Fatalf("round %d: %s leads again", round, leader.Name)
			}
		}
		killedAt := time.Now()
		leader.Kill()
		next, err := cluster.StreamLeader(ctx, nc, "AGENTRUNTIME")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed stream leader %s; %s elected after %v", round, leader.Name, next.Name, time.Since(killedAt))
		progress(20)
		leader.Restart(t)
		killed = append(killed, leader)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	t.Logf("acked %v; Unavailable answers %d; write stalls over 500ms: %v", acked, unavail, stalls)
	if len(badErrs) > 0 {
		t.Fatalf("errors other than Unavailable: %v", badErrs)
	}
	mu.Unlock()

	seen := map[string]int{}
	var total int
	last := map[string]uint64{}
	for _, ev := range readAll(t, log) {
		seen[ev.GetEventId()]++
		total++
		if ev.Sequence <= last[ev.GetSessionId()] {
			t.Fatalf("%s at %d after %d: out of order", ev.GetEventId(), ev.Sequence, last[ev.GetSessionId()])
		}
		last[ev.GetSessionId()] = ev.Sequence
	}
	for w := range writers {
		for i := range acked[w] {
			if id := fmt.Sprintf("evt_w%d_%05d", w, i); seen[id] != 1 {
				t.Fatalf("acknowledged %s (answered %+v) is in the log %d times, want once; the log around it: %s; the servers said:\n%s",
					id, ackAt[id], seen[id], around(t, log, ackAt[id].Sequence), serverTrouble(cluster))
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		subMu.Lock()
		n := len(subSeq)
		subMu.Unlock()
		if n >= total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription delivered %d of %d events", n, total)
		}
		time.Sleep(20 * time.Millisecond) // polling the subscription's progress
	}
	subMu.Lock()
	defer subMu.Unlock()
	for i, seq := range subSeq {
		if seq != at(i+1) {
			t.Fatalf("the subscription's event %d is at sequence %d: a gap or a duplicate", i, seq)
		}
	}
}

// around lists the events of the log within three positions of seq.
func around(t *testing.T, log *eventlog.Log, seq uint64) string {
	var b strings.Builder
	for _, ev := range readAll(t, log) {
		if ev.Sequence+3 >= seq && ev.Sequence <= seq+3 {
			fmt.Fprintf(&b, "%d=%s ", ev.Sequence, ev.GetEventId())
		}
	}
	return b.String()
}

// serverTrouble is what the cluster's servers logged about elections,
// catch-ups and their stores since they last started.
func serverTrouble(c *natsserver.Cluster) string {
	var b strings.Builder
	for _, s := range c.Servers {
		for _, line := range strings.Split(s.Output(), "\n") {
			if strings.Contains(line, "[WRN]") || strings.Contains(line, "[ERR]") || strings.Contains(strings.ToLower(line), "catchup") ||
				strings.Contains(line, "leader") || strings.Contains(strings.ToLower(line), "truncat") {
				fmt.Fprintf(&b, "%s: %s\n", s.Name, line)
			}
		}
	}
	return b.String()
}

// A read of a replicated log returns everything acknowledged before it
// began, even while a replica restarted a moment ago is still catching
// up: JetStream places a read's consumer on any replica of the stream, and
// one on the trailing replica counts and delivers only what that replica
// holds (seen: none of 30,000 events). Twelve reads, whole and by
// aggregate, right after the restart: each would land on the trailing
// replica one time in three.
func TestAReadHoldsEverythingAcknowledgedWhileAReplicaCatchesUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	cluster, nc, log := r3Log(t)
	ctx := testkit.Context(t)
	leader, err := cluster.StreamLeader(ctx, nc, "AGENTRUNTIME")
	if err != nil {
		t.Fatal(err)
	}
	var trailing *natsserver.Server
	for _, s := range cluster.Servers {
		if s != leader {
			trailing = s
		}
	}
	trailing.Kill()
	other := eventlog.Aggregate{Tenant: "acme", Session: "sess_2", Kind: "session", ID: "sess_2"}
	const batches, perBatch = 60, 500
	for b := range batches {
		evs := make([]*eventsv1.RuntimeEvent, perBatch)
		for i := range evs {
			evs[i] = warning(fmt.Sprint(b, "/", i))
		}
		into := agg
		if b%2 == 1 {
			into = other
		}
		if _, err := log.AppendFacts(ctx, into, evs...); err != nil {
			t.Fatal(err)
		}
	}
	trailing.Restart(t)
	for r := range 12 {
		var filters []string
		want := batches * perBatch
		if r%2 == 1 {
			filters, want = []string{log.Subjects.Aggregate(other)}, want/2
		}
		got := readAll(t, log, filters...)
		if len(got) != want {
			t.Fatalf("read %d (filters %v) returned %d events, want %d", r, filters, len(got), want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Sequence <= got[i-1].Sequence {
				t.Fatalf("read %d: event %d at %d after %d", r, i, got[i].Sequence, got[i-1].Sequence)
			}
		}
	}
}
