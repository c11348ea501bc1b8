package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker"
)

// parkBenchScript: "park" asks to write a file (the turn parks on the
// approval); anything else reads the README and answers.
const parkBenchScript = `
model: scripted
turns:
  - match: park
    steps:
      - tool_calls: [{name: write_file, arguments: {path: parked.md, content: parked}}]
      - text: written
  - steps:
      - text: "Reading the README."
        tool_calls: [{name: read_file, arguments: {path: README.md}}]
      - text: "The README says hello."
`

// BenchmarkParkedTurns measures what waiting turns cost in the dev shape
// (the services and the worker in one process, JetStream embedded, read
// models in memory): a worker with 4 slots runs plain turns (SubmitTurn to
// turn.completed; 4 sessions at once, each one turn after another, so
// every slot is busy; 200 turns at -benchtime 1x) with no turn parked,
// then with AR_BENCH_PARKED (default
// 500) turns parked on unanswered approvals (one session each; this
// harness sets no per-tenant parked cap, so 10,000 fit): the ratio of the
// two per-turn times says whether waits take the worker's capacity (a
// waiting turn that held its slot would stop it after 4). Then the memory
// each parked turn adds in the process, beside what an idle subscription
// (the stream a wait held in place keeps open) adds: the heap in use after
// a forced collection, the median of three samples on each side, over all
// parked turns and over 2,000 subscriptions on eight connections (opened
// first, each until its first heartbeat, and closed before anything runs;
// measured against the mean of the heap before they opened and after they
// closed, so a heap that drifts meanwhile drifts out; the figure holds
// both ends, as both run here), so a few MiB of noise weigh little. Then the p50 from RespondAction to the approved call starting
// (its sandbox.applied: a resumed call's tool.started was said before it
// parked) and to its tool.result (claim, checkpoint read, resume, the
// write), beside a bare ClaimTurn round trip (nothing to claim, no wait) on
// the same runtime. Where the time of a park goes is logged: the mean gap
// between the facts of a sample of parked turns, by their timestamps.
func BenchmarkParkedTurns(b *testing.B) {
	parked := 500
	if v, err := strconv.Atoi(os.Getenv("AR_BENCH_PARKED")); err == nil && v > 0 {
		parked = v
	}
	rt := startRuntime(b)
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("hello from the README\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	rt.startWorker(b, scripted(b, parkBenchScript), root, func(c *worker.Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.MaxTurns = 4
	})
	ctx := context.Background()
	// The raw block of memory, measured first, in a runtime that has run
	// nothing yet (quiet): idle subscriptions, each open at the server.
	subs := 2000
	// Eight connections of 250 streams (a connection takes 1,000).
	conns := make([]controlv1.ControlServiceClient, 8)
	for i := range conns {
		c, err := grpc.NewClient(rt.conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = controlv1.NewControlServiceClient(c)
	}
	heapBefore := heapInuse()
	sctx, cancelSubs := context.WithCancel(ctx)
	for i := range subs {
		s, err := conns[i%len(conns)].SubscribeEvents(sctx, &controlv1.SubscribeEventsRequest{SessionId: fmt.Sprintf("idle-%d", i), Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
			Heartbeat: durationpb.New(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Recv(); err != nil { // its first heartbeat: open at the server
			b.Fatal(err)
		}
	}
	heapOpen := heapInuse()
	cancelSubs()
	// Against the mean of the heap before they opened and after they
	// closed: a heap that drifts while they are measured (the previous
	// run's runtime still being torn down, with -count) drifts out.
	perSub := (float64(heapOpen) - float64(heapBefore+heapInuse())/2) / float64(subs)

	// plain runs n plain turns on the worker's 4 slots (4 sessions, each
	// one turn after another): the time per turn of the worker's rate.
	plain := func(tag string, n int) time.Duration {
		const lanes = 4
		errs := make(chan error, lanes)
		t0 := time.Now()
		for l := range lanes {
			go func() {
				session := fmt.Sprintf("plain-%s-%d", tag, l)
				s, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
				if err != nil {
					errs <- err
					return
				}
				for i := l; i < n; i += lanes {
					turn := fmt.Sprintf("%s-%d", tag, i)
					if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: turn, TurnId: turn, Input: text("what does the README say?")}); err != nil {
						errs <- err
						return
					}
					if end, err := endOf(s, turn); err != nil || end != "turn.completed" {
						errs <- fmt.Errorf("plain turn %s ended %q: %v", turn, end, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range lanes {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0) / time.Duration(n)
	}
	n := max(b.N, 200)
	plain("warm", 8)
	unloaded := plain("unloaded", n)

	heapBefore = heapInuse()
	// One session per parked turn (a product's users, each reviewing one
	// change), followed by one tenant-wide subscription read as it comes
	// (a stream not read for 10 s is cut as a slow consumer).
	pctx, stopParkTl := context.WithCancel(ctx)
	ps, err := rt.control.SubscribeEvents(pctx, &controlv1.SubscribeEventsRequest{Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	sample := max(parked/20, 1) // every sample-th turn's facts are timed
	type parkedTurns struct {
		actions map[string]string // action id: its turn
		facts   map[string][]*eventsv1.RuntimeEvent
		err     error
	}
	parkedDone := make(chan parkedTurns, 1)
	go func() {
		got := parkedTurns{actions: make(map[string]string, parked), facts: map[string][]*eventsv1.RuntimeEvent{}}
		for parks := 0; parks < parked; {
			m, err := ps.Recv()
			if err != nil {
				got.err = err
				break
			}
			ev := m.GetEvent()
			if i, ok := strings.CutPrefix(ev.GetSessionId(), "park-"); ok {
				if k, _ := strconv.Atoi(i); k%sample == 0 {
					got.facts[ev.GetSessionId()] = append(got.facts[ev.GetSessionId()], ev)
				}
			}
			switch {
			case ev.GetType() == "action.required":
				got.actions[ev.GetActionId()] = ev.GetTurnId()
			case ev.GetRunStatus().GetPhase() == "parked":
				parks++
			}
		}
		parkedDone <- got
	}()
	tPark := time.Now()
	// Four submitters: a submit is not what bounds the parking.
	submitErr := make(chan error, 4)
	for s := range 4 {
		go func() {
			for i := s; i < parked; i += 4 {
				turn := fmt.Sprintf("park-%d", i)
				if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: turn, ThreadId: turn, TurnId: turn, Input: text("park here")}); err != nil {
					submitErr <- err
					return
				}
			}
			submitErr <- nil
		}()
	}
	for range 4 {
		if err := <-submitErr; err != nil {
			b.Fatal(err)
		}
	}
	submitted := time.Since(tPark)
	got := <-parkedDone
	if got.err != nil {
		b.Fatal(got.err)
	}
	parkTime := time.Since(tPark)
	stopParkTl()
	heapParked := heapInuse()
	perParked := float64(heapParked-heapBefore) / float64(parked)
	b.Logf("%d turns parked in %v (submitted in %v): %.1f parks/s; heap in use %.1f MiB before, %.1f MiB parked",
		parked, parkTime, submitted, float64(parked)/parkTime.Seconds(), float64(heapBefore)/(1<<20), float64(heapParked)/(1<<20))
	b.Logf("where a park's time goes (mean over %d sampled turns, by the facts' timestamps): %s", len(got.facts), factGaps(got.facts))

	loaded := plain("loaded", n)

	// Resume latency against a bare claim round trip.
	rs, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{TypePrefixes: []string{"sandbox.applied", "tool.result"}, Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	var started, resume, claim []time.Duration
	answered := 0
	for action, turn := range got.actions {
		if answered == 50 {
			break
		}
		answered++
		t0 := time.Now()
		if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "allow_once"}); err != nil {
			b.Fatal(err)
		}
		first := true
		for {
			m, err := rs.Recv()
			if err != nil {
				b.Fatal(err)
			}
			ev := m.GetEvent()
			if ev.GetTurnId() != turn {
				continue
			}
			if ev.GetType() == "sandbox.applied" && first {
				started, first = append(started, time.Since(t0)), false
			}
			if ev.GetType() == "tool.result" {
				resume = append(resume, time.Since(t0))
				break
			}
		}
		t0 = time.Now()
		if _, err := rt.control.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "bench", SessionId: "nobody-here"}); err != nil {
			b.Fatal(err)
		}
		claim = append(claim, time.Since(t0))
	}
	if len(started) != len(resume) {
		b.Fatalf("%d resumed calls said sandbox.applied, %d tool.result", len(started), len(resume))
	}
	b.ReportMetric(float64(unloaded.Microseconds())/1000, "unloaded-ms/turn")
	b.ReportMetric(float64(loaded.Microseconds())/1000, "parked-ms/turn")
	b.ReportMetric(float64(loaded)/float64(unloaded), "ratio-parked/unloaded")
	b.ReportMetric(perParked/1024, "KiB/parked-turn")
	b.ReportMetric(perSub/1024, "KiB/idle-subscription")
	b.ReportMetric(perParked/perSub, "ratio-parked/subscription")
	b.ReportMetric(float64(p50(started).Microseconds())/1000, "respond-to-start-p50-ms")
	b.ReportMetric(float64(p50(resume).Microseconds())/1000, "respond-to-result-p50-ms")
	b.ReportMetric(float64(p50(claim).Microseconds())/1000, "bare-claim-p50-ms")
	b.ReportMetric(float64(p50(started))/float64(p50(claim)), "ratio-start/claim")
	b.ReportMetric(float64(parked), "parked")
	b.ReportMetric(float64(parked)/parkTime.Seconds(), "parks/s")
	b.ReportMetric(0, "ns/op")
}

// heapInuse is the heap in use after a forced collection: the median of
// three samples.
func heapInuse() int64 {
	var s [3]int64
	for i := range s {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		s[i] = int64(m.HeapInuse)
	}
	sort.Slice(s[:], func(i, j int) bool { return s[i] < s[j] })
	return s[1]
}

// factGaps: the mean time between each fact of a turn and the next, over
// the turns of facts, by the facts' timestamps ("a -> b 12.3ms, ...").
func factGaps(facts map[string][]*eventsv1.RuntimeEvent) string {
	type gap struct {
		sum time.Duration
		n   int
	}
	gaps := map[string]*gap{}
	var order []string
	name := func(ev *eventsv1.RuntimeEvent) string {
		if p := ev.GetRunStatus().GetPhase(); p != "" {
			return ev.GetType() + ":" + p
		}
		return ev.GetType()
	}
	for _, evs := range facts {
		for i := 1; i < len(evs); i++ {
			k := name(evs[i-1]) + " -> " + name(evs[i])
			g, ok := gaps[k]
			if !ok {
				g = &gap{}
				gaps[k] = g
				order = append(order, k)
			}
			g.sum += evs[i].GetTimestamp().AsTime().Sub(evs[i-1].GetTimestamp().AsTime())
			g.n++
		}
	}
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s %.1fms", k, float64(gaps[k].sum.Microseconds())/1000/float64(gaps[k].n)))
	}
	return strings.Join(out, ", ")
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// endOf reads a stream to the end of turn: its end's type.
func endOf(s grpc.ServerStreamingClient[controlv1.SubscribeEventsResponse], turn string) (string, error) {
	for {
		m, err := s.Recv()
		if err != nil {
			return "", err
		}
		if ev := m.GetEvent(); ev.GetTurnId() == turn && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed") {
			return ev.GetType(), nil
		}
	}
}
