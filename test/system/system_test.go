// Package system_test runs the deployed shape as real processes on one
// machine: nats-server (built from the module go.mod pins) and
// redis-server, the five `agentruntime serve <name>` processes on their own
// ports with an auth file, one `agentruntime worker` reaching them through
// an endpoints map, and the CLI. It runs the README tour through them,
// kills every serve process during a turn, and kills nats-server and
// redis-server (and flushes Redis) under submit load.
//
// How a turn was once appended twice: under load with faults, one turn
// id appeared twice as turn.submitted. Control's SubmitTurn
// decided on its Redis read model (the legacy command.Executor: wait until
// the projection reaches the aggregate's last sequence, then look the turn
// id and idempotency key up in the read model) and appended events with
// fresh random event ids. A FLUSHALL emptied the read model while the
// projector went on from its in-memory position, writing a new checkpoint
// past the lost state, so "caught up" held while the turn was gone: the
// retried submit found no turn and appended a second turn.submitted, and
// its new event id gave JetStream's de-duplication nothing to match. Two
// things close it: commands decide on state folded from the log with
// event ids derived from the command's key (pkg/command Writer,
// docs/adr/0005-hot-path.md), and a store that lost its data is detected
// and rebuilt from the log while
// reads wait and answer Unavailable: a projector's batch is written only
// at the checkpoint it started from (ADR 0007), and an idle projector
// checks every second that its store still holds its checkpoint
// (pkg/projector).
package system_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

func decodeJSON(b []byte) (map[string]any, error) {
	var m map[string]any
	err := json.Unmarshal(b, &m)
	return m, err
}

// tourOrder is the README tour's story, in order (other facts between).
var tourOrder = []string{"turn.submitted", "turn.started", "routing.decided", "permission.evaluated", "action.required",
	"action.resolved", "permission.resolved", "tool.result", "turn.completed"}

func TestDeployedShape(t *testing.T) {
	c := newCluster(t)
	c.startWorker()

	t.Run("tour", func(t *testing.T) { c.t = t; tour(t, c) })
	if t.Failed() {
		return
	}
	t.Run("every serve process killed during a turn", func(t *testing.T) { c.t = t; killsDuringTurn(t, c) })
	if t.Failed() {
		return
	}
	t.Run("readiness tells the truth while Redis is down", func(t *testing.T) { c.t = t; healthTruth(t, c) })
	if t.Failed() {
		return
	}
	t.Run("submit load with nats-server and redis-server killed and Redis flushed", func(t *testing.T) { c.t = t; loadWithFaults(t, c) })
}

// tour is the README's: submit, watch, approve; NOTES.md written.
func tour(t *testing.T, c *cluster) {
	if out := c.cli("submit", "write notes about this project"); !strings.Contains(out, "in session default, thread main") {
		t.Fatalf("submit said %q", out)
	}
	w := c.watch(1)
	w.until(t, "action.required")
	if _, err := os.Stat(filepath.Join(c.ws, "NOTES.md")); !os.IsNotExist(err) {
		t.Fatalf("NOTES.md exists before approval: %v", err)
	}
	if out := c.cli("approve"); !strings.Contains(out, "allow_once") {
		t.Fatalf("approve said %q", out)
	}
	w.until(t, "turn.completed")
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("watch --until-turn-ends: %v", err)
	}
	inOrder(t, w.seen, tourOrder...)
	for _, bad := range []string{"routing.not_possible", "tool.failed", "turn.failed"} {
		for _, s := range w.seen {
			if s == bad {
				t.Fatalf("the tour has %s: %v", bad, w.seen)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(c.ws, "NOTES.md"))
	if err != nil || len(b) == 0 {
		t.Fatalf("NOTES.md = %q, %v", b, err)
	}
}

// killsDuringTurn kills each serve process once with SIGKILL during a
// second turn and restarts it: routing right after the submit, the others
// while the turn waits for its approval. The turn still completes and the
// log holds every event once.
func killsDuringTurn(t *testing.T, c *cluster) {
	conn := c.conn()
	control := controlv1.NewControlServiceClient(conn)
	ctx, cancel := context.WithTimeout(operatorCtx(context.Background()), 3*time.Minute)
	defer cancel()
	turnID := ids.New(ids.Turn)
	resp, err := control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "default", ThreadId: "main", TurnId: turnID, IdempotencyKey: turnID,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "write notes again"}}}})
	if err != nil {
		t.Fatal(err)
	}
	c.killAndRestart("routing")
	w := c.watch(resp.GetSequence())
	w.until(t, "action.required")
	_ = w.cmd.Process.Kill() // its stream would break with control
	for _, name := range []string{"control", "permission", "tasks", "evidence"} {
		c.killAndRestart(name)
	}
	// The pending approval survived the restarts (read from the log again).
	if out := c.cli("approve"); !strings.Contains(out, "allow_once") {
		t.Fatalf("approve said %q", out)
	}
	w = c.watch(resp.GetSequence())
	done := w.until(t, "turn.completed")
	if done["turnId"] != turnID {
		t.Fatalf("turn.completed of %v, want %s; saw %v", done["turnId"], turnID, w.seen)
	}
	evs := readLog(t, c)
	exactlyOnce(t, evs)
	var types []string
	for _, ev := range evs {
		if ev.GetTurnId() == turnID {
			types = append(types, ev.GetType())
		}
	}
	inOrder(t, types, "turn.submitted", "turn.started", "permission.evaluated", "action.required", "action.resolved", "permission.resolved", "tool.result", "turn.completed")
}

// loadWithFaults submits turns from several clients, each retried with
// its turn id as idempotency key until acknowledged, while nats-server and
// redis-server are killed with SIGKILL and restarted and Redis is
// flushed. Every acknowledged turn is in the log exactly once and
// readable from control's read model afterwards.
func loadWithFaults(t *testing.T, c *cluster) {
	c.worker.kill() // only submits: no turn runs
	conn := c.conn()
	control := controlv1.NewControlServiceClient(conn)
	ctx, cancel := context.WithCancel(operatorCtx(context.Background()))
	defer cancel()

	type acked struct {
		session, thread, turn string
		seq                   uint64 // the consistency token SubmitTurn answered
	}
	var (
		mu       sync.Mutex
		acks     []acked
		codesErr = map[codes.Code]int{}
		wg       sync.WaitGroup
	)
	const clients = 4
	for g := range clients {
		wg.Go(func() {
			session := fmt.Sprintf("load-%d", g)
			for i := 0; ctx.Err() == nil; i++ {
				a := acked{session: session, thread: fmt.Sprintf("th-%d-%d", g, i), turn: ids.New(ids.Turn)}
				submit := func(ctx context.Context, req *controlv1.SubmitTurnRequest) (*controlv1.SubmitTurnResponse, error) {
					return control.SubmitTurn(ctx, req)
				}
				if seq, ok := submitAcked(ctx, a.session, a.thread, a.turn, 50*time.Millisecond, &mu, codesErr, submit); ok {
					a.seq = seq
					mu.Lock()
					acks = append(acks, a)
					mu.Unlock()
				}
			}
		})
	}
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acks) }
	waitAcks := func(n int) {
		testkit.EventuallyWithin(t, 60*time.Second, func() string {
			return fmt.Sprintf("only %d turns acknowledged; errors by code: %v", ackedCount(), codesErr)
		}, func() bool { return ackedCount() >= n })
	}
	waitAcks(20)
	c.nats.Kill()
	c.nats.Restart(t)
	waitAcks(ackedCount() + 20)
	c.redis.Kill()
	c.redis.Restart(t)
	waitAcks(ackedCount() + 20)
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(c.redis.Port)})
	defer rdb.Close()
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	waitAcks(ackedCount() + 20)
	cancel()
	wg.Wait()
	t.Logf("%d turns acknowledged; failed tries by code: %v", len(acks), codesErr)
	if codesErr[codes.Internal] > 0 || codesErr[codes.Unknown] > 0 {
		t.Errorf("an outage answered Internal/Unknown %d/%d times; want Unavailable", codesErr[codes.Internal], codesErr[codes.Unknown])
	}

	evs := readLog(t, c)
	exactlyOnce(t, evs)
	submitted := map[string]int{}
	for _, ev := range evs {
		if ev.GetType() == "turn.submitted" {
			submitted[ev.GetTurnId()]++
		}
	}
	for _, a := range acks {
		if n := submitted[a.turn]; n != 1 {
			t.Errorf("acknowledged turn %s is in the log %d times as turn.submitted", a.turn, n)
		}
	}
	// The read model was flushed: it is rebuilt from the log, and reads
	// answer Unavailable (not NotFound) until it is.
	rctx := operatorCtx(context.Background())
	deadline := time.Now().Add(90 * time.Second)
	for _, a := range acks {
		for {
			cctx, ccancel := context.WithTimeout(rctx, 5*time.Second)
			// With the sequence the submit answered (read-your-writes): a
			// read model rebuilding from the log may hold the thread before
			// it holds the turn.
			th, err := control.GetThreadRead(cctx, &controlv1.GetThreadReadRequest{SessionId: a.session, ThreadId: a.thread, MinSequence: a.seq})
			ccancel()
			if err == nil {
				if got := th.GetThread().GetActiveTurnId(); got != a.turn && !contains(th.GetThread().GetQueuedTurnIds(), a.turn) {
					t.Fatalf("thread %s/%s read model has active %q queued %v, not turn %s", a.session, a.thread, got, th.GetThread().GetQueuedTurnIds(), a.turn)
				}
				break
			}
			if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
				t.Fatalf("read of thread %s/%s after the flush: %v; want the thread, or Unavailable while rebuilding", a.session, a.thread, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("read models not rebuilt within 90s: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
		}
	}
}

// healthTruth stops redis-server: once control's projectors have kept
// failing for the bound (--ready-failing-for, 5s), control answers
// NOT_SERVING for its service name while the process (health "") stays
// SERVING; with Redis back it is SERVING again.
func healthTruth(t *testing.T, c *cluster) {
	c.redis.Kill()
	// A fact for control's projectors to fail on.
	nc, err := nats.Connect(c.nats.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	session := ids.New("ses")
	if _, err := log.Append(ctx, eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "session", ID: session}, eventlog.ExpectSequence(0),
		&eventsv1.RuntimeEvent{Type: "session.created", SessionId: session, Payload: &eventsv1.RuntimeEvent_SessionCreated{SessionCreated: &eventsv1.SessionCreated{CreatedBy: "system-test"}}}); err != nil {
		t.Fatal(err)
	}
	c.waitHealth("control", endpoints.HealthName("control"), healthpb.HealthCheckResponse_NOT_SERVING)
	if got := c.health("control", ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("liveness (\"\") of control while Redis is down: %v, want SERVING", got)
	}
	c.redis.Restart(t)
	c.waitServing("control")
}

// TestServeRefusesAnUnfitNATS starts a service against a NATS server that
// reports an old version: it exits at once naming found and needed.
func TestServeRefusesAnUnfitNATS(t *testing.T) {
	url := natsserver.Fake(t, natsserver.FakeInfo{Version: "2.9.10", JetStream: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "serve", "control", "--listen", "127.0.0.1:0", "--nats", url,
		"--redis", redistest.URL(t), "--auth", writeAuth(t)).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("serve against nats-server 2.9.10: err=%v (ctx %v)\n%s", err, ctx.Err(), out)
	}
	for _, want := range []string{"nats-server 2.9.10", "need " + eventlog.MinServerVersion() + " or later"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("serve's error does not say %q:\n%s", want, out)
		}
	}
}

// readLog reads the whole event log from nats-server.
func readLog(t *testing.T, c *cluster) []*eventsv1.RuntimeEvent {
	t.Helper()
	nc, err := nats.Connect(c.nats.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*eventsv1.RuntimeEvent
	if _, err := log.Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error {
		evs = append(evs, r.Event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return evs
}

// exactlyOnce: no event id twice, and no turn submitted or ended twice.
func exactlyOnce(t *testing.T, evs []*eventsv1.RuntimeEvent) {
	t.Helper()
	byID := map[string]int{}
	perTurn := map[string]int{}
	for _, ev := range evs {
		byID[ev.GetEventId()]++
		switch ev.GetType() {
		case "turn.submitted", "turn.completed":
			perTurn[ev.GetType()+" "+ev.GetTurnId()]++
		}
	}
	for id, n := range byID {
		if n > 1 {
			t.Errorf("event %s is in the log %d times", id, n)
		}
	}
	for k, n := range perTurn {
		if n > 1 {
			t.Errorf("%s is in the log %d times", k, n)
		}
	}
}

func inOrder(t *testing.T, got []string, want ...string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("timeline %v lacks %v (in order) from %q", got, want, want[i])
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
