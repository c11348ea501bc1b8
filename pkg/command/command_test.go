package command_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

var agg = eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "account", ID: "a1"}

// account is the aggregate of these tests: a balance moved by deposits and
// withdrawals, never below zero. Its fold refuses an event that would break
// that, so a decision taken on stale state stops the read model and fails
// the test. Each event's message names the command that appended it.
type account struct{ log *eventlog.Log }

func (account) Name() string { return "test.account" }

func (a account) Filters() []string { return []string{a.log.Subjects.Aggregate(agg)} }

func (account) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	bal, err := balance(ctx, store)
	if err != nil {
		return projection.Batch{}, err
	}
	w := rec.Event.GetRuntimeWarning()
	amount, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(w.GetCode(), "dep:"), "wd:"))
	if strings.HasPrefix(w.GetCode(), "wd:") {
		amount = -amount
	}
	// A claim "=N" says what the balance must be before the event: a
	// compare-and-set that only a decision on the latest state gets right.
	if want, ok := strings.CutPrefix(w.GetDetails()["before"], "="); ok && want != strconv.Itoa(bal) {
		return projection.Batch{}, fmt.Errorf("event of %s decided on balance %s, log says %d", w.GetMessage(), want, bal)
	}
	if bal+amount < 0 {
		return projection.Batch{}, fmt.Errorf("event of %s overdraws %d by %d", w.GetMessage(), bal, -amount)
	}
	return projection.Batch{Puts: []projection.KV{{Key: "balance", Value: []byte(strconv.Itoa(bal + amount))}}}, nil
}

func balance(ctx context.Context, store projection.Store) (int, error) {
	raw, err := store.Get(ctx, "balance")
	if errors.Is(err, projection.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(raw))
}

var errOverdraw = errors.New("insufficient balance")

// op is one command: a deposit (amount > 0) or a withdrawal (< 0).
type op struct {
	id     string
	amount int
}

// decideOp is the pure decision: a withdrawal beyond the balance is refused.
func decideOp(o op) command.Decide {
	return func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		bal, err := balance(ctx, st)
		if err != nil {
			return nil, err
		}
		return decidePure(bal, o)
	}
}

func decidePure(bal int, o op) ([]*eventsv1.RuntimeEvent, error) {
	code := "dep:" + strconv.Itoa(o.amount)
	if o.amount < 0 {
		if bal+o.amount < 0 {
			return nil, errOverdraw
		}
		code = "wd:" + strconv.Itoa(-o.amount)
	}
	return []*eventsv1.RuntimeEvent{{
		Type: "runtime.warning",
		Payload: &eventsv1.RuntimeEvent_RuntimeWarning{RuntimeWarning: &eventsv1.RuntimeWarning{
			Code: code, Message: o.id, Details: map[string]string{"before": "=" + strconv.Itoa(bal)},
		}}},
	}, nil
}

func openLog(t *testing.T) *eventlog.Log {
	t.Helper()
	log, err := eventlog.Open(context.Background(), natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// replicas are executors of separate processes: each has its own cache and
// its own connection to one log.
func replicas(t *testing.T, n int) (*eventlog.Log, []*command.Writer) {
	t.Helper()
	srv := natstest.Server(t)
	var log *eventlog.Log
	xs := make([]*command.Writer, n)
	for i := range xs {
		l, err := eventlog.Open(context.Background(), natstest.Connect(t, srv), eventlog.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if log == nil {
			log = l
		}
		xs[i] = command.NewWriter(l, account{log: l}, command.Options{MaxAttempts: 1000})
	}
	return log, xs
}

// logged reads the aggregate from the log: the commands in commit order and
// the balance the read model's fold reaches (an error if any event was
// decided on stale state).
func logged(t *testing.T, log *eventlog.Log) ([]string, int) {
	t.Helper()
	ctx := context.Background()
	store := projection.NewMemory()
	var cmds []string
	_, err := log.Read(ctx, []string{log.Subjects.Aggregate(agg)}, eventlog.FromStart, func(r *eventlog.Record) error {
		cmds = append(cmds, r.Event.GetRuntimeWarning().GetMessage())
		return projector.ApplyOne(ctx, store, account{log: log}, r)
	})
	if err != nil {
		t.Fatalf("the log does not fold: %v", err)
	}
	bal, err := balance(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	return cmds, bal
}

func TestReplicasExactlyOneWinsEachRound(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			log, xs := replicas(t, n)
			const rounds = 10
			for round := 0; round < rounds; round++ {
				// Every replica holds the aggregate as it stands now, so
				// each decides its first attempt on the same state.
				var start uint64
				for _, x := range xs {
					st, err := x.Refresh(ctx, agg)
					if err != nil {
						t.Fatal(err)
					}
					start = st.Last
				}
				var firstTry atomic.Int32
				var wg sync.WaitGroup
				gate := make(chan struct{})
				for i, x := range xs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-gate
						calls := 0
						res, err := x.Execute(ctx, agg, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
							calls++
							if calls > 1 && st.Last == start {
								return nil, fmt.Errorf("replica %d decided again on the state it lost on", i)
							}
							return decideOp(op{id: fmt.Sprintf("r%d-%d", round, i), amount: 1})(ctx, st)
						})
						if err != nil {
							t.Error(err)
							return
						}
						if calls == 1 {
							firstTry.Add(1)
							next, err := log.History(ctx, log.Subjects.Aggregate(agg), start+1, 1)
							if err != nil || len(next) != 1 || next[0].Event.GetSequence() != res.Appended[0].Sequence {
								t.Errorf("the winner landed at %d, not right after %d (%v, %v)", res.Appended[0].Sequence, start, next, err)
							}
						}
					}()
				}
				close(gate)
				wg.Wait()
				if got := firstTry.Load(); got != 1 {
					t.Fatalf("round %d: %d replicas won on their first decision, want exactly 1", round, got)
				}
			}
			cmds, bal := logged(t, log)
			if len(cmds) != rounds*n || bal != rounds*n {
				t.Fatalf("%d events, balance %d; want %d of each", len(cmds), bal, rounds*n)
			}
		})
	}
}

func TestStaleReplicaDecidesAgainOnTheLog(t *testing.T) {
	ctx := context.Background()
	log, xs := replicas(t, 2)
	a, b := xs[0], xs[1]
	if _, err := a.Execute(ctx, agg, "", decideOp(op{id: "deposit", amount: 10})); err != nil {
		t.Fatal(err)
	}
	// b loads the aggregate (balance 10), then a spends it all: b's entry
	// is stale.
	if st, err := b.Load(ctx, agg); err != nil || st.Last == 0 {
		t.Fatalf("load: %+v %v", st, err)
	}
	if _, err := a.Execute(ctx, agg, "", decideOp(op{id: "spend", amount: -10})); err != nil {
		t.Fatal(err)
	}
	decisions := 0
	_, err := b.Execute(ctx, agg, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		decisions++
		return decideOp(op{id: "stale-spend", amount: -5})(ctx, st)
	})
	if !errors.Is(err, errOverdraw) {
		t.Fatalf("a withdrawal decided on the stale balance was not refused on the log's: %v", err)
	}
	if decisions != 2 {
		t.Fatalf("%d decisions, want 2 (stale, then after the conflict)", decisions)
	}
	if cmds, bal := logged(t, log); bal != 0 || len(cmds) != 2 {
		t.Fatalf("log holds %v, balance %d", cmds, bal)
	}
}

func TestReplicaRestartedMidStreamContinuesFromTheLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, xs := replicas(t, 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written atomic.Int32
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := xs[0].Execute(ctx, agg, "", decideOp(op{id: fmt.Sprintf("steady-%d", i), amount: 1})); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	}()
	for i := 0; i < 5; i++ {
		// A restart: a new process with an empty cache, while the other
		// replica keeps writing.
		x := command.NewWriter(log, account{log: log}, command.Options{MaxAttempts: 1000})
		for j := 0; j < 5; j++ {
			if _, err := x.Execute(ctx, agg, command.Key(fmt.Sprintf("restarted-%d-%d", i, j)), decideOp(op{id: fmt.Sprintf("restarted-%d-%d", i, j), amount: 1})); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	cmds, bal := logged(t, log)
	if want := int(written.Load()) + 25; len(cmds) != want || bal != want {
		t.Fatalf("%d events, balance %d, want %d", len(cmds), bal, want)
	}
}

func TestRetriedCommandAppendsNothingTwiceAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	log, xs := replicas(t, 2)
	submit := func(x *command.Writer) command.Result {
		t.Helper()
		// The decision itself is blind to the first attempt (it would
		// append again); only the derived ids recognise the retry.
		res, err := x.Execute(ctx, agg, "submit-42", decideOp(op{id: "submit-42", amount: 7}))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := submit(xs[0])
	// Another process (a restart) retries, and the first retries too.
	for _, res := range []command.Result{submit(command.NewWriter(log, account{log: log}, command.Options{})), submit(xs[1]), submit(xs[0])} {
		if len(res.Appended) != 1 || !res.Appended[0].Duplicate || res.Appended[0].Sequence != first.Sequence {
			t.Fatalf("retry appended %+v, want the first attempt's event at %d as a duplicate", res.Appended, first.Sequence)
		}
		if bal, _ := balance(ctx, res.State); bal != 7 {
			t.Fatalf("the retry answers balance %d, want 7", bal)
		}
	}
	if cmds, _ := logged(t, log); len(cmds) != 1 {
		t.Fatalf("the log holds %v, want one event", cmds)
	}
}

func TestAnswerFromTheDecisionWithoutAProjection(t *testing.T) {
	ctx := context.Background()
	log := openLog(t)
	x := command.NewWriter(log, account{log: log}, command.Options{})
	res, err := x.Execute(ctx, agg, "", decideOp(op{id: "d", amount: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if bal, err := balance(ctx, res.State); err != nil || bal != 3 || res.State.Last != res.Sequence {
		t.Fatalf("answer: balance %d at %d (%v), want 3 at %d", bal, res.State.Last, err, res.Sequence)
	}
	deposited := res.Sequence
	res, err = x.Execute(ctx, agg, "", func(context.Context, command.State) ([]*eventsv1.RuntimeEvent, error) { return nil, nil })
	if err != nil || res.Sequence != deposited || len(res.Appended) != 0 {
		t.Fatalf("no-op: %+v %v", res, err)
	}
	want := fmt.Errorf("refused")
	if _, err := x.Execute(ctx, agg, "", func(context.Context, command.State) ([]*eventsv1.RuntimeEvent, error) { return nil, want }); err != want {
		t.Fatalf("decide error not returned: %v", err)
	}
}

func TestCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	log := openLog(t)
	x := command.NewWriter(log, account{log: log}, command.Options{CacheSize: 3})
	for i := 0; i < 10; i++ {
		a := agg
		a.ID = fmt.Sprintf("a%d", i)
		if _, err := x.Load(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if n := x.Len(); n != 3 {
		t.Fatalf("holds %d aggregates, want 3", n)
	}
}

// TestRandomInterleavingsAreSerializable is the property: commands from
// several replicas, interleaved at random, leave the log exactly as
// applying the same commands one at a time in the order they committed
// would: every committed command is one a sequential run accepts at its
// position, none lands twice, every command either committed or was
// refused, and the balance is the sequential one.
func TestRandomInterleavingsAreSerializable(t *testing.T) {
	const cases = 8
	for c := 0; c < cases; c++ {
		seed := uint64(time.Now().UnixNano()) + uint64(c)
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n := 2 + rng.IntN(2)
			log, xs := replicas(t, n)
			ops := make([]op, 20+rng.IntN(20))
			for i := range ops {
				amount := 1 + rng.IntN(9)
				if rng.IntN(2) == 0 {
					amount = -amount
				}
				ops[i] = op{id: "op" + strconv.Itoa(i), amount: amount}
			}
			// Each replica takes a random share, run concurrently; some
			// commands are retried (same key), some go through a restarted
			// replica.
			byReplica := make([][]op, n)
			for _, o := range ops {
				r := rng.IntN(n)
				byReplica[r] = append(byReplica[r], o)
			}
			refused := sync.Map{}
			var wg sync.WaitGroup
			for r, mine := range byReplica {
				retry := rng.IntN(2) == 0
				wg.Add(1)
				go func() {
					defer wg.Done()
					x := xs[r]
					for i, o := range mine {
						if i == len(mine)/2 && r == 0 {
							x = command.NewWriter(log, account{log: log}, command.Options{MaxAttempts: 1000})
						}
						for try := 0; try < 1+boolInt(retry); try++ {
							_, err := x.Execute(ctx, agg, command.Key(o.id), decideOp(o))
							if errors.Is(err, errOverdraw) {
								refused.Store(o.id, true)
								continue
							}
							if err != nil {
								t.Error(err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			cmds, bal := logged(t, log)
			byID := map[string]op{}
			for _, o := range ops {
				byID[o.id] = o
			}
			seq, seen := 0, map[string]bool{}
			for _, id := range cmds {
				if seen[id] {
					t.Fatalf("%s landed twice", id)
				}
				seen[id] = true
				if _, err := decidePure(seq, byID[id]); err != nil {
					t.Fatalf("%s committed though a sequential run refuses it at balance %d", id, seq)
				}
				seq += byID[id].amount
			}
			if seq != bal {
				t.Fatalf("balance %d, sequential %d", bal, seq)
			}
			for _, o := range ops {
				_, wasRefused := refused.Load(o.id)
				if !seen[o.id] && !wasRefused {
					t.Fatalf("%s neither committed nor refused", o.id)
				}
				if seen[o.id] && wasRefused && o.amount > 0 {
					t.Fatalf("deposit %s refused", o.id)
				}
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ExecuteNew decides a create on the empty state without loading the
// aggregate. When the aggregate existed after all (another replica created
// it, or a process restarted), the append expecting an empty subject
// conflicts and the command decides again on what the log holds; a refusal
// taken on the assumed-empty state is confirmed on the log too.
func TestExecuteNewOnAnAggregateThatExists(t *testing.T) {
	ctx := context.Background()
	log, xs := replicas(t, 2)
	fresh := eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "account", ID: "new1"}
	res, err := xs[0].ExecuteNew(ctx, fresh, "", decideOp(op{id: "open", amount: 5}))
	if err != nil {
		t.Fatal(err)
	}
	if bal, _ := balance(ctx, res.State); bal != 5 || res.State.Last != res.Sequence {
		t.Fatalf("create answered balance %d at %d, want 5 at %d", bal, res.State.Last, res.Sequence)
	}
	// The other replica assumes the aggregate is new: its first decision
	// (balance 0) is stale, the append conflicts, the second decision sees 5.
	var seen []int
	res, err = xs[1].ExecuteNew(ctx, fresh, "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		bal, err := balance(ctx, st)
		if err != nil {
			return nil, err
		}
		seen = append(seen, bal)
		return decidePure(bal, op{id: "spend", amount: -5})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 1 || seen[len(seen)-1] != 5 {
		t.Fatalf("decisions saw balances %v, want the last on 5", seen)
	}
	if bal, _ := balance(ctx, res.State); bal != 0 {
		t.Fatalf("after the spend: balance %d", bal)
	}
	// A refusal on the assumed-empty state is checked on the log: a third
	// writer's withdrawal of 0 < x <= balance is not refused as overdrawn.
	other := command.NewWriter(log, account{log: log}, command.Options{})
	if _, err := xs[0].Execute(ctx, fresh, "", decideOp(op{id: "refill", amount: 4})); err != nil {
		t.Fatal(err)
	}
	res, err = other.ExecuteNew(ctx, fresh, "", decideOp(op{id: "spend2", amount: -3}))
	if err != nil {
		t.Fatalf("a withdrawal the log's balance covers was refused on the assumed-empty state: %v", err)
	}
	if bal, _ := balance(ctx, res.State); bal != 1 {
		t.Fatalf("after spend2: balance %d, want 1", bal)
	}
}

func TestHeldAnswersWithoutIOAndOnlyWhatIsLoaded(t *testing.T) {
	ctx := context.Background()
	log := openLog(t)
	x := command.NewWriter(log, account{log: log}, command.Options{})
	if _, ok := x.Held(agg); ok {
		t.Fatal("an aggregate never loaded is held")
	}
	if x.Len() != 0 {
		t.Fatalf("Held created an entry: holds %d", x.Len())
	}
	res, err := x.Execute(ctx, agg, "", decideOp(op{id: "d", amount: 5}))
	if err != nil {
		t.Fatal(err)
	}
	// Another writer (a replica) moves the aggregate: Held does not see it
	// (no I/O), Refresh does.
	other := command.NewWriter(log, account{log: log}, command.Options{})
	if _, err := other.Execute(ctx, agg, "", decideOp(op{id: "w", amount: -2})); err != nil {
		t.Fatal(err)
	}
	st, ok := x.Held(agg)
	if bal, err := balance(ctx, st); !ok || err != nil || bal != 5 || st.Last != res.Sequence {
		t.Fatalf("held: ok %v balance %d at %d (%v), want 5 at %d", ok, bal, st.Last, err, res.Sequence)
	}
	if _, err := x.Refresh(ctx, agg); err != nil {
		t.Fatal(err)
	}
	st, ok = x.Held(agg)
	if bal, err := balance(ctx, st); !ok || err != nil || bal != 3 {
		t.Fatalf("held after refresh: ok %v balance %d (%v), want 3", ok, bal, err)
	}
}
