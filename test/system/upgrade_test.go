package system_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// Releases an upgrade starts from (commits of main as it landed), and
// how: rolling, the old and the new side by side and back, or replaced,
// the old stopped before the new starts. 91ab27d is main before command
// messages and fold versions (its Redis read models have no generation,
// its log one slot per message); 1c3b53a is main before this wave's
// service shape; d2ffa1c, the first wave, wrote queue.changed as the
// whole queue, and folds this tree's queue.changed (a change of the
// queue) wrongly, so it cannot run beside it: from it an upgrade replaces
// (docs/upgrading.md). AR_UPGRADE_FROM=<commit> runs one release only,
// rolling.
var upgradesFrom = []struct {
	release string
	rolling bool
}{{"91ab27d", true}, {"1c3b53a", true}, {"d2ffa1c", false}}

// buildRelease builds `agentruntime` at release from this clone's
// history (git archive: no worktree is left behind).
func buildRelease(t *testing.T, previousRelease string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s is not in this clone's history (a shallow clone?): the rolling upgrade needs it: %v", previousRelease, err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", "git -C \"$0\" archive \"$1\" | tar -x -C \"$2\"", root, previousRelease, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", previousRelease, err, out)
	}
	bin := filepath.Join(dir, "agentruntime-previous")
	build := exec.Command("go", "build", "-o", bin, "./cmd/agentruntime")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", previousRelease, err, out)
	}
	return bin
}

// TestUpgradesOfControl upgrades control from each release of
// upgradesFrom to this tree under submit load. Rolling: control of the
// previous release and of this tree side by side on one log and one Redis, under
// submit load from clients that go to any replica that serves (a load
// balancer's view): the previous release alone, then a replica of this
// tree beside it (it builds its read models beside the old ones and
// serves once caught up), then this tree alone, then a rollback to the
// previous release. While both serve, every thread reads the same through
// both (the load held while they are compared, so both answer at the same
// position). Replaced: the previous release alone, then this tree alone,
// which answers every thread as the log says. At the end every
// acknowledged turn is in the log
// once, and the previous release answers every thread as the log says.
func TestUpgradesOfControl(t *testing.T) {
	if from := os.Getenv("AR_UPGRADE_FROM"); from != "" {
		upgradesFrom = upgradesFrom[:1]
		upgradesFrom[0].release, upgradesFrom[0].rolling = from, true
	}
	for _, u := range upgradesFrom {
		name := "rolling from " + u.release
		if !u.rolling {
			name = "replacing " + u.release
		}
		t.Run(name, func(t *testing.T) { upgradeControl(t, u.release, u.rolling) })
	}
}

func upgradeControl(t *testing.T, release string, rolling bool) {
	previous := buildRelease(t, release)
	c := &cluster{t: t, services: map[string]*proc{}, models: demoModels(t)}
	c.nats = natsserver.Start(t)
	c.redis = redistest.Start(t, redistest.Options{AppendOnly: true})
	c.authFile = writeAuth(t)

	replica := func(label, bin string) *proc {
		p := c.serveProc(label, "control", c.nats.URL)
		p.bin = bin
		p.start(t)
		c.services[label] = p
		return p
	}
	var clientsMu sync.Mutex
	clients := map[*proc]controlv1.ControlServiceClient{}
	clientOf := func(p *proc) controlv1.ControlServiceClient {
		clientsMu.Lock()
		defer clientsMu.Unlock()
		if cl, ok := clients[p]; ok {
			return cl
		}
		cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(p.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		clients[p] = controlv1.NewControlServiceClient(cc)
		return clients[p]
	}
	serving := func(p *proc) {
		t.Helper()
		cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(p.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		var got healthpb.HealthCheckResponse_ServingStatus
		testkit.EventuallyWithin(t, 90*time.Second, func() string {
			return fmt.Sprintf("%s health %v:\n%s", p.name, got, p.out.String())
		}, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: endpoints.HealthName("control")})
			got = resp.GetStatus()
			return err == nil && got == healthpb.HealthCheckResponse_SERVING
		})
	}

	// The load: four clients, each on threads of its own that queue (no
	// worker runs), each submit retried with its turn id as idempotency key
	// on whichever replica serves until one acknowledges it.
	var (
		mu    sync.Mutex
		live  []*proc
		acks  []acked
		tries = map[codes.Code]int{}
		// gate holds the load while the replicas' answers are compared:
		// each submit holds it for reading.
		gate sync.RWMutex
	)
	setLive := func(ps ...*proc) {
		mu.Lock()
		defer mu.Unlock()
		live = ps
	}
	pick := func() *proc {
		mu.Lock()
		defer mu.Unlock()
		return live[rand.N(len(live))]
	}
	ctx, cancel := context.WithCancel(operatorCtx(context.Background()))
	defer cancel()
	var wg sync.WaitGroup
	startLoad := func() {
		for g := range 4 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					a := acked{thread: fmt.Sprintf("th-%d-%d", g, i%3), turn: ids.New(ids.Turn)}
					seq, ok := submitAcked(ctx, "upgrade", a.thread, a.turn, 20*time.Millisecond, &mu, tries,
						func(ctx context.Context, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
							gate.RLock()
							defer gate.RUnlock()
							return clientOf(pick()).SubmitTurn(ctx, req)
						})
					if ok {
						a.seq = seq
						mu.Lock()
						acks = append(acks, a)
						mu.Unlock()
					}
				}
			})
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	more := func(n int) {
		t.Helper()
		want := count() + n
		testkit.EventuallyWithin(t, 60*time.Second, func() string {
			return fmt.Sprintf("%d turns acknowledged, want %d; failed tries %v", count(), want, tries)
		}, func() bool { return count() >= want })
	}
	// answers reads every thread acknowledged so far through each replica
	// at the newest token, wants the same answer from all, and that answer
	// to hold every acknowledged turn of the thread; it returns them by
	// thread. The caller holds the load (gate).
	answers := func(step string, ps ...*proc) map[string]string {
		t.Helper()
		out := map[string]string{}
		mu.Lock()
		byThread := map[string][]string{}
		var last uint64
		for _, a := range acks {
			byThread[a.thread] = append(byThread[a.thread], a.turn)
			last = max(last, a.seq)
		}
		mu.Unlock()
		rctx, rcancel := context.WithTimeout(operatorCtx(context.Background()), 60*time.Second)
		defer rcancel()
		for th, turns := range byThread {
			var first string
			for _, p := range ps {
				var read *controlv1.ThreadRead
				testkit.EventuallyWithin(t, 30*time.Second, func() string {
					return fmt.Sprintf("%s: %s read of %s at %d never answered", step, p.name, th, last)
				}, func() bool {
					r, err := clientOf(p).GetThreadRead(rctx, &controlv1.GetThreadReadRequest{SessionId: "upgrade", ThreadId: th, MinSequence: last})
					read = r.GetThread()
					return err == nil
				})
				held := append([]string{read.GetActiveTurnId()}, read.GetQueuedTurnIds()...)
				for _, turn := range turns {
					if !slices.Contains(held, turn) {
						t.Fatalf("%s: %s answers thread %s with %v, without acknowledged turn %s", step, p.name, th, held, turn)
					}
				}
				// The status is compared where both speak this API: the
				// first wave's ThreadRead held it as a string on a field
				// this API no longer has.
				answer := fmt.Sprint(held)
				if rolling {
					answer = fmt.Sprint(read.GetStatus(), held)
				}
				if first == "" {
					first = answer
				} else if answer != first {
					t.Fatalf("%s: thread %s reads %s through one replica and %s through %s", step, th, first, answer, p.name)
				}
			}
			out[th] = first
		}
		return out
	}
	// same holds the load and compares the replicas' answers.
	same := func(step string, ps ...*proc) {
		t.Helper()
		gate.Lock()
		defer gate.Unlock()
		answers(step, ps...)
	}

	old := replica("control-previous", previous)
	serving(old)
	setLive(old)
	startLoad()
	more(20)

	if !rolling {
		// Replaced: the previous release stops (its clients wait), this
		// tree's starts on what it left and answers every thread as the
		// previous release did.
		gate.Lock()
		before := answers("before the upgrade", old)
		old.kill()
		upgraded := replica("control-new", "")
		serving(upgraded)
		after := answers("after the upgrade", upgraded)
		for th, a := range before {
			if after[th] != a {
				t.Fatalf("thread %s read %s before the upgrade and %s after", th, a, after[th])
			}
		}
		setLive(upgraded)
		gate.Unlock()
		more(20)
		cancel()
		wg.Wait()
		same("after the upgrade", upgraded)
		t.Logf("%d turns acknowledged across the upgrade; failed tries by code %v", len(acks), tries)
		checkOnce(t, c, acks)
		return
	}

	// Upgrade: this tree's control beside the previous one.
	upgraded := replica("control-new", "")
	serving(upgraded)
	setLive(old, upgraded)
	more(20)
	same("both serving", old, upgraded)

	// The previous release leaves.
	setLive(upgraded)
	old.kill()
	more(20)

	// Rollback: the previous release comes back, this tree's leaves.
	back := replica("control-rolled-back", previous)
	serving(back)
	setLive(upgraded, back)
	more(10)
	same("during the rollback", upgraded, back)
	setLive(back)
	upgraded.kill()
	more(20)
	cancel()
	wg.Wait()
	same("rolled back", back)
	t.Logf("%d turns acknowledged across the upgrade and the rollback; failed tries by code %v", len(acks), tries)

	checkOnce(t, c, acks)
}

// submitAcked submits a turn until it is acknowledged, each try bounded
// by 5 s and retried after backoff with the turn id as idempotency key (a
// client riding out a fault); failed tries are counted by code in tries,
// under mu. It answers the acknowledgement's consistency token, or false
// when ctx ended first.
func submitAcked(ctx context.Context, session, thread, turn string, backoff time.Duration, mu *sync.Mutex, tries map[codes.Code]int,
	submit func(context.Context, *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error)) (uint64, bool) {
	req := &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: thread, TurnId: turn, IdempotencyKey: turn,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "load"}}}}
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := submit(cctx, req)
		cancel()
		if err == nil {
			return resp.GetSequence(), true
		}
		mu.Lock()
		tries[status.Code(err)]++
		mu.Unlock()
		if ctx.Err() == nil {
			time.Sleep(backoff) // a client's retry backoff
		}
	}
	return 0, false
}

// acked is a turn SubmitTurn acknowledged: its thread, its id, the
// consistency token of the answer.
type acked struct {
	thread, turn string
	seq          uint64
}

// checkOnce: every acknowledged turn is in the log once.
func checkOnce(t *testing.T, c *cluster, acks []acked) {
	t.Helper()
	evs := readLog(t, c)
	exactlyOnce(t, evs)
	submitted := map[string]int{}
	for _, ev := range evs {
		if ev.GetType() == "turn.submitted" {
			submitted[ev.GetTurnId()]++
		}
	}
	for _, a := range acks {
		if submitted[a.turn] != 1 {
			t.Errorf("acknowledged turn %s is in the log %d times", a.turn, submitted[a.turn])
		}
	}
}
