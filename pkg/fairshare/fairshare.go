// Package fairshare orders claimable work (control's turns, the tasks
// service's tasks) by priority first, then by weighted fair share across
// fairness keys, then by arrival, with indexes of the projection store, so
// that a claim reads them as it read one arrival-ordered index before.
//
// Within one (tenant, priority) it is start-time fair queuing, the
// virtual-time form of stride scheduling: each item is given a tag when it
// is submitted,
//
//	start  = max(V, finish of its key)
//	finish = start + 1/weight
//
// and claims take the lowest tag of the items claimable now (equal tags by
// item id, which is time-ordered). V, the virtual time, is the tag of the
// last item handed out. A key of weight 2 advances half as fast as a key
// of weight 1, so it gets about twice the claims while both have work
// waiting; a key that comes back after being idle starts at V, so idleness
// banks no credit; a key holding 10,000 items does not delay a key that
// arrives with one by more than one item per other key.
//
// The tag is decided by the command that submits the item (Tag, reading
// the read model as the command's other checks do) and recorded in the
// fact, so the folds that index it are functions of the log: every
// partition of the log keeps its own V and finish documents, written by
// its fold alone (the read takes the largest), and a read model rebuilt
// from the log is the same whatever order its partitions are folded in.
// An item keeps its tag while it waits (a thread's queued turn, a task
// blocked, a retry): it is claimed as soon as it is claimable and its tag
// comes up. Two submits of one key at the same moment may read the same
// finish and share a tag; that gives the key one extra turn, never a
// claim handed out twice (leases fence claims).
package fairshare

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Priorities: 1 is the most urgent, 5 the least; 0 in a request or a fact
// means DefaultPriority.
const (
	MostUrgent      = 1
	LeastUrgent     = 5
	DefaultPriority = 3
	// MaxKeyBytes bounds a fairness key.
	MaxKeyBytes = 64
)

// Class is how one item is scheduled: its priority, its fairness key and
// the key's weight.
type Class struct {
	Priority uint32  `json:"p"`
	Key      string  `json:"k"`
	Weight   float32 `json:"w"`
}

// Resolve applies the defaults to what a request or a fact carries:
// priority 0 is DefaultPriority, an empty key is fallback (the session),
// a weight that is not a positive finite number is 1.
func Resolve(priority uint32, key string, weight float32, fallback string) Class {
	if priority == 0 {
		priority = DefaultPriority
	}
	if key == "" {
		key = fallback
	}
	if !(weight > 0) || math.IsInf(float64(weight), 0) {
		weight = 1
	}
	return Class{Priority: min(priority, LeastUrgent), Key: key, Weight: weight}
}

// Validate checks a request's fields (prefix names where they are, as
// "items[2]." for a job item, "" at the top level): an error names the
// first field that is wrong. weight is nil when the request left it unset.
func Validate(prefix string, priority uint32, key string, weight *float32) error {
	switch {
	case priority > LeastUrgent:
		return fault.Invalid(prefix+"priority", "priority %d is out of range: 1 (most urgent) to 5, or 0 for the default 3", priority)
	case len(key) > MaxKeyBytes:
		return fault.Invalid(prefix+"fairness_key", "fairness_key is %d bytes, more than %d", len(key), MaxKeyBytes)
	case weight != nil && (!(*weight > 0) || math.IsInf(float64(*weight), 0)):
		return fault.Invalid(prefix+"fairness_weight", "fairness_weight %v must be a finite number above 0 (unset means 1)", *weight)
	}
	return nil
}

// Queue is one kind of work's fair queues in a projection store; Name
// prefixes its keys and indexes ("turns", "tasks").
type Queue struct{ Name string }

// Index lists a (tenant, priority)'s claimable items by tag, lowest
// (next) first.
func (q Queue) Index(tenant string, priority uint32) string {
	return "fair:" + q.Name + ":q:" + tenant + ":" + strconv.FormatUint(uint64(priority), 10)
}

// PrioritiesIndex lists the priorities a tenant ever queued work at
// (members "1".."5", scored by priority), so a claim ranges only those.
// Members are never removed: removing one when its index empties would
// race a fold of another partition adding to it.
func (q Queue) PrioritiesIndex(tenant string) string { return "fair:" + q.Name + ":p:" + tenant }

func (q Queue) itemKey(tenant, item string) string {
	return "fair:" + q.Name + ":i:" + tenant + ":" + item
}

// vKey holds a (tenant, priority)'s virtual time as partition k folds it.
func (q Queue) vKey(tenant string, priority uint32, k int) string {
	return "fair:" + q.Name + ":v:" + tenant + ":" + strconv.FormatUint(uint64(priority), 10) + ":" + strconv.Itoa(k)
}

// finishKey holds a key's last finish tag at a priority as partition k
// folds it.
func (q Queue) finishKey(tenant string, priority uint32, k int, key string) string {
	return "fair:" + q.Name + ":f:" + tenant + ":" + strconv.FormatUint(uint64(priority), 10) + ":" + strconv.Itoa(k) + ":" + key
}

// Tag is where an item of class c submitted now goes in its queue: the
// largest of every partition's virtual time and of the key's finish, in
// one read. partitions is the log's partition count.
func (q Queue) Tag(ctx context.Context, store projection.Store, tenant string, c Class, partitions int) (float64, error) {
	partitions = max(partitions, 1)
	keys := make([]string, 0, 2*partitions)
	for k := range partitions {
		keys = append(keys, q.vKey(tenant, c.Priority, k), q.finishKey(tenant, c.Priority, k, c.Key))
	}
	vals, err := store.GetMany(ctx, keys...)
	if err != nil {
		return 0, err
	}
	tag := 0.0
	for _, raw := range vals {
		if raw == nil {
			continue
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return 0, err
		}
		tag = max(tag, v)
	}
	return tag, nil
}

// Tagger decides the tags of a process's submits (Queue.Tag) and
// remembers the finish of each key it tagged: submits of one key that come
// faster than the fold of the previous ones (commands do not wait for the
// read model) still get successive tags, not the same one. What it
// remembers is forgotten wholesale past maxRemembered keys; the read
// model has caught up with them by then.
type Tagger struct {
	Queue  Queue
	mu     sync.Mutex
	finish map[string]float64
}

const maxRemembered = 1 << 16

// Tag is Queue.Tag, never below what this process gave the key before.
func (t *Tagger) Tag(ctx context.Context, store projection.Store, tenant string, c Class, partitions int) (float64, error) {
	tag, err := t.Queue.Tag(ctx, store, tenant, c, partitions)
	if err != nil {
		return 0, err
	}
	key := tenant + "\x00" + strconv.FormatUint(uint64(c.Priority), 10) + "\x00" + c.Key
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.finish == nil || len(t.finish) >= maxRemembered {
		t.finish = map[string]float64{}
	}
	tag = max(tag, t.finish[key])
	t.finish[key] = tag + 1/float64(c.Weight)
	return tag, nil
}

// Priorities lists the priorities a tenant has queued work at, most urgent
// first: the indexes a claim ranges, in order.
func (q Queue) Priorities(ctx context.Context, store projection.Store, tenant string) ([]uint32, error) {
	entries, err := store.Range(ctx, q.PrioritiesIndex(tenant), projection.RangeQuery{})
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, len(entries))
	for _, e := range entries {
		out = append(out, uint32(e.Score))
	}
	return out, nil
}

// item is what the store keeps of one item: its class, and its tag while
// it is queued.
type item struct {
	Class
	Queued bool    `json:"q,omitempty"`
	Tag    float64 `json:"t,omitempty"`
}

func (q Queue) load(ctx context.Context, store projection.Store, tenant, id string) (item, bool, error) {
	it, found, _, err := q.loadWith(ctx, store, tenant, id)
	return it, found, err
}

// loadWith loads an item and the numbers under keys in one read (a
// missing number is 0): a fold reads its store once per event.
func (q Queue) loadWith(ctx context.Context, store projection.Store, tenant, id string, keys ...string) (item, bool, []float64, error) {
	raws, err := store.GetMany(ctx, append([]string{q.itemKey(tenant, id)}, keys...)...)
	if err != nil {
		return item{}, false, nil, err
	}
	nums := make([]float64, len(keys))
	for i, raw := range raws[1:] {
		if raw == nil {
			continue
		}
		if nums[i], err = strconv.ParseFloat(string(raw), 64); err != nil {
			return item{}, false, nil, err
		}
	}
	if raws[0] == nil {
		return item{}, false, nums, nil
	}
	var it item
	if err := json.Unmarshal(raws[0], &it); err != nil {
		return item{}, false, nil, err
	}
	return it, true, nums, nil
}

func (q Queue) put(b *projection.Batch, tenant, id string, it item) {
	raw, _ := json.Marshal(it) // plain numbers and a string: cannot fail (weights are finite, Resolve)
	b.Puts = append(b.Puts, projection.KV{Key: q.itemKey(tenant, id), Value: raw})
}

func putFloat(b *projection.Batch, key string, v float64) {
	b.Puts = append(b.Puts, projection.KV{Key: key, Value: strconv.AppendFloat(nil, v, 'g', -1, 64)})
}

// Record keeps a submitted item's class and tag (Tag, as its fact
// recorded it) and moves its key's finish in partition k, the partition
// folding the fact; queued says it is claimable at once (Enqueue). An item
// already recorded keeps its first class and tag unless replace (the fold
// decided this fact's item is the one of that id).
func (q Queue) Record(ctx context.Context, store projection.Store, b *projection.Batch, tenant, id string, c Class, tag float64, k int, queued, replace bool) error {
	_, found, finish, err := q.loadWith(ctx, store, tenant, id, q.finishKey(tenant, c.Priority, k, c.Key))
	if err != nil || (found && !replace) {
		return err
	}
	if f := tag + 1/float64(c.Weight); f > finish[0] {
		putFloat(b, q.finishKey(tenant, c.Priority, k, c.Key), f)
	}
	it := item{Class: c, Tag: tag}
	if queued {
		q.index(b, tenant, id, &it)
	}
	q.put(b, tenant, id, it)
	return nil
}

// index adds a recorded item to its (tenant, priority) queue.
func (q Queue) index(b *projection.Batch, tenant, id string, it *item) {
	it.Queued = true
	b.IndexAdds = append(b.IndexAdds,
		projection.IndexEntry{Index: q.Index(tenant, it.Priority), Member: id, Score: it.Tag},
		projection.IndexEntry{Index: q.PrioritiesIndex(tenant), Member: strconv.FormatUint(uint64(it.Priority), 10), Score: float64(it.Priority)})
}

// Enqueue makes a recorded item claimable under its tag. An item of which
// nothing was recorded (submitted before tags were) is queued under
// fallback at tag 0; an item already queued keeps its place. It answers
// the item's class.
func (q Queue) Enqueue(ctx context.Context, store projection.Store, b *projection.Batch, tenant, id string, fallback Class) (Class, error) {
	it, found, err := q.load(ctx, store, tenant, id)
	if err != nil || (found && it.Queued) {
		return it.Class, err
	}
	if !found {
		it = item{Class: fallback}
	}
	q.index(b, tenant, id, &it)
	q.put(b, tenant, id, it)
	return it.Class, nil
}

// Dequeue takes an item out of its index; served says it was handed out
// (claimed), which moves partition k's virtual time up to its tag. An
// item that is not queued is left as it is.
func (q Queue) Dequeue(ctx context.Context, store projection.Store, b *projection.Batch, tenant, id string, served bool, k int) error {
	// The virtual times of every priority come with the item (its priority
	// is in it): one read.
	var vs []string
	if served {
		for p := uint32(MostUrgent); p <= LeastUrgent; p++ {
			vs = append(vs, q.vKey(tenant, p, k))
		}
	}
	it, found, v, err := q.loadWith(ctx, store, tenant, id, vs...)
	if err != nil || !found || !it.Queued {
		return err
	}
	b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: q.Index(tenant, it.Priority), Member: id})
	if served {
		if it.Tag > v[it.Priority-MostUrgent] {
			putFloat(b, q.vKey(tenant, it.Priority, k), it.Tag)
		}
	}
	it.Queued = false
	q.put(b, tenant, id, it)
	return nil
}

// Forget drops an item that will never be claimable again (it ended): out
// of its index, and its record deleted.
func (q Queue) Forget(ctx context.Context, store projection.Store, b *projection.Batch, tenant, id string) error {
	it, found, err := q.load(ctx, store, tenant, id)
	if err != nil || !found {
		return err
	}
	if it.Queued {
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: q.Index(tenant, it.Priority), Member: id})
	}
	b.Deletes = append(b.Deletes, q.itemKey(tenant, id))
	return nil
}
