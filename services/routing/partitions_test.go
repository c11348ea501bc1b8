package routing_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// spendYAML prices one model at a dollar per million tokens (1,000 nanos
// a token) and budgets the tenant and every task.
const spendYAML = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
models:
  - id: m
    provider: openai
    capabilities: [tools]
    prices_usd_per_million: {input: 1, output: 1}
budgets:
  - {id: tenant, scope: tenant, limit_usd: 1000}
  - {id: every-task, scope: task, limit_usd: 1000}
`

// heldSpend is a read model that holds the first writes of a task's spend
// (and the tenant's with it) until a fold of another partition writes
// them too: the folds held and that one all read the totals before any of
// them wrote. Concurrent folds of partitions make that interleaving
// likely; this makes it certain.
type heldSpend struct {
	projection.Store
	mu      sync.Mutex
	first   string // checkpoint name (partition) of the folds held
	once    sync.Once
	release chan struct{}
}

func (s *heldSpend) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	if slices.ContainsFunc(b.Puts, func(kv projection.KV) bool {
		return strings.HasPrefix(kv.Key, "spent/") && strings.Contains(kv.Key, "/k/")
	}) {
		s.mu.Lock()
		if s.first == "" {
			s.first = b.Projection
		}
		hold := s.first == b.Projection
		s.mu.Unlock()
		if !hold {
			s.once.Do(func() { close(s.release) })
		} else {
			select {
			case <-s.release:
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
	}
	return s.Store.Apply(ctx, b)
}

// Spend of a tenant and of a task adds up cost facts of sessions in every
// partition, which the partitions' folds apply concurrently (a process
// runs one fold per partition). Two replicas share one read model, as pods
// share Redis; the first folds it (with one fold per partition, heldSpend
// makes the lost update certain without per-partition totals; a second
// folding replica could land a fresh fold first). Costs are recorded from
// sessions spread over the three partitions at once on both replicas,
// half of them for one task; once each partition's read model has its
// last cost, both replicas' budgets add up every cost recorded: none is
// lost to another partition's fold writing the same total.
func TestSpendAddsUpEveryPartition(t *testing.T) {
	const partitions, perSession = 3, 8
	ns := natstest.Server(t)
	store := &heldSpend{Store: projection.NewMemory(), release: make(chan struct{})}
	cs := []rv1.RoutingServiceClient{
		startPartitioned(t, ns, partitions, spendYAML, true, store),
		startPartitioned(t, ns, partitions, spendYAML, false, store),
	}
	subjects := eventlog.Subjects{Partitions: partitions}
	var sessions []string
	inPartition := make([]int, partitions)
	for i := range 9 {
		s := fmt.Sprintf("s%d", i)
		sessions = append(sessions, s)
		inPartition[subjects.PartitionOf("t1", s)]++
	}
	for k, n := range inPartition {
		if n < 2 {
			t.Fatalf("partition %d has %d of the sessions, want 2 or more: %v", k, n, inPartition)
		}
	}

	ctx := context.Background()
	var (
		mu                   sync.Mutex
		tenantTotal, taskTot int64
		last                 = make([]uint64, partitions)
		wg                   sync.WaitGroup
	)
	gate := make(chan struct{})
	for si, s := range sessions {
		for i := range perSession {
			wg.Go(func() {
				<-gate
				sc := &rv1.TurnScope{SessionId: s, ThreadId: "th", TurnId: fmt.Sprintf("turn%d", i)}
				if i%2 == 0 {
					sc.TaskId = "k"
				}
				res, err := cs[(si+i)%len(cs)].RecordCost(ctx, &rv1.RecordCostRequest{Scope: sc, ModelId: "m", UsageId: "u",
					Usage: &rv1.Usage{InputTokens: int64(100*si + i + 1)}})
				if err != nil {
					t.Errorf("%s turn%d: %v", s, i, err)
					return
				}
				cost, seq := res.GetRecorded().GetCost().GetTotalNanos(), res.GetWrite().GetSequence()
				mu.Lock()
				defer mu.Unlock()
				tenantTotal += cost
				if sc.TaskId != "" {
					taskTot += cost
				}
				k := int(seq % partitions)
				last[k] = max(last[k], seq)
			})
		}
	}
	close(gate)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if tenantTotal == 0 || taskTot == 0 || taskTot == tenantTotal {
		t.Fatalf("charged %d, %d for the task", tenantTotal, taskTot)
	}
	for i, c := range cs {
		var states []*eventsv1.BudgetState
		for k, seq := range last {
			if seq == 0 {
				t.Fatalf("no cost recorded in partition %d", k)
			}
			res, err := c.GetBudgets(ctx, &rv1.GetBudgetsRequest{TaskId: "k", MinSequence: seq})
			if err != nil {
				t.Fatalf("replica %d, partition %d: %v", i, k, err)
			}
			states = res.GetBudgets()
		}
		got := map[string]int64{}
		for _, b := range states {
			got[b.GetBudgetId()] = b.GetSpentNanos()
		}
		if got["tenant"] != tenantTotal || got["every-task"] != taskTot {
			t.Fatalf("replica %d: spent %v; want tenant %d, task k %d", i, got, tenantTotal, taskTot)
		}
	}
}

// A task profiled before any turn, without a session and in a session of
// another partition, is two aggregates folded by two partitions
// concurrently: the read model keeps each session's profile (one key for
// both would keep whichever partition wrote last, per replica).
func TestTaskProfilesOfTwoPartitionsKeepTheirOwn(t *testing.T) {
	const partitions = 3
	subjects := eventlog.Subjects{Partitions: partitions}
	session := ""
	for i := range 100 {
		if s := fmt.Sprintf("s%d", i); subjects.PartitionOf("t1", s) != subjects.PartitionOf("t1", eventlog.NoSession) {
			session = s
			break
		}
	}
	store := projection.NewMemory()
	c := startPartitioned(t, natstest.Server(t), partitions, registryYAML, true, store)
	ctx := context.Background()
	kinds := map[string]string{"": "coding", session: "chat"}
	for s, kind := range kinds {
		res, err := c.ResolveTaskProfile(ctx, &rv1.ResolveTaskProfileRequest{Scope: &rv1.ProfileScope{SessionId: s, TaskId: "k"}, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetBudgets(ctx, &rv1.GetBudgetsRequest{MinSequence: res.GetWrite().GetSequence()}); err != nil {
			t.Fatal(err)
		}
	}
	for s, kind := range kinds {
		tp := &eventsv1.TaskProfile{}
		if found, err := readmodel.Load(ctx, store, readmodel.TaskProfileKey("t1", s, "k"), tp); err != nil || !found || tp.GetKind() != kind {
			t.Fatalf("session %q: task k's profile %v (found %v, %v), want %s", s, tp, found, err, kind)
		}
	}
}

// lagging is a read model whose fold of one partition (its checkpoint
// name) applies nothing until a read waits for that partition: until then
// the partition is behind, and a read that does not wait for it reads it
// as it was.
type lagging struct {
	projection.Store
	name   string
	once   sync.Once
	waited chan struct{}
}

func (s *lagging) Apply(ctx context.Context, b projection.Batch) (bool, error) {
	if b.Projection == s.name {
		select {
		case <-s.waited:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return s.Store.Apply(ctx, b)
}

func (s *lagging) WaitFor(ctx context.Context, name string, seq uint64) (uint64, error) {
	if name == s.name {
		s.once.Do(func() { close(s.waited) })
	}
	return s.Store.WaitFor(ctx, name, seq)
}

// GetModelRegistry waits for this process's import of the config file, in
// the registry's partition, and for the caller's min_sequence, a token of
// a session in another partition that is past the import's position: the
// larger of the two is not "both" (the registry's partition is behind
// here until a read waits for it).
func TestModelRegistryWaitsForTheImportAndTheTokenInTheirPartitions(t *testing.T) {
	const partitions = 3
	ns := natstest.Server(t)
	ctx := context.Background()
	log, err := eventlog.Open(ctx, natstest.Connect(t, ns), eventlog.Config{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	session := ""
	for i := range 100 {
		if s := fmt.Sprintf("s%d", i); log.Subjects.PartitionOf("t1", s) != log.Subjects.PartitionOf("t1", eventlog.NoSession) {
			session = s
			break
		}
	}
	store := &lagging{Store: projection.NewMemory(), waited: make(chan struct{}),
		name: projector.CheckpointName(readmodel.Name, partitions, log.Subjects.PartitionOf("t1", eventlog.NoSession))}
	c := startPartitioned(t, ns, partitions, registryYAML, true, store)

	// The first call imports the config (the registry's partition); the
	// session's decisions move its partition past the import's position.
	var token, imported uint64
	for i := 0; token <= imported; i++ {
		if i == 100 {
			t.Fatalf("the session's partition never passed the import's position %d (at %d)", imported, token)
		}
		res, err := c.DecideRoute(ctx, &rv1.DecideRouteRequest{Scope: &rv1.TurnScope{SessionId: session, ThreadId: "th", TurnId: fmt.Sprintf("turn%d", i)},
			Route: &rv1.RouteRequest{Profile: coding}})
		if err != nil {
			t.Fatal(err)
		}
		token = res.GetWrite().GetSequence()
		if _, imported, err = log.Of("t1", "").Bounds(ctx); err != nil || imported == 0 {
			t.Fatalf("the config's import: at %d, %v", imported, err)
		}
	}
	reg, err := c.GetModelRegistry(ctx, &rv1.GetModelRegistryRequest{MinSequence: token})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(reg.GetRegistry().GetModels()); n != 4 || reg.GetSequence() == 0 || log.PartitionOfPosition(reg.GetSequence()) != log.Subjects.PartitionOf("t1", eventlog.NoSession) {
		t.Fatalf("registry of %d models at %d, want the config's 4 at a position of the registry's partition", n, reg.GetSequence())
	}
}
