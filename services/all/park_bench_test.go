package all_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/worker"
	"github.com/agentruntime/agentruntime/pkg/worker/provider"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/routing"
)

// parkScript: every turn asks to write a file; the write asks for
// approval, so the turn parks.
const parkScript = `
model: scripted
turns:
  - steps:
      - tool_calls: [{name: write_file, arguments: {path: parked.md, content: parked}}]
      - text: written
`

// BenchmarkParkPath: the park path in the dev and serve shapes (control,
// permission and routing, each with its own gRPC server; serve: on
// nats-server and redis-server as their own processes), with one worker of
// 4 slots in this process reaching them through an endpoints map.
// AR_BENCH_PARK_PATH turns (default 1,000), one session each, are
// submitted and park on an unanswered approval: parks per second (each a
// claim, a model step, a permission evaluation that opens an action, a
// stored checkpoint, the parked status), the heap each parked turn adds in
// this process (the services and the worker; median of three samples
// after a forced collection), and in serve the Redis memory (INFO
// used_memory) each adds. Then 50 approvals: the p50
// from RespondAction to the approved call starting (its sandbox.applied)
// beside a bare ClaimTurn round trip (nothing to claim, no wait).
func BenchmarkParkPath(b *testing.B) {
	for _, sh := range []shape{dev, serve} {
		b.Run(string(sh), func(b *testing.B) { benchParkPath(b, sh) })
	}
}

func benchParkPath(b *testing.B, sh shape) {
	parked := 1000
	if v, err := strconv.Atoi(os.Getenv("AR_BENCH_PARK_PATH")); err == nil && v > 0 {
		parked = v
	}
	s := newStack(b, sh, control.Name, permission.Name, routing.Name)
	ctx := context.Background()
	cc := controlv1.NewControlServiceClient(s.conn(b, control.Name))
	m := endpoints.Map{Default: s.addr[control.Name], Addrs: map[string]string{}}
	for _, name := range []string{control.Name, permission.Name, routing.Name} {
		m.Addrs[name] = s.addr[name]
	}
	wconn, err := endpoints.Dial(m, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wconn.Close() })
	script, err := provider.ParseScript([]byte(parkScript))
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- worker.New(worker.Config{WorkerID: "w-park", Conn: wconn, Provider: provider.NewScripted(script), DefaultModel: "scripted",
			Sandbox: tools.Sandbox{Root: root, WriteRoots: []string{root}}, LeaseTTL: 3 * time.Second, ClaimWait: time.Second,
			MaxTurns: 4, Logger: slog.New(slog.DiscardHandler)}).Run(wctx)
	}()
	b.Cleanup(func() { stop(); <-done })

	redisMem := func() int64 {
		if s.redis == nil {
			return 0
		}
		info, err := s.redis.Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		b.Fatal("INFO memory has no used_memory")
		return 0
	}
	// The heap in use after a forced collection, the median of three.
	heap := func() int64 {
		var s [3]int64
		for i := range s {
			goruntime.GC()
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			s[i] = int64(ms.HeapInuse)
		}
		slices.Sort(s[:])
		return s[1]
	}

	// The parks, read as they come on a tenant-wide subscription.
	pctx, stopSub := context.WithCancel(ctx)
	defer stopSub()
	sub, err := cc.SubscribeEvents(pctx, &controlv1.SubscribeEventsRequest{TypePrefixes: []string{"action.required", "run.status"}, Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sub.Header(); err != nil {
		b.Fatal(err)
	}
	type parkedTurns struct {
		actions map[string]string // action: its turn
		err     error
	}
	parkedDone := make(chan parkedTurns, 1)
	go func() {
		got := parkedTurns{actions: map[string]string{}}
		for parks := 0; parks < parked; {
			m, err := sub.Recv()
			if err != nil {
				got.err = err
				break
			}
			switch ev := m.GetEvent(); {
			case ev.GetType() == "action.required":
				got.actions[ev.GetActionId()] = ev.GetTurnId()
			case ev.GetRunStatus().GetPhase() == "parked":
				parks++
			}
		}
		parkedDone <- got
	}()
	mem0, heap0 := redisMem(), heap()
	t0 := time.Now()
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for i := w; i < parked; i += 4 {
				turn := fmt.Sprintf("park-%d", i)
				if _, err := cc.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: turn, ThreadId: turn, TurnId: turn,
					Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "park here"}}}}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	got := <-parkedDone
	if got.err != nil {
		b.Fatal(got.err)
	}
	took := time.Since(t0)
	stopSub()
	perRedis := float64(redisMem()-mem0) / float64(parked)
	perHeap := float64(heap()-heap0) / float64(parked)
	b.Logf("%s: %d turns parked in %v", sh, parked, took)

	rs, err := cc.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{TypePrefixes: []string{"sandbox.applied"}, Start: controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := rs.Header(); err != nil {
		b.Fatal(err)
	}
	var start, claim []time.Duration
	for action, turn := range got.actions {
		if len(start) == 50 {
			break
		}
		t0 := time.Now()
		if _, err := cc.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "allow_once"}); err != nil {
			b.Fatal(err)
		}
		for {
			m, err := rs.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if m.GetEvent().GetTurnId() == turn {
				start = append(start, time.Since(t0))
				break
			}
		}
		t0 = time.Now()
		if _, err := cc.ClaimTurn(ctx, &controlv1.ClaimTurnRequest{WorkerId: "bench", SessionId: "nobody-here"}); err != nil {
			b.Fatal(err)
		}
		claim = append(claim, time.Since(t0))
	}
	st, cl := p50(start), p50(claim)
	b.ReportMetric(float64(parked)/took.Seconds(), "parks/s")
	perPark := took * 4 / time.Duration(parked) // what one slot spends on a park
	b.ReportMetric(float64(perPark.Microseconds())/1000, "ms/park/slot")
	b.ReportMetric(float64(perPark)/float64(p50(claim)), "ratio-park/claim")
	b.ReportMetric(perHeap/1024, "heap-KiB/parked-turn")
	if sh == serve {
		b.ReportMetric(perRedis/1024, "redis-KiB/parked-turn")
	}
	b.ReportMetric(float64(st.Microseconds())/1000, "respond-to-start-p50-ms")
	b.ReportMetric(float64(cl.Microseconds())/1000, "bare-claim-p50-ms")
	b.ReportMetric(float64(st)/float64(cl), "ratio-start/claim")
	b.ReportMetric(float64(parked), "parked")
	b.ReportMetric(0, "ns/op")
}
