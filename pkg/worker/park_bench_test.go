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
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
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

// BenchmarkParkedTurns measures what waiting turns cost: a worker with 4
// slots runs plain turns (SubmitTurn to turn.completed) with no turn
// parked, then with AR_BENCH_PARKED (default 500) turns parked on
// unanswered approvals: the ratio of the two per-turn times says whether
// waits take the worker's capacity (a waiting turn that held its slot
// would stop it after 4). Then the heap each parked turn adds in the
// process running the services and the worker, beside the heap an idle
// subscription (the stream a held wait keeps open) adds; and the p50 from
// RespondAction to the approved call's tool.result (claim, checkpoint
// read, resume, the write) beside a bare ClaimTurn round trip (nothing to
// claim, no wait) on the same runtime.
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
	follow := func(session string) *timeline {
		s, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: session, Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1})
		if err != nil {
			b.Fatal(err)
		}
		return &timeline{stream: s}
	}
	// plain runs n plain turns one after another: the mean time of one.
	plain := func(tag string, n int) time.Duration {
		tl := follow("plain-" + tag)
		t0 := time.Now()
		for i := range n {
			turn := fmt.Sprintf("%s-%d", tag, i)
			if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "plain-" + tag, ThreadId: turn, TurnId: turn, Input: text("what does the README say?")}); err != nil {
				b.Fatal(err)
			}
			if end := untilEnd(b, tl, turn); end != "turn.completed" {
				b.Fatalf("plain turn ended %s", end)
			}
		}
		return time.Since(t0) / time.Duration(n)
	}
	n := max(b.N, 20)
	plain("warm", 3)
	unloaded := plain("unloaded", n)

	var before goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	// One session per parked turn (a product's users, each reviewing one
	// change), followed by one tenant-wide subscription.
	pctx, stopParkTl := context.WithCancel(ctx)
	ps, err := rt.control.SubscribeEvents(pctx, &controlv1.SubscribeEventsRequest{TypePrefixes: []string{"action.required", "run.status"}, Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	parkTl := &timeline{stream: ps}
	tPark := time.Now()
	actions := make([]string, 0, parked)
	for i := range parked {
		turn := fmt.Sprintf("park-%d", i)
		if _, err := rt.control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: turn, ThreadId: turn, TurnId: turn, Input: text("park here")}); err != nil {
			b.Fatal(err)
		}
	}
	for parks := 0; parks < parked; {
		m, err := parkTl.stream.Recv()
		if err != nil {
			b.Fatal(err)
		}
		ev := m.GetEvent()
		if ev != nil {
			parkTl.seen = append(parkTl.seen, ev)
		}
		switch {
		case ev.GetType() == "action.required":
			actions = append(actions, ev.GetActionId())
		case ev.GetRunStatus().GetPhase() == "parked":
			parks++
		}
	}
	var after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	perParked := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(parked)
	b.Logf("%d turns parked in %v", parked, time.Since(tPark))
	// The parked session's stream is not read while plain turns run: it
	// would be cut as a slow consumer. Resumes are followed afresh below.
	stopParkTl()

	loaded := plain("loaded", n)

	// The raw block of memory: idle subscriptions (up to 64).
	subs := min(parked, 64)
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	sctx, cancel := context.WithCancel(ctx)
	for i := range subs {
		s, err := rt.control.SubscribeEvents(sctx, &controlv1.SubscribeEventsRequest{SessionId: fmt.Sprintf("idle-%d", i), Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: 1,
			Heartbeat: durationpb.New(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		_ = s
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	perSub := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(subs)
	cancel()

	// Resume latency against a bare claim round trip.
	rs, err := rt.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{TypePrefixes: []string{"tool.result"}, Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	parkTl = &timeline{stream: rs}
	var resume, claim []time.Duration
	for i := 0; i < min(len(actions), 50); i++ {
		t0 := time.Now()
		if _, err := rt.control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: actions[i], Decision: "allow_once"}); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := parkTl.stream.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if ev := m.GetEvent(); ev.GetType() == "tool.result" {
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
	b.ReportMetric(float64(unloaded.Microseconds())/1000, "unloaded-ms/turn")
	b.ReportMetric(float64(loaded.Microseconds())/1000, "parked-ms/turn")
	b.ReportMetric(float64(loaded)/float64(unloaded), "ratio-parked/unloaded")
	b.ReportMetric(perParked/1024, "KiB/parked-turn")
	b.ReportMetric(perSub/1024, "KiB/idle-subscription")
	b.ReportMetric(float64(p50(resume).Microseconds())/1000, "respond-to-result-p50-ms")
	b.ReportMetric(float64(p50(claim).Microseconds())/1000, "bare-claim-p50-ms")
	b.ReportMetric(float64(p50(resume))/float64(p50(claim)), "ratio-resume/claim")
	b.ReportMetric(float64(parked), "parked")
	b.ReportMetric(0, "ns/op")
}

func p50(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// untilEnd reads a timeline to the end of turn: its end's type.
func untilEnd(b *testing.B, tl *timeline, turn string) string {
	for {
		m, err := tl.stream.Recv()
		if err != nil {
			b.Fatal(err)
		}
		if ev := m.GetEvent(); ev.GetTurnId() == turn && (ev.GetType() == "turn.completed" || ev.GetType() == "turn.failed") {
			return ev.GetType()
		}
	}
}
