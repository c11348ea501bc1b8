package fairshare_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fairshare"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

func TestResolveAppliesTheDefaults(t *testing.T) {
	if c := fairshare.Resolve(0, "", 0, "s1"); c != (fairshare.Class{Priority: 3, Key: "s1", Weight: 1}) {
		t.Fatalf("defaults: %+v", c)
	}
	if c := fairshare.Resolve(1, "user-42", 2.5, "s1"); c != (fairshare.Class{Priority: 1, Key: "user-42", Weight: 2.5}) {
		t.Fatalf("given: %+v", c)
	}
	if c := fairshare.Resolve(2, "", float32(math.NaN()), "s1"); c.Weight != 1 {
		t.Fatalf("a NaN weight resolved to %v", c.Weight)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	w := func(v float32) *float32 { return &v }
	for _, tc := range []struct {
		field    string
		priority uint32
		key      string
		weight   *float32
	}{
		{"items[2].priority", 6, "", nil},
		{"items[2].fairness_key", 1, string(make([]byte, 65)), nil},
		{"items[2].fairness_weight", 1, "k", w(0)},
		{"items[2].fairness_weight", 1, "k", w(float32(math.Inf(1)))},
	} {
		err := fairshare.Validate("items[2].", tc.priority, tc.key, tc.weight)
		var fe *fault.Error
		if !fault.Is(err, fault.KindInvalid) || !errors.As(err, &fe) || len(fe.Violations) != 1 || fe.Violations[0].Field != tc.field {
			t.Fatalf("%+v: %v, want InvalidArgument on %s", tc, err, tc.field)
		}
	}
	if err := fairshare.Validate("", 5, string(make([]byte, 64)), w(0.5)); err != nil {
		t.Fatalf("valid class refused: %v", err)
	}
}

// queue applies each change to a memory store as the projector would.
type queue struct {
	t     *testing.T
	store projection.Store
	q     fairshare.Queue
	seq   uint64
}

func (q *queue) apply(f func(b *projection.Batch) error) {
	q.t.Helper()
	q.seq++
	b := projection.Batch{Projection: "test", Sequence: q.seq}
	if err := f(&b); err != nil {
		q.t.Fatal(err)
	}
	if _, err := q.store.Apply(context.Background(), b); err != nil {
		q.t.Fatal(err)
	}
}

// enqueue submits an item claimable at once: the command decides its tag,
// the fold records it.
func (q *queue) enqueue(id string, c fairshare.Class) {
	q.t.Helper()
	tag, err := q.q.Tag(context.Background(), q.store, "t", c, 1)
	if err != nil {
		q.t.Fatal(err)
	}
	q.apply(func(b *projection.Batch) error {
		return q.q.Record(context.Background(), q.store, b, "t", id, c, tag, 0, true, false)
	})
}

// next claims the first item of the most urgent priority.
func (q *queue) next() string {
	q.t.Helper()
	prios, err := q.q.Priorities(context.Background(), q.store, "t")
	if err != nil {
		q.t.Fatal(err)
	}
	for _, p := range prios {
		es, err := q.store.Range(context.Background(), q.q.Index("t", p), projection.RangeQuery{Limit: 1})
		if err != nil {
			q.t.Fatal(err)
		}
		if len(es) == 1 {
			q.apply(func(b *projection.Batch) error {
				return q.q.Dequeue(context.Background(), q.store, b, "t", es[0].Member, true, 0)
			})
			return es[0].Member
		}
	}
	return ""
}

// A key that was idle while another was served starts at the virtual
// time: it gets its turn next, and no run of turns for time it was idle.
func TestAnIdleKeyBanksNoCredit(t *testing.T) {
	q := &queue{t: t, store: projection.NewMemory(), q: fairshare.Queue{Name: "x"}}
	busy := fairshare.Class{Priority: 3, Key: "busy", Weight: 1}
	for _, id := range []string{"b01", "b02", "b03", "b04", "b05", "b06", "b07", "b08"} {
		q.enqueue(id, busy)
	}
	for range 5 {
		q.next()
	}
	late := fairshare.Class{Priority: 3, Key: "late", Weight: 1}
	q.enqueue("l1", late)
	q.enqueue("l2", late)
	q.enqueue("l3", late)
	var got []string
	for range 6 {
		got = append(got, q.next())
	}
	// Virtual time is 4 (b05's tag): b06 (5), l1 (4) ... in tag order,
	// ties by id: the late key alternates with the busy one.
	want := []string{"l1", "b06", "l2", "b07", "l3", "b08"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claimed %v, want %v", got, want)
		}
	}
	// An urgent item goes before everything of priority 3.
	q.enqueue("u1", fairshare.Class{Priority: 3, Key: "busy", Weight: 1})
	q.enqueue("u0", fairshare.Class{Priority: 1, Key: "busy", Weight: 1})
	if n := q.next(); n != "u0" {
		t.Fatalf("claimed %s, want the urgent u0", n)
	}
}

// A submit's tag is the largest virtual time and finish of the key over
// every partition's documents, and the process's Tagger never gives a
// key the same tag twice before the fold caught up.
func TestTagReadsEveryPartition(t *testing.T) {
	ctx := context.Background()
	store := projection.NewMemory()
	q := fairshare.Queue{Name: "x"}
	c := fairshare.Class{Priority: 3, Key: "k", Weight: 2}
	// Partition 1 folded a served item of tag 6 (its virtual time);
	// partition 2 recorded the key's item of tag 9 (finish 9.5).
	b := projection.Batch{Projection: "test", Sequence: 1}
	other := fairshare.Class{Priority: 3, Key: "o", Weight: 1}
	if err := q.Record(ctx, store, &b, "t", "a", other, 6, 1, true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	b = projection.Batch{Projection: "test", Sequence: 2}
	if err := q.Dequeue(ctx, store, &b, "t", "a", true, 1); err != nil {
		t.Fatal(err)
	}
	if err := q.Record(ctx, store, &b, "t", "b", c, 9, 2, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	if tag, err := q.Tag(ctx, store, "t", fairshare.Class{Priority: 3, Key: "new", Weight: 1}, 3); err != nil || tag != 6 {
		t.Fatalf("a new key's tag = %v, %v; want the virtual time 6", tag, err)
	}
	if tag, err := q.Tag(ctx, store, "t", c, 3); err != nil || tag != 9.5 {
		t.Fatalf("the key's tag = %v, %v; want its finish 9.5", tag, err)
	}
	tagger := fairshare.Tagger{Queue: q}
	for _, want := range []float64{9.5, 10, 10.5} {
		if tag, err := tagger.Tag(ctx, store, "t", c, 3); err != nil || tag != want {
			t.Fatalf("tagger gave %v, %v; want %v", tag, err, want)
		}
	}
}
