package system_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// TestR3Cluster runs the production shape's cluster on loopback (issue 24
// item 6, reduced): three clustered nats-server processes with the event
// stream at R3 (`serve --replicas 3`), redis-server, two replicas each of
// control and tasks. Clients spread over both control replicas submit
// turns (the turn id is the idempotency key; each submit retried until
// acknowledged) while the node leading the stream is killed with SIGKILL,
// then, once it is back, the node leading after it. It asserts every
// acknowledged turn in the log exactly once, no Internal and no Aborted
// seen by a client, and both control replicas answering the same read
// model; it logs each write stall beside the election measured in the
// same run.
func TestR3Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node NATS cluster and four serve processes")
	}
	if os.Getenv("AR_SYSTEM_R3") == "" {
		t.Skip("set AR_SYSTEM_R3=1 to run the R3 cluster system test (about a minute)")
	}
	nodes := natsserver.StartCluster(t, 3)
	redis := redistest.Start(t, redistest.Options{AppendOnly: true})
	authFile := writeAuth(t)
	var procs []*proc
	start := func(name string) *proc {
		p := &proc{name: name, port: freePort(t)}
		p.args = []string{"serve", name, "--listen", "127.0.0.1:" + strconv.Itoa(p.port), "--nats", nodes.URLs(), "--redis", redis.URL,
			"--replicas", "3", "--auth", authFile, "--log-level", "warn"}
		p.start(t)
		procs = append(procs, p)
		return p
	}
	waitServing := func(p *proc) { (&cluster{t: t, services: map[string]*proc{p.name: p}}).waitServing(p.name) }
	// The first creates the stream at R3; the others find it.
	controls := []*proc{start("control")}
	waitServing(controls[0])
	controls = append(controls, start("control"))
	tasks := []*proc{start("tasks"), start("tasks")}
	for _, p := range append(controls[1:], tasks...) {
		waitServing(p)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range procs {
				t.Logf("--- %s :%d output:\n%s", p.name, p.port, p.out.String())
			}
			for _, s := range nodes.Servers {
				t.Logf("--- nats-server %s output (tail):\n%s", s.Name, tail(s.Output(), 4000))
			}
		}
	})
	clients := make([]controlv1.ControlServiceClient, len(controls))
	for i, p := range controls {
		cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(p.port), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		clients[i] = controlv1.NewControlServiceClient(cc)
	}
	nc, err := nats.Connect(nodes.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	const submitters = 4
	var (
		mu      sync.Mutex
		acked   []string // turn ids
		ackedAt []time.Time
		maxSeq  uint64
		codesOf = map[codes.Code]int{}
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				session := fmt.Sprintf("r3s%d-%04d", s, i)
				turn := "turn-" + session
				for attempt := 0; ; attempt++ {
					client := clients[(s+i+attempt)%len(clients)]
					actx, cancel := context.WithTimeout(operatorCtx(ctx), 3*time.Second)
					resp, err := client.SubmitTurn(actx, &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: "th-" + session, TurnId: turn, IdempotencyKey: turn,
						Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
					cancel()
					mu.Lock()
					if err == nil {
						acked = append(acked, turn)
						ackedAt = append(ackedAt, time.Now())
						maxSeq = max(maxSeq, resp.GetSequence())
					} else {
						codesOf[status.Code(err)]++
					}
					mu.Unlock()
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						return
					}
					if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
						return // a refusal: reported below
					}
				}
			}
		}()
	}
	progress := func(n int) {
		t.Helper()
		mu.Lock()
		base := len(acked)
		mu.Unlock()
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= base+n {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				t.Fatalf("no progress: %d acknowledged turns, %d wanted; client errors %v", got-base, n, codesOf)
			}
			time.Sleep(20 * time.Millisecond) // polling the submitters' progress
		}
	}
	type round struct {
		killed, elected string
		killedAt        time.Time
		election        time.Duration
	}
	var rounds []round
	progress(30)
	var killed []*natsserver.Server
	for range 2 {
		leader, err := nodes.StreamLeader(ctx, nc, "AGENTRUNTIME")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range killed {
			if k == leader {
				t.Fatalf("%s leads again", leader.Name)
			}
		}
		r := round{killed: leader.Name, killedAt: time.Now()}
		leader.Kill()
		next, err := nodes.StreamLeader(ctx, nc, "AGENTRUNTIME")
		if err != nil {
			t.Fatal(err)
		}
		r.election, r.elected = time.Since(r.killedAt), next.Name
		rounds = append(rounds, r)
		progress(30)
		leader.Restart(t)
		killed = append(killed, leader)
	}
	progress(10)
	close(stop)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for k, r := range rounds {
		// The stall: the longest time between two acknowledgements from
		// the kill until the next one.
		until := time.Now()
		if k+1 < len(rounds) {
			until = rounds[k+1].killedAt
		}
		var stall time.Duration
		for i := 1; i < len(ackedAt); i++ {
			if ackedAt[i].After(r.killedAt) && ackedAt[i].Before(until) {
				prev := ackedAt[i-1]
				if prev.Before(r.killedAt) {
					prev = r.killedAt
				}
				stall = max(stall, ackedAt[i].Sub(prev))
			}
		}
		t.Logf("killed stream leader %s: %s elected after %v; longest write stall around it %v", r.killed, r.elected, r.election.Round(time.Millisecond), stall.Round(time.Millisecond))
	}
	t.Logf("acknowledged turns %d; client errors by code: %v", len(acked), codesOf)
	for code, n := range codesOf {
		if code != codes.Unavailable && code != codes.DeadlineExceeded {
			t.Errorf("clients saw %v %d times (only Unavailable and DeadlineExceeded are retries): %v", code, n, codesOf)
		}
	}

	// Every acknowledged turn in the log exactly once.
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Storage: jetstream.FileStorage, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	submitted := map[string]int{}
	if _, err := log.Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error {
		if r.Event.GetType() == "turn.submitted" {
			submitted[r.Event.GetTurnId()]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, turn := range acked {
		if submitted[turn] != 1 {
			t.Errorf("acknowledged %s is in the log %d times, want once", turn, submitted[turn])
		}
	}

	// Both control replicas answer the same read model.
	sort.Strings(acked)
	for _, turn := range acked {
		session := turn[len("turn-"):]
		var views [2]string
		for i, client := range clients {
			// Unavailable while the replica's read model catches up to
			// maxSeq: polled, with a deadline.
			var resp *controlv1.GetSessionResponse
			var err error
			for deadline := time.Now().Add(60 * time.Second); ; {
				actx, cancel := context.WithTimeout(operatorCtx(ctx), 10*time.Second)
				resp, err = client.GetSession(actx, &controlv1.GetSessionRequest{SessionId: session, MinSequence: maxSeq})
				cancel()
				if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond) // polling the read model, with a deadline
			}
			if err != nil {
				t.Fatalf("GetSession %s on control replica %d: %v", session, i, err)
			}
			for _, h := range resp.GetHistory() {
				views[i] += h.GetTurnId() + ":" + h.GetStatus() + ";"
			}
			for _, th := range resp.GetThreads() {
				views[i] += fmt.Sprint(th.GetThreadId(), " ", th.GetStatus(), " ", th.GetActiveTurnId(), " ", th.GetQueuedTurnIds(), ";")
			}
		}
		if views[0] != views[1] || views[0] == "" {
			t.Fatalf("session %s: replica 0 answers %q, replica 1 %q", session, views[0], views[1])
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
