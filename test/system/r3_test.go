package system_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/endpoints"
	"github.com/agentruntime/agentruntime/pkg/enums"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// partitions is the event log's partition count in the cluster test: three
// streams, their leaders spread over the three nodes.
const partitions = 3

// TestR3Cluster runs the production shape's cluster on loopback
// (docs/scaling.md, "The cluster system test"): three clustered nats-server
// processes with the event log at R3 in three partitions (`serve --replicas
// 3 --partitions 3`), their leaders on three different nodes, redis-server,
// two replicas of each of the five services and two workers, each worker
// and CLI reaching its own replica of every service. It runs the README
// tour, leaves a second turn waiting for its approval, then submits load
// from clients spread over both control replicas (the turn id is the
// idempotency key; each submit retried until acknowledged) while a client
// follows the tenant's events across sessions, and kills with SIGKILL the
// node leading partition 0, then, once it is back, another node, then one
// replica of each service; the following client is cut at each node kill
// and resumes on the other control replica by its cursor. It asserts every
// acknowledged turn in the log exactly once and every event once, the
// follower given every event of the tenant exactly once, no status but
// Unavailable and DeadlineExceeded seen by a client, the waiting turn
// completed after its approval, both control replicas answering the same
// read model with each turn counted once in it (two replicas' projectors
// fold into one Redis read model), and the other services' replicas
// answering the tour's session alike; it logs each write stall of the
// killed node's partitions beside the election measured in the same run.
func TestR3Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node NATS cluster, ten serve processes and two workers")
	}
	nodes := natsserver.StartCluster(t, 3)
	sets := replicaSets(t, nodes, redistest.Start(t, redistest.Options{AppendOnly: true}), 2)
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range nodes.Servers {
				t.Logf("--- nats-server %s output (tail):\n%s", s.Name, tail(s.Output(), 4000))
			}
		}
	})
	// Workers claim the tour's session only: the load below exercises the
	// write path, not the agent loop, on two shared cores.
	for _, c := range sets {
		c.startWorker("--worker-session", "default")
	}
	t.Run("tour", func(t *testing.T) { sets[0].t = t; tour(t, sets[0]) })
	if t.Failed() {
		return
	}
	for _, c := range sets {
		c.t = t
	}
	// A turn waits for its approval through everything below.
	waitingCtx, cancelWaiting := context.WithTimeout(operatorCtx(context.Background()), time.Minute)
	defer cancelWaiting()
	waitingTurn := ids.New(ids.Turn)
	waiting, err := controlv1.NewControlServiceClient(sets[1].conn()).SubmitTurn(waitingCtx, &controlv1.SubmitTurnRequest{SessionId: "default", ThreadId: "main", TurnId: waitingTurn, IdempotencyKey: waitingTurn,
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "write notes again"}}}})
	if err != nil {
		t.Fatal(err)
	}
	w := sets[1].watch(waiting.GetSequence())
	w.until(t, "action.required")
	_ = w.cmd.Process.Kill()

	controls := []*proc{sets[0].services["control"], sets[1].services["control"]}
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

	// A client follows the tenant's whole story across the partitions,
	// resumed by its cursor whenever its stream ends or is cut.
	tw := watchTenant(ctx, t, clients)

	const submitters = 4
	var (
		mu      sync.Mutex
		acked   []string // turn ids
		ackedAt []time.Time
		ackedIn []int                 // the partition of each acknowledged turn
		seqOf   = map[string]uint64{} // each acknowledged turn's position
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
						ackedIn = append(ackedIn, int(resp.GetSequence()%partitions))
						seqOf[turn] = resp.GetSequence()
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
	// Each partition is a stream with a leader of its own, spread over the
	// nodes when the log is opened (ADR 0013).
	leaders := func() []*natsserver.Server {
		t.Helper()
		out := make([]*natsserver.Server, partitions)
		for k := range out {
			l, err := nodes.StreamLeader(ctx, nc, fmt.Sprintf("AGENTRUNTIME_%d", k))
			if err != nil {
				t.Fatal(err)
			}
			out[k] = l
		}
		return out
	}
	// (Polled: the replicas' step-downs at start may still be moving one.)
	var names []string
	testkit.EventuallyWithin(t, 30*time.Second, func() string {
		return fmt.Sprintf("partition leaders %v: want %d different nodes", names, partitions)
	}, func() bool {
		names = serverNames(leaders())
		return len(distinct(names)) == partitions
	})
	type round struct {
		killed, elected string
		led             []int // the partitions the killed node led
		killedAt        time.Time
		election        time.Duration
	}
	var rounds []round
	progress(30)
	var killed []*natsserver.Server
	for range 2 {
		// The node leading the first partition not led by a node killed
		// before: the first round kills partition 0's leader, the second
		// another node.
		var leader *natsserver.Server
		now := leaders()
		for _, l := range now {
			if !slices.Contains(killed, l) {
				leader = l
				break
			}
		}
		if leader == nil {
			t.Fatalf("every partition is led by a node killed before: %v", serverNames(now))
		}
		r := round{killed: leader.Name, killedAt: time.Now()}
		for k, l := range now {
			if l == leader {
				r.led = append(r.led, k)
			}
		}
		leader.Kill()
		tw.cut() // the watch resumes on the other replica by cursor, through the election
		// The election: until every partition the node led has a new
		// leader.
		var elected []string
		for _, k := range r.led {
			next, err := nodes.StreamLeader(ctx, nc, fmt.Sprintf("AGENTRUNTIME_%d", k))
			if err != nil {
				t.Fatal(err)
			}
			elected = append(elected, next.Name)
		}
		r.election, r.elected = time.Since(r.killedAt), strings.Join(elected, ",")
		rounds = append(rounds, r)
		progress(30)
		leader.Restart(t)
		killed = append(killed, leader)
	}
	progress(10)
	// One replica of each service, SIGKILLed and restarted in turn; the
	// other serves meanwhile.
	for i, name := range endpoints.Services {
		sets[i%len(sets)].killAndRestart(name)
		progress(5)
	}
	close(stop)
	wg.Wait()

	// The waiting turn survived it all: approved through the other set.
	if out := sets[0].cli("approve"); !strings.Contains(out, "allow_once") {
		t.Fatalf("approve said %q", out)
	}
	w = sets[0].watch(waiting.GetSequence())
	if done := w.until(t, "turn.completed"); done["turnId"] != waitingTurn {
		t.Fatalf("turn.completed of %v, want %s; saw %v", done["turnId"], waitingTurn, w.seen)
	}

	mu.Lock()
	defer mu.Unlock()
	for k, r := range rounds {
		// The stall: the longest time between two acknowledgements of
		// turns in the partitions the killed node led, from the kill until
		// the next round; and how many turns the other partitions
		// acknowledged during the election.
		until := time.Now()
		if k+1 < len(rounds) {
			until = rounds[k+1].killedAt
		}
		var stall time.Duration
		prev, others := r.killedAt, 0
		for i, at := range ackedAt {
			if !at.After(r.killedAt) || !at.Before(until) {
				continue
			}
			if !slices.Contains(r.led, ackedIn[i]) {
				if at.Before(r.killedAt.Add(r.election)) {
					others++
				}
				continue
			}
			stall = max(stall, at.Sub(prev))
			prev = at
		}
		t.Logf("killed %s leading partitions %v: %s elected after %v; longest write stall of those partitions %v; turns acknowledged in the other partitions meanwhile %d",
			r.killed, r.led, r.elected, r.election.Round(time.Millisecond), stall.Round(time.Millisecond), others)
	}
	t.Logf("acknowledged turns %d; client errors by code: %v", len(acked), codesOf)
	for code, n := range codesOf {
		if code != codes.Unavailable && code != codes.DeadlineExceeded {
			t.Errorf("clients saw %v %d times (only Unavailable and DeadlineExceeded are retries): %v", code, n, codesOf)
		}
	}

	// Every acknowledged turn in the log exactly once.
	log, err := eventlog.Open(ctx, nc, eventlog.Config{Storage: jetstream.FileStorage, Replicas: 3, Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	submitted := map[string]int{}
	var evs []*eventsv1.RuntimeEvent
	for _, view := range log.Views() {
		if _, err := view.Read(ctx, nil, eventlog.FromStart, func(r *eventlog.Record) error {
			evs = append(evs, r.Event)
			if r.Event.GetType() == "turn.submitted" {
				submitted[r.Event.GetTurnId()]++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	exactlyOnce(t, evs)

	// The watch across sessions got every event of the tenant exactly once,
	// resumed by cursor through both kills.
	var want []string
	inLog := map[string]bool{}
	for _, ev := range evs {
		if ev.GetTenantId() == tenant {
			want = append(want, ev.GetEventId())
			inLog[ev.GetEventId()] = true
		}
	}
	if missing := tw.until(want, time.Now().Add(60*time.Second)); len(missing) > 0 {
		t.Errorf("the watch across sessions missed %d of %d events, e.g. %v", len(missing), len(want), missing[:min(len(missing), 5)])
	}
	tw.mu.Lock()
	for id, n := range tw.seen {
		if n > 1 {
			t.Errorf("the watch across sessions got event %s %d times", id, n)
		}
		if !inLog[id] {
			t.Errorf("the watch across sessions got event %s, which is not in the log", id)
		}
	}
	t.Logf("watch across sessions: %d events, resumed by cursor %d times; streams ended by %v", len(tw.seen), tw.resumes, tw.codes)
	if tw.resumes < len(rounds) {
		t.Errorf("the watch resumed %d times, want at least %d (one per kill)", tw.resumes, len(rounds))
	}
	tw.mu.Unlock()
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
			// the turn's position: polled, with a deadline.
			var resp *controlv1.GetSessionResponse
			var err error
			for deadline := time.Now().Add(60 * time.Second); ; {
				actx, cancel := context.WithTimeout(operatorCtx(ctx), 10*time.Second)
				resp, err = client.GetSession(actx, &controlv1.GetSessionRequest{SessionId: session, MinSequence: seqOf[turn]})
				cancel()
				if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond) // polling the read model, with a deadline
			}
			if err != nil {
				t.Fatalf("GetSession %s on control replica %d: %v", session, i, err)
			}
			// Both replicas fold into the one read model in Redis: a batch
			// applied twice would count the turn twice.
			if n := resp.GetSession().GetTurnCount(); n != 1 {
				t.Fatalf("session %s on control replica %d counts %d turns, the log holds 1: a fold applied more than once", session, i, n)
			}
			for _, h := range resp.GetHistory() {
				views[i] += fmt.Sprint(h.GetTurnId(), ":", enums.Word(h.GetStatus()), ";")
			}
			for _, th := range resp.GetThreads() {
				views[i] += fmt.Sprint(th.GetThreadId(), " ", th.GetStatus(), " ", th.GetActiveTurnId(), " ", th.GetQueuedTurnIds(), ";")
			}
		}
		if views[0] != views[1] || views[0] == "" {
			t.Fatalf("session %s: replica 0 answers %q, replica 1 %q", session, views[0], views[1])
		}
	}
	// And every other service's replicas answer the tour's session alike.
	sameOnEveryReplica(operatorCtx(ctx), t, sets)
}

// sameOnEveryReplica asks each replica set's replica of every service the
// same reads of the tour's session and asserts they converge on one
// answer: the replicas fold into one read model (polled, with a deadline,
// while the last facts are folded).
func sameOnEveryReplica(ctx context.Context, t *testing.T, sets []*cluster) {
	t.Helper()
	reads := map[string]func(conn *grpc.ClientConn) (proto.Message, error){
		"tasks ListTasks": func(conn *grpc.ClientConn) (proto.Message, error) {
			r, err := tasksv1.NewTasksServiceClient(conn).ListTasks(ctx, &tasksv1.ListTasksRequest{SessionId: "default"})
			return r, err
		},
		"routing GetBudgets": func(conn *grpc.ClientConn) (proto.Message, error) {
			r, err := routingv1.NewRoutingServiceClient(conn).GetBudgets(ctx, &routingv1.GetBudgetsRequest{SessionId: "default"})
			return r, err
		},
		"permission GetPermissionState": func(conn *grpc.ClientConn) (proto.Message, error) {
			r, err := permissionv1.NewPermissionServiceClient(conn).GetPermissionState(ctx, &permissionv1.GetPermissionStateRequest{Target: &permissionv1.Target{SessionId: "default", ThreadId: "main"}})
			return r, err
		},
		"evidence GetEvidenceSummary": func(conn *grpc.ClientConn) (proto.Message, error) {
			r, err := evidencev1.NewEvidenceServiceClient(conn).GetEvidenceSummary(ctx, &evidencev1.GetEvidenceSummaryRequest{SessionId: "default"})
			return r, err
		},
	}
	for read, call := range reads {
		service := strings.Fields(read)[0]
		conns := make([]*grpc.ClientConn, len(sets))
		for i, c := range sets {
			cc, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(c.services[service].port), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			conns[i] = cc
		}
		var answers []proto.Message
		testkit.EventuallyWithin(t, 30*time.Second, func() string {
			return fmt.Sprintf("%s answers differently on the replicas: %v", read, answers)
		}, func() bool {
			answers = answers[:0]
			for _, cc := range conns {
				m, err := call(cc)
				if err != nil {
					t.Fatalf("%s: %v", read, err)
				}
				answers = append(answers, m)
			}
			same := true
			for _, m := range answers[1:] {
				same = same && proto.Equal(m, answers[0])
			}
			return same
		})
	}
}

func serverNames(servers []*natsserver.Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Name
	}
	return out
}

func distinct(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// replicaSets starts n replicas of each of the five services on one
// clustered NATS (the stream at R3) and one Redis. Set i is the i-th
// replica of every service: a cluster of its own for the helpers
// (endpoints, CLI, watch, a worker), all sets sharing the workspace.
func replicaSets(t *testing.T, nodes *natsserver.Cluster, redis *redistest.Server, n int) []*cluster {
	t.Helper()
	authFile, ws, models := writeAuth(t), workspace(t), demoModels(t)
	sets := make([]*cluster, n)
	for i := range sets {
		c := &cluster{t: t, redis: redis, authFile: authFile, models: models, ws: ws, services: map[string]*proc{}}
		for _, name := range endpoints.Services {
			c.services[name] = c.serveProc(fmt.Sprintf("%s-%d", name, i), name, nodes.URLs(), "--replicas", "3", "--partitions", strconv.Itoa(partitions))
		}
		sets[i] = c
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range sets {
				for _, p := range c.all() {
					t.Logf("--- %s :%d output:\n%s", p.name, p.port, p.out.String())
				}
			}
		}
	})
	// The first creates the stream at R3; the others find it.
	sets[0].services["control"].start(t)
	sets[0].waitServing("control")
	for i, c := range sets {
		for _, name := range endpoints.Services {
			if i > 0 || name != "control" {
				c.services[name].start(t)
			}
		}
	}
	for _, c := range sets {
		for _, name := range endpoints.Services {
			c.waitServing(name)
		}
	}
	return sets
}
