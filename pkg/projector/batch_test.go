package projector_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

// ledger reads and writes the way real projections do: a counter per
// aggregate (Get), a log of every event (Get), a sliding index (adds and
// removes), a snapshot of the index (Range) and deletes. Folding an event
// twice, or on stale state, shows in its documents.
type ledger struct{ filter string }

func (ledger) Name() string        { return "test.ledger" }
func (l ledger) Filters() []string { return []string{l.filter} }

func (ledger) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	code := rec.Event.GetRuntimeWarning().GetCode() // "<aggregate>-<n>"
	aggID, nText, _ := strings.Cut(code, "-")
	n, _ := strconv.Atoi(nText)
	docs, err := store.GetMany(ctx, "count/"+aggID, "seen")
	if err != nil {
		return projection.Batch{}, err
	}
	count, _ := strconv.Atoi(string(docs[0]))
	var b projection.Batch
	if n%7 == 6 {
		b.Deletes = append(b.Deletes, "count/"+aggID)
	} else {
		b.Puts = append(b.Puts, projection.KV{Key: "count/" + aggID, Value: []byte(strconv.Itoa(count + 1))})
	}
	b.Puts = append(b.Puts, projection.KV{Key: "seen", Value: append(docs[1], code+","...)})
	b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: "recent", Member: code, Score: float64(rec.Event.GetSequence())})
	if n >= 3 {
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: "recent", Member: aggID + "-" + strconv.Itoa(n-3)})
	}
	if n%5 == 4 {
		recent, err := store.Range(ctx, "recent", projection.RangeQuery{})
		if err != nil {
			return projection.Batch{}, err
		}
		names := make([]string, len(recent))
		for i, e := range recent {
			names[i] = e.Member
		}
		b.Puts = append(b.Puts, projection.KV{Key: "snapshot", Value: []byte(strings.Join(names, " "))})
	}
	return b, nil
}

var ledgerAggs = []string{"a", "b", "c"}

func appendLedger(t testing.TB, ctx context.Context, log *eventlog.Log, perAgg int) {
	t.Helper()
	var entries []eventlog.Entry
	for i := 0; i < perAgg; i++ {
		for _, id := range ledgerAggs {
			entries = append(entries, eventlog.Entry{
				Aggregate: eventlog.Aggregate{Tenant: "acme", Session: "sess_1", Kind: "session", ID: "sess_" + id},
				Event: &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{
					RuntimeWarning: &eventsv1.RuntimeWarning{Code: id + "-" + strconv.Itoa(i)}}},
			})
		}
	}
	res, err := log.AppendBatch(ctx, entries)
	require.NoError(t, err)
	for _, r := range res {
		require.NoError(t, r.Err)
	}
}

// dump is everything the ledger wrote, and its checkpoint.
func dump(t testing.TB, ctx context.Context, s projection.Store) string {
	t.Helper()
	keys := []string{"seen", "snapshot"}
	for _, id := range ledgerAggs {
		keys = append(keys, "count/"+id)
	}
	docs, err := s.GetMany(ctx, keys...)
	require.NoError(t, err)
	recent, err := s.Range(ctx, "recent", projection.RangeQuery{})
	require.NoError(t, err)
	ckpt, err := s.Checkpoint(ctx, ledger{}.Name())
	require.NoError(t, err)
	var b strings.Builder
	for i, k := range keys {
		fmt.Fprintf(&b, "%s=%q present=%v\n", k, docs[i], docs[i] != nil)
	}
	fmt.Fprintf(&b, "recent=%v\ncheckpoint=%d\n", recent, ckpt)
	return b.String()
}

func readAll(t testing.TB, ctx context.Context, log *eventlog.Log, filter string) []*eventlog.Record {
	t.Helper()
	var recs []*eventlog.Record
	_, err := log.Read(ctx, []string{filter}, eventlog.FromStart, func(r *eventlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	require.NoError(t, err)
	return recs
}

// oneByOne is the reference: every event applied on its own.
func oneByOne(t testing.TB, ctx context.Context, recs []*eventlog.Record) *projection.Memory {
	t.Helper()
	ref := projection.NewMemory()
	for _, r := range recs {
		require.NoError(t, projector.ApplyOne(ctx, ref, ledger{}, r))
	}
	return ref
}

func newRedisStore(t testing.TB) projection.Store {
	c := redistest.Client(t)
	ns := "test-" + rand.Text()
	s := projection.NewRedis(c, ns)
	t.Cleanup(func() {
		_ = s.Reset(context.Background())
		_ = s.Close()
	})
	return s
}

// Folding in batches of any size gives exactly what applying event by event
// gives, on both stores.
func TestApplyBatchEqualsOneByOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendLedger(t, ctx, log, 40)
	recs := readAll(t, ctx, log, filter)
	want := dump(t, ctx, oneByOne(t, ctx, recs))

	stores := map[string]func(testing.TB) projection.Store{
		"memory": func(testing.TB) projection.Store { return projection.NewMemory() },
		"redis":  newRedisStore,
	}
	for name, newStore := range stores {
		for _, size := range []int{1, 2, 7, 50, len(recs)} {
			t.Run(fmt.Sprintf("%s/batch%d", name, size), func(t *testing.T) {
				s := newStore(t)
				var base uint64
				for i := 0; i < len(recs); i += size {
					base, err = projector.ApplyBatch(ctx, s, ledger{filter}, recs[i:min(i+size, len(recs))], base)
					require.NoError(t, err)
				}
				require.Equal(t, want, dump(t, ctx, s))
			})
		}
	}
}

// Two replicas folding overlapping ranges of the same log into one store:
// whoever writes first, nothing is folded twice.
func TestApplyBatchReplicasOverlap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendLedger(t, ctx, log, 20)
	recs := readAll(t, ctx, log, filter)
	want := dump(t, ctx, oneByOne(t, ctx, recs))

	s := newRedisStore(t)
	p := ledger{filter}
	// Replica A applies [0,25); replica B, also at base 0, then folds
	// [0,40): refused at base 0, it refolds only what follows A's write.
	baseA, err := projector.ApplyBatch(ctx, s, p, recs[:25], 0)
	require.NoError(t, err)
	baseB, err := projector.ApplyBatch(ctx, s, p, recs[:40], 0)
	require.NoError(t, err)
	require.Equal(t, recs[39].Event.GetSequence(), baseB)
	// A, behind now, skips what B wrote and carries on.
	baseA, err = projector.ApplyBatch(ctx, s, p, recs[25:45], baseA)
	require.NoError(t, err)
	require.Equal(t, recs[44].Event.GetSequence(), baseA)
	_, err = projector.ApplyBatch(ctx, s, p, recs[40:], baseB)
	require.NoError(t, err)
	require.Equal(t, want, dump(t, ctx, s))
}

// Run and React keep up with a log written while they run, in batches,
// and report their progress.
func TestRunReportsProgressUntilCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendLedger(t, ctx, log, 100)
	s := projection.NewMemory()
	progress := make(chan projector.Progress, 1024)
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = projector.Run(rctx, log, s, ledger{filter}, nil, projector.WithMaxBatch(64), projector.WithProgress(func(p projector.Progress) {
			select {
			case progress <- p:
			default:
			}
		}))
	}()
	defer func() { rcancel(); <-done }()
	var last projector.Progress
	for !last.CaughtUp() || last.Checkpoint < 300 {
		select {
		case last = <-progress:
		case <-ctx.Done():
			t.Fatalf("never caught up; last progress %+v", last)
		}
	}
	require.Equal(t, uint64(300), last.Events)
	appendLedger(t, ctx, log, 1)
	_, err = s.WaitFor(ctx, ledger{}.Name(), 303)
	require.NoError(t, err)
	want := dump(t, ctx, oneByOne(t, ctx, readAll(t, ctx, log, filter)))
	require.Equal(t, want, dump(t, ctx, s))
}

const (
	envKillNATS  = "PROJECTOR_KILL_NATS"
	envKillRedis = "PROJECTOR_KILL_REDIS"
	envKillNS    = "PROJECTOR_KILL_NAMESPACE"
)

// TestKilledBetweenWriteAndAckReappliesNothing kills a projector process
// right after a batch's store write, before it takes anything further
// from the log (where a durable consumer would ack). The batch that
// landed is read again and re-applied from its old base: the store skips
// it; the projector restarted on the store finishes with every event
// folded exactly once.
func TestKilledBetweenWriteAndAckReappliesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv := natstest.Server(t)
	log, err := eventlog.Open(ctx, natstest.Connect(t, srv), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendLedger(t, ctx, log, 100)
	recs := readAll(t, ctx, log, filter)

	redisURL := redistest.URL(t)
	opt, err := redis.ParseURL(redisURL)
	require.NoError(t, err)
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	ns := "test-" + rand.Text()
	store := projection.NewRedis(client, ns)
	t.Cleanup(func() { _ = store.Reset(context.Background()); _ = store.Close() })

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillHelperProcess$", "-test.v")
	cmd.Env = append(os.Environ(), envKillNATS+"="+srv.ClientURL(), envKillRedis+"="+redisURL, envKillNS+"="+ns)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the helper must die by its kill, output:\n%s", out)
	require.False(t, exit.Exited(), "the helper exited instead of being killed:\n%s", out)

	killedAt, err := store.Checkpoint(ctx, ledger{}.Name())
	require.NoError(t, err)
	require.Greater(t, killedAt, recs[0].Event.GetSequence(), "killed before its first write landed")
	require.Less(t, killedAt, recs[len(recs)-1].Event.GetSequence(), "killed after the last write")
	landed := 0
	for landed < len(recs) && recs[landed].Event.GetSequence() <= killedAt {
		landed++
	}
	require.Equal(t, dump(t, ctx, oneByOne(t, ctx, recs[:landed])), dump(t, ctx, store), "the store holds exactly the batches written")

	// The written batch again, from the base it was folded on: skipped.
	before := dump(t, ctx, store)
	from := max(0, landed-killBatch)
	var base uint64
	if from > 0 {
		base = recs[from-1].Event.GetSequence()
	}
	got, err := projector.ApplyBatch(ctx, store, ledger{filter}, recs[from:landed], base)
	require.NoError(t, err)
	require.Equal(t, killedAt, got)
	require.Equal(t, before, dump(t, ctx, store), "re-applying the written batch changed the store")

	// A new process resumes from the store and finishes: nothing doubled.
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = projector.Run(rctx, log, store, ledger{filter}, nil) }()
	defer func() { rcancel(); <-done }()
	_, err = store.WaitFor(ctx, ledger{}.Name(), recs[len(recs)-1].Event.GetSequence())
	require.NoError(t, err)
	require.Equal(t, dump(t, ctx, oneByOne(t, ctx, recs)), dump(t, ctx, store))
}

const killBatch = 40

// TestKillHelperProcess is the projector process the test above kills; it
// does nothing unless started by it.
func TestKillHelperProcess(t *testing.T) {
	natsURL := os.Getenv(envKillNATS)
	if natsURL == "" {
		return
	}
	ctx := context.Background()
	nc, err := natsConnect(natsURL)
	require.NoError(t, err)
	log, err := eventlog.Open(ctx, nc, eventlog.Config{})
	require.NoError(t, err)
	opt, err := redis.ParseURL(os.Getenv(envKillRedis))
	require.NoError(t, err)
	store := projection.NewRedis(redis.NewClient(opt), os.Getenv(envKillNS))
	writes := 0
	err = projector.Run(ctx, log, store, ledger{log.Subjects.Session("acme", "sess_1")}, nil,
		projector.WithMaxBatch(killBatch),
		projector.WithAfterBatch(func([]*eventlog.Record, uint64) {
			if writes++; writes == 3 {
				p, _ := os.FindProcess(os.Getpid())
				_ = p.Kill()
				select {} // the kill lands before anything else runs
			}
		}))
	t.Fatalf("projector returned: %v", err)
}

func natsConnect(url string) (*nats.Conn, error) { return nats.Connect(url) }

// tally counts every event of the whole log.
type tally struct{}

func (tally) Name() string      { return "test.tally" }
func (tally) Filters() []string { return nil }
func (tally) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	return increment(ctx, store, "tally")
}

// increment is the fold of a counter kept under key.
func increment(ctx context.Context, store projection.Store, key string) (projection.Batch, error) {
	cur, err := store.Get(ctx, key)
	if err != nil && err != projection.ErrNotFound {
		return projection.Batch{}, err
	}
	n, _ := strconv.Atoi(string(cur))
	return projection.Batch{Puts: []projection.KV{{Key: key, Value: []byte(strconv.Itoa(n + 1))}}}, nil
}

// appendOtherSession appends n warnings to another session (sess_2) than
// the ledger's.
func appendOtherSession(t *testing.T, ctx context.Context, log *eventlog.Log, n int) {
	t.Helper()
	other := eventlog.Aggregate{Tenant: "acme", Session: "sess_2", Kind: "session", ID: "sess_2"}
	for i := 0; i < n; i++ {
		_, err := log.Append(ctx, other, eventlog.Any, &eventsv1.RuntimeEvent{Type: "runtime.warning", Payload: &eventsv1.RuntimeEvent_RuntimeWarning{
			RuntimeWarning: &eventsv1.RuntimeWarning{Code: "x-" + strconv.Itoa(i)}}})
		require.NoError(t, err)
	}
}

// One consumer feeds several projections, each from its own checkpoint
// and through its own filter.
func TestRunAllFeedsEachProjectionFromItsCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log, err := eventlog.Open(ctx, natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	require.NoError(t, err)
	filter := log.Subjects.Session("acme", "sess_1")
	appendLedger(t, ctx, log, 30)
	appendOtherSession(t, ctx, log, 10)
	appendLedger(t, ctx, log, 5)
	recs := readAll(t, ctx, log, filter)
	head, err := log.Head(ctx)
	require.NoError(t, err)

	s := newRedisStore(t)
	// The ledger is half applied already; the tally starts from nothing.
	_, err = projector.ApplyBatch(ctx, s, ledger{filter}, recs[:40], 0)
	require.NoError(t, err)
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = projector.RunAll(rctx, log, s, nil, []projector.Projection{ledger{filter}, tally{}}, projector.WithMaxBatch(16))
	}()
	defer func() { rcancel(); <-done }()
	_, err = s.WaitFor(ctx, tally{}.Name(), head)
	require.NoError(t, err)
	_, err = s.WaitFor(ctx, ledger{}.Name(), recs[len(recs)-1].Event.GetSequence())
	require.NoError(t, err)
	require.Equal(t, dump(t, ctx, oneByOne(t, ctx, recs)), dump(t, ctx, s))
	got, err := s.Get(ctx, "tally")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(len(readAll(t, ctx, log, log.Subjects.All()))), string(got), "every event of the log counted once")
}
