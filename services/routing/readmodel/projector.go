// Package readmodel builds the routing service's read model from its own
// facts: each tenant's registry, each turn's and thread's routing and limit
// summary, task profiles resolved before a turn, and the cumulative spend
// budgets are checked against. Everything in it is a fold of routing events,
// so the control service can build the same thread summary from the log.
package readmodel

import (
	"context"
	"errors"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/routingsummary"
	"github.com/agentruntime/agentruntime/services/routing/domain"
)

// Name of the projection (its checkpoint key).
const Name = "routing.state"

// FoldVersion is the routing projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md).
const FoldVersion = 1

// Aggregate kinds of the routing service's subjects.
const (
	KindTurn     = "routing"
	KindTask     = "routing_task"
	KindRegistry = "routing_registry"
	RegistryID   = "registry"
)

// Keys of the read model's documents and indexes.
func RegistryKey(tenant string) string { return "reg/" + tenant }
func TurnKey(tenant, session, turn string) string {
	return "turn/" + tenant + "/" + session + "/" + turn
}
func ThreadKey(tenant, session, thread string) string {
	return "thread/" + tenant + "/" + session + "/" + thread
}
func ThreadIndex(tenant, session string) string { return "threads/" + tenant + "/" + session }

// TaskProfileKey is a task's profile resolved before any turn, per
// session (NoSession: none): one task profiled with and without a session
// is two aggregates, in two partitions, folded concurrently.
func TaskProfileKey(tenant, session, task string) string {
	if session == "" {
		session = eventlog.NoSession
	}
	return "taskprof/" + tenant + "/" + session + "/" + task
}

// Spend adds up every cost.recorded of its scope. A session's is folded
// by its partition alone; a tenant's and a task's add up facts of many
// sessions, so of many partitions, whose folds run concurrently: each
// partition k keeps its own sub-total, written by its fold only, and a
// read sums them (LoadSpent). Partition 0's sub-total is the key of a log
// of one partition.
func SpentTenantKey(tenant string, k int) string { return "spent/" + tenant + partitionSuffix(k) }
func SpentSessionKey(tenant, session string) string {
	return "spent/" + tenant + "/s/" + session
}
func SpentTaskKey(tenant, task string, k int) string {
	return "spent/" + tenant + partitionSuffix(k) + "/k/" + task
}

func partitionSuffix(k int) string {
	if k == 0 {
		return ""
	}
	return "/p" + strconv.Itoa(k)
}

// Projection is the routing read model.
type Projection struct {
	Subjects eventlog.Subjects
}

// Name implements projector.Projection.
func (Projection) Name() string { return Name }

// FoldVersion is the projection's fold version (projection.Fold).
func (Projection) FoldVersion() int { return FoldVersion }

// Filters implements projector.Projection: the routing aggregates of every
// tenant (a "*" tenant token in the kind filter).
func (p Projection) Filters() []string {
	return []string{p.Subjects.Kind("*", KindTurn), p.Subjects.Kind("*", KindTask), p.Subjects.Kind("*", KindRegistry)}
}

// partition is the partition of the log a position is of: the one whose
// fold applies the event.
func (p Projection) partition(pos uint64) int {
	if n := uint64(p.Subjects.Partitions); n > 1 {
		return int(pos % n)
	}
	return 0
}

// Project implements projector.Projection.
func (p Projection) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	e := rec.Event
	tenant := e.GetTenantId()
	var b projection.Batch
	if lc := e.GetLimitChanged(); lc != nil {
		reg, err := LoadRegistry(ctx, store, tenant)
		if err != nil {
			return b, err
		}
		next, err := domain.Apply(reg, lc)
		if err != nil {
			// Changes are validated before they are appended; one that no
			// longer applies is a bug to fix, not a fact to skip.
			return b, err
		}
		return b, put(&b, RegistryKey(tenant), next)
	}
	if tp := e.GetTaskProfileResolved(); tp != nil && e.GetTurnId() == "" {
		return b, put(&b, TaskProfileKey(tenant, e.GetSessionId(), e.GetTaskId()), tp.GetProfile())
	}
	if e.GetSessionId() == "" || e.GetThreadId() == "" || e.GetTurnId() == "" {
		return b, nil
	}
	tk := TurnKey(tenant, e.GetSessionId(), e.GetTurnId())
	hk := ThreadKey(tenant, e.GetSessionId(), e.GetThreadId())
	docs, err := store.GetMany(ctx, tk, hk)
	if err != nil {
		return b, err
	}
	turn, thread := &routingv1.RoutingLimitSummary{}, &routingv1.RoutingLimitSummary{}
	for i, m := range []proto.Message{turn, thread} {
		if docs[i] != nil {
			if err := proto.Unmarshal(docs[i], m); err != nil {
				return b, err
			}
		}
	}
	if docs[1] == nil {
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: ThreadIndex(tenant, e.GetSessionId()), Member: e.GetThreadId(), Score: float64(e.GetSequence())})
	}
	routingsummary.Fold(turn, e)
	routingsummary.FoldThread(thread, e)
	if err := put(&b, tk, turn); err != nil {
		return b, err
	}
	if err := put(&b, hk, thread); err != nil {
		return b, err
	}
	if cr := e.GetCostRecorded(); cr != nil {
		total := cr.GetCost().GetTotalNanos()
		k := p.partition(e.GetSequence())
		keys := []string{SpentTenantKey(tenant, k), SpentSessionKey(tenant, e.GetSessionId())}
		if e.GetTaskId() != "" {
			keys = append(keys, SpentTaskKey(tenant, e.GetTaskId(), k))
		}
		vals, err := store.GetMany(ctx, keys...)
		if err != nil {
			return b, err
		}
		for i, k := range keys {
			cur, _ := strconv.ParseInt(string(vals[i]), 10, 64)
			b.Puts = append(b.Puts, projection.KV{Key: k, Value: []byte(strconv.FormatInt(cur+total, 10))})
		}
	}
	return b, nil
}

func put(b *projection.Batch, key string, m proto.Message) error {
	data, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	b.Puts = append(b.Puts, projection.KV{Key: key, Value: data})
	return nil
}

// LoadRegistry reads a tenant's registry; empty when it has none.
func LoadRegistry(ctx context.Context, store projection.Store, tenant string) (*eventsv1.Registry, error) {
	reg := &eventsv1.Registry{}
	return reg, load(ctx, store, RegistryKey(tenant), reg)
}

// Load reads a document into m; a missing one leaves m as it is and
// reports found=false.
func Load(ctx context.Context, store projection.Store, key string, m proto.Message) (bool, error) {
	data, err := store.Get(ctx, key)
	if errors.Is(err, projection.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, proto.Unmarshal(data, m)
}

func load(ctx context.Context, store projection.Store, key string, m proto.Message) error {
	_, err := Load(ctx, store, key, m)
	return err
}

// LoadSpent reads what the tenant, a session and a task (either may be
// "") have spent, on a log of partitions partitions: the tenant's and the
// task's sub-totals of every partition, summed, in one round trip.
func LoadSpent(ctx context.Context, store projection.Store, partitions int, tenant, session, task string) (domain.Spent, error) {
	partitions = max(partitions, 1)
	keys := make([]string, 0, 2*partitions+1)
	keys = append(keys, SpentSessionKey(tenant, session))
	for k := range partitions {
		keys = append(keys, SpentTenantKey(tenant, k), SpentTaskKey(tenant, task, k))
	}
	vals, err := store.GetMany(ctx, keys...)
	if err != nil {
		return domain.Spent{}, err
	}
	out := domain.Spent{SessionID: session, TaskID: task}
	out.Session, _ = strconv.ParseInt(string(vals[0]), 10, 64)
	for i := 1; i < len(vals); i += 2 {
		t, _ := strconv.ParseInt(string(vals[i]), 10, 64)
		k, _ := strconv.ParseInt(string(vals[i+1]), 10, 64)
		out.Tenant += t
		out.Task += k
	}
	return out, nil
}
