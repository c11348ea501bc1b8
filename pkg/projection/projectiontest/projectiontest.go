// Package projectiontest owns the contract every projection.Store must
// honour. Each implementation runs the same suite, so the in-process store of
// dev mode cannot drift from the Redis store of a deployment.
package projectiontest

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/projection"
)

// Batched returns s with Apply taking the projector's batched path: the
// batch is staged in a projection.Overlay over s, folded into one batch and
// written on condition that the checkpoint is still the one read before
// (retried on the new checkpoint when another writer moved it), as
// projector.ApplyBatch does. Running the suite on Batched(store) proves the
// batched path keeps every guarantee of the plain one.
func Batched(s projection.Store) projection.Store { return batched{s} }

type batched struct{ projection.Store }

func (b batched) Apply(ctx context.Context, in projection.Batch) (bool, error) {
	if in.Projection == "" || in.Sequence == 0 || in.Conditional {
		return b.Store.Apply(ctx, in)
	}
	for {
		base, err := b.Store.Checkpoint(ctx, in.Projection)
		if err != nil {
			return false, err
		}
		if base >= in.Sequence {
			return false, nil
		}
		ov := projection.NewOverlay(b.Store)
		if _, err := ov.Apply(ctx, in); err != nil {
			return false, err
		}
		folded := ov.Batch(in.Projection, in.Sequence)
		folded.Conditional, folded.Base = true, base
		applied, err := b.Store.Apply(ctx, folded)
		if err != nil || applied {
			return applied, err
		}
	}
}

// Run runs the contract suite. newStore must return an empty store that no
// other test touches; Run closes it when the subtest ends. Subtests run in
// parallel.
func Run(t *testing.T, newStore func(t *testing.T) projection.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s projection.Store)
	}{
		{"PutGetDelete", testPutGetDelete},
		{"ValuesAreCopied", testValuesAreCopied},
		{"EmptyValueIsPresent", testEmptyValueIsPresent},
		{"GetManyWithMissingKeys", testGetMany},
		{"CheckpointStartsAtZero", testCheckpointStartsAtZero},
		{"ApplySkipsSequenceNotAboveCheckpoint", testApplySkipsOld},
		{"EmptyBatchAdvancesCheckpoint", testEmptyBatchAdvances},
		{"ApplyRejectsInvalidBatch", testApplyRejectsInvalid},
		{"DeletesBeforePutsRemovesBeforeAdds", testBatchOrder},
		{"IndexAddMoveRemove", testIndexAddMoveRemove},
		{"RangeOrderBoundsLimitReverse", testRange},
		{"RangePagesByScore", testRangePagesByScore},
		{"RangeRejectsInvalidQuery", testRangeRejectsInvalid},
		{"CheckpointVisibleImpliesStateVisible", testAtomicity},
		{"WaitForReturnsWhenReached", testWaitForReached},
		{"WaitForWakesOnApply", testWaitForWakes},
		{"WaitForReturnsContextError", testWaitForContextError},
		{"Reset", testReset},
		{"Close", testClose},
		{"ConcurrentDistinctSequences", testConcurrentDistinctSequences},
		{"ConcurrentSameSequenceOneWins", testConcurrentSameSequence},
		{"ConditionalAppliesOnlyAtItsBase", testConditional},
		{"ConcurrentConditionalOneWinsPerBase", testConcurrentConditional},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

const proj = "test.projection"

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func apply(t *testing.T, s projection.Store, b projection.Batch) bool {
	t.Helper()
	applied, err := s.Apply(ctxFor(t), b)
	require.NoError(t, err)
	return applied
}

func puts(kv ...string) []projection.KV {
	out := make([]projection.KV, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, projection.KV{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func requireValue(t *testing.T, s projection.Store, key, want string) {
	t.Helper()
	got, err := s.Get(ctxFor(t), key)
	require.NoError(t, err, "get %q", key)
	require.Equal(t, want, string(got), "value of %q", key)
}

func requireMissing(t *testing.T, s projection.Store, key string) {
	t.Helper()
	_, err := s.Get(ctxFor(t), key)
	require.ErrorIs(t, err, projection.ErrNotFound, "get %q", key)
}

func requireCheckpoint(t *testing.T, s projection.Store, projectionName string, want uint64) {
	t.Helper()
	got, err := s.Checkpoint(ctxFor(t), projectionName)
	require.NoError(t, err)
	require.Equal(t, want, got, "checkpoint of %q", projectionName)
}

func members(es []projection.IndexEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Member
	}
	return out
}

func testPutGetDelete(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, Puts: puts("a", "1", "b", "2")}))
	requireValue(t, s, "a", "1")
	requireValue(t, s, "b", "2")

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 2, Puts: puts("a", "1b")}))
	requireValue(t, s, "a", "1b")

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 3, Deletes: []string{"a", "never-written"}}))
	requireMissing(t, s, "a")
	requireValue(t, s, "b", "2")
	requireCheckpoint(t, s, proj, 3)
}

func testValuesAreCopied(t *testing.T, s projection.Store) {
	value := []byte("original")
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, Puts: []projection.KV{{Key: "k", Value: value}}}))
	copy(value, "MUTATED!")
	got, err := s.Get(ctxFor(t), "k")
	require.NoError(t, err)
	copy(got, "MUTATED!")
	requireValue(t, s, "k", "original")
}

func testEmptyValueIsPresent(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, Puts: []projection.KV{{Key: "empty", Value: nil}}}))
	got, err := s.Get(ctxFor(t), "empty")
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Empty(t, got)

	many, err := s.GetMany(ctxFor(t), "empty", "missing")
	require.NoError(t, err)
	require.Len(t, many, 2)
	require.NotNil(t, many[0], "a present empty document must differ from a missing one")
	require.Nil(t, many[1])
}

func testGetMany(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, Puts: puts("a", "1", "c", "3")}))
	got, err := s.GetMany(ctxFor(t), "a", "b", "c", "a")
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("1"), nil, []byte("3"), []byte("1")}, got)

	got, err = s.GetMany(ctxFor(t))
	require.NoError(t, err)
	require.Empty(t, got)
}

func testCheckpointStartsAtZero(t *testing.T, s projection.Store) {
	requireCheckpoint(t, s, proj, 0)
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 7}))
	requireCheckpoint(t, s, proj, 7)
	requireCheckpoint(t, s, "other", 0)

	// Checkpoints are per projection: another may be far behind.
	require.True(t, apply(t, s, projection.Batch{Projection: "other", Sequence: 2}))
	requireCheckpoint(t, s, "other", 2)
	requireCheckpoint(t, s, proj, 7)

	// Sequences beyond 2^53 must not round (Lua and JSON numbers are doubles).
	big := uint64(1)<<60 + 1
	require.True(t, apply(t, s, projection.Batch{Projection: "big", Sequence: big - 1}))
	require.True(t, apply(t, s, projection.Batch{Projection: "big", Sequence: big}))
	require.False(t, apply(t, s, projection.Batch{Projection: "big", Sequence: big}))
	requireCheckpoint(t, s, "big", big)
}

func testApplySkipsOld(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{
		Projection: proj, Sequence: 5,
		Puts:      puts("k", "v5", "kept", "x"),
		IndexAdds: []projection.IndexEntry{{Index: "ix", Member: "m5", Score: 5}},
	}))
	for _, seq := range []uint64{5, 4, 1} {
		applied := apply(t, s, projection.Batch{
			Projection: proj, Sequence: seq,
			Deletes:      []string{"kept"},
			Puts:         puts("k", "stale", "new", "stale"),
			IndexRemoves: []projection.IndexEntry{{Index: "ix", Member: "m5"}},
			IndexAdds:    []projection.IndexEntry{{Index: "ix", Member: "stale", Score: 1}},
		})
		require.False(t, applied, "sequence %d is not above checkpoint 5", seq)
	}
	requireCheckpoint(t, s, proj, 5)
	requireValue(t, s, "k", "v5")
	requireValue(t, s, "kept", "x")
	requireMissing(t, s, "new")
	got, err := s.Range(ctxFor(t), "ix", projection.RangeQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{"m5"}, members(got))
}

func testEmptyBatchAdvances(t *testing.T, s projection.Store) {
	// Events that change nothing in a projection must still move its
	// checkpoint, or read-your-writes would wait on them forever.
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 3}))
	requireCheckpoint(t, s, proj, 3)
}

func testApplyRejectsInvalid(t *testing.T, s projection.Store) {
	valid := projection.Batch{Projection: proj, Sequence: 1, Puts: puts("k", "v")}
	cases := map[string]func(b *projection.Batch){
		"no projection":      func(b *projection.Batch) { b.Projection = "" },
		"sequence zero":      func(b *projection.Batch) { b.Sequence = 0 },
		"empty put key":      func(b *projection.Batch) { b.Puts = append(b.Puts, projection.KV{Value: []byte("x")}) },
		"empty delete key":   func(b *projection.Batch) { b.Deletes = []string{""} },
		"unnamed add index":  func(b *projection.Batch) { b.IndexAdds = []projection.IndexEntry{{Member: "m"}} },
		"unnamed remove idx": func(b *projection.Batch) { b.IndexRemoves = []projection.IndexEntry{{Member: "m"}} },
		"NaN score": func(b *projection.Batch) {
			b.IndexAdds = []projection.IndexEntry{{Index: "ix", Member: "m", Score: math.NaN()}}
		},
	}
	for name, mutate := range cases {
		b := valid
		b.Puts = append([]projection.KV(nil), valid.Puts...)
		mutate(&b)
		applied, err := s.Apply(ctxFor(t), b)
		require.ErrorIs(t, err, projection.ErrInvalid, name)
		require.False(t, applied, name)
	}
	requireMissing(t, s, "k")
	requireCheckpoint(t, s, proj, 0)

	_, err := s.Checkpoint(ctxFor(t), "")
	require.ErrorIs(t, err, projection.ErrInvalid)
}

func testBatchOrder(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{
		Projection: proj, Sequence: 1,
		Puts:      puts("k", "old"),
		IndexAdds: []projection.IndexEntry{{Index: "ix", Member: "m", Score: 1}},
	}))
	require.True(t, apply(t, s, projection.Batch{
		Projection:   proj,
		Sequence:     2,
		Deletes:      []string{"k"},
		Puts:         puts("k", "new"),
		IndexRemoves: []projection.IndexEntry{{Index: "ix", Member: "m"}},
		IndexAdds:    []projection.IndexEntry{{Index: "ix", Member: "m", Score: 2}},
	}))
	requireValue(t, s, "k", "new")
	got, err := s.Range(ctxFor(t), "ix", projection.RangeQuery{})
	require.NoError(t, err)
	require.Equal(t, []projection.IndexEntry{{Index: "ix", Member: "m", Score: 2}}, got)
}

func testIndexAddMoveRemove(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	n, err := s.Count(ctx, "ix")
	require.NoError(t, err)
	require.Zero(t, n)

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, IndexAdds: []projection.IndexEntry{
		{Index: "ix", Member: "a", Score: 1},
		{Index: "ix", Member: "b", Score: 2},
		{Index: "ix", Member: "c", Score: 3},
		{Index: "other", Member: "a", Score: 9},
	}}))
	n, err = s.Count(ctx, "ix")
	require.NoError(t, err)
	require.EqualValues(t, 3, n)

	// Adding an existing member moves it rather than duplicating it.
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 2, IndexAdds: []projection.IndexEntry{
		{Index: "ix", Member: "a", Score: 4},
	}}))
	got, err := s.Range(ctx, "ix", projection.RangeQuery{})
	require.NoError(t, err)
	require.Equal(t, []projection.IndexEntry{
		{Index: "ix", Member: "b", Score: 2},
		{Index: "ix", Member: "c", Score: 3},
		{Index: "ix", Member: "a", Score: 4},
	}, got)

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 3, IndexRemoves: []projection.IndexEntry{
		{Index: "ix", Member: "b"},
		{Index: "ix", Member: "never-added"},
		{Index: "no-such-index", Member: "x"},
	}}))
	got, err = s.Range(ctx, "ix", projection.RangeQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a"}, members(got))

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 4, IndexRemoves: []projection.IndexEntry{
		{Index: "ix", Member: "a"}, {Index: "ix", Member: "c"},
	}}))
	n, err = s.Count(ctx, "ix")
	require.NoError(t, err)
	require.Zero(t, n)
	got, err = s.Range(ctx, "ix", projection.RangeQuery{})
	require.NoError(t, err)
	require.Empty(t, got)

	n, err = s.Count(ctx, "other")
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "indexes are independent")
}

func testRange(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	entries := []projection.IndexEntry{
		{Index: "ix", Member: "neg", Score: -2.5},
		{Index: "ix", Member: "b", Score: 1},
		{Index: "ix", Member: "a", Score: 1}, // ties order by member
		{Index: "ix", Member: "c", Score: 1},
		{Index: "ix", Member: "two", Score: 2},
		{Index: "ix", Member: "big", Score: 1e300},
		{Index: "ix", Member: "inf", Score: math.Inf(1)},
		{Index: "ix", Member: "-inf", Score: math.Inf(-1)},
	}
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, IndexAdds: entries}))

	lo, hi := 1.0, 2.0
	cases := []struct {
		name string
		q    projection.RangeQuery
		want []string
	}{
		{"all ascending", projection.RangeQuery{}, []string{"-inf", "neg", "a", "b", "c", "two", "big", "inf"}},
		{"all descending", projection.RangeQuery{Reverse: true}, []string{"inf", "big", "two", "c", "b", "a", "neg", "-inf"}},
		{"inclusive bounds", projection.RangeQuery{Min: &lo, Max: &hi}, []string{"a", "b", "c", "two"}},
		{"inclusive bounds reversed", projection.RangeQuery{Min: &lo, Max: &hi, Reverse: true}, []string{"two", "c", "b", "a"}},
		{"min only", projection.RangeQuery{Min: &hi}, []string{"two", "big", "inf"}},
		{"max only", projection.RangeQuery{Max: &lo}, []string{"-inf", "neg", "a", "b", "c"}},
		{"exact score", projection.RangeQuery{Min: &lo, Max: &lo}, []string{"a", "b", "c"}},
		{"min above max", projection.RangeQuery{Min: &hi, Max: &lo}, []string{}},
		{"limit", projection.RangeQuery{Limit: 3}, []string{"-inf", "neg", "a"}},
		{"limit reversed", projection.RangeQuery{Limit: 2, Reverse: true}, []string{"inf", "big"}},
		{"offset and limit", projection.RangeQuery{Offset: 2, Limit: 2}, []string{"a", "b"}},
		{"offset without limit", projection.RangeQuery{Offset: 6}, []string{"big", "inf"}},
		{"offset past end", projection.RangeQuery{Offset: 100, Limit: 5}, []string{}},
		{"bounds offset limit reversed", projection.RangeQuery{Min: &lo, Max: &hi, Offset: 1, Limit: 2, Reverse: true}, []string{"c", "b"}},
	}
	for _, tc := range cases {
		got, err := s.Range(ctx, "ix", tc.q)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, members(got), tc.name)
	}

	got, err := s.Range(ctx, "ix", projection.RangeQuery{Min: &hi, Max: &hi})
	require.NoError(t, err)
	require.Equal(t, []projection.IndexEntry{{Index: "ix", Member: "two", Score: 2}}, got, "entries carry index and score")
	got, err = s.Range(ctx, "ix", projection.RangeQuery{Reverse: true, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, math.Inf(1), got[0].Score)

	got, err = s.Range(ctx, "missing", projection.RangeQuery{})
	require.NoError(t, err)
	require.Empty(t, got)
}

func testRangePagesByScore(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	var adds []projection.IndexEntry
	for i := 1; i <= 7; i++ {
		adds = append(adds, projection.IndexEntry{Index: "ix", Member: "m" + strconv.Itoa(i), Score: float64(i) / 10})
	}
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, IndexAdds: adds}))

	// The documented keyset pattern: continue just above the last score seen.
	var seen []string
	q := projection.RangeQuery{Limit: 3}
	for range 10 {
		page, err := s.Range(ctx, "ix", q)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		seen = append(seen, members(page)...)
		q.Min = new(math.Nextafter(page[len(page)-1].Score, math.Inf(1)))
	}
	require.Equal(t, []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}, seen)
}

func testRangeRejectsInvalid(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	nan := math.NaN()
	for name, q := range map[string]projection.RangeQuery{
		"NaN min":         {Min: &nan},
		"NaN max":         {Max: &nan},
		"negative limit":  {Limit: -1},
		"negative offset": {Offset: -1},
	} {
		_, err := s.Range(ctx, "ix", q)
		require.ErrorIs(t, err, projection.ErrInvalid, name)
	}
}

// testAtomicity proves from outside that state and checkpoint move
// together: once a reader sees checkpoint n, the state written by batch n is
// visible too. A store that set the checkpoint before the state, or in a
// separate step, fails it.
func testAtomicity(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	const batches = 200
	done := make(chan struct{})
	var readerErr error
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			seen, err := s.Checkpoint(ctx, proj)
			if err != nil {
				readerErr = err
				return
			}
			if seen == 0 {
				continue
			}
			vals, err := s.GetMany(ctx, "last", "doc/"+strconv.FormatUint(seen, 10))
			if err != nil {
				readerErr = err
				return
			}
			if vals[1] == nil {
				readerErr = fmt.Errorf("checkpoint %d visible before its document", seen)
				return
			}
			last, err := strconv.ParseUint(string(vals[0]), 10, 64)
			if err != nil || last < seen {
				readerErr = fmt.Errorf("checkpoint %d visible but state is at %q", seen, vals[0])
				return
			}
			reads.Add(1)
		}
	})
	for seq := uint64(1); seq <= batches; seq++ {
		n := strconv.FormatUint(seq, 10)
		applied, err := s.Apply(ctx, projection.Batch{
			Projection: proj, Sequence: seq,
			Puts:      puts("doc/"+n, n, "last", n),
			IndexAdds: []projection.IndexEntry{{Index: "ix", Member: n, Score: float64(seq)}},
		})
		require.NoError(t, err)
		require.True(t, applied)
	}
	close(done)
	wg.Wait()
	require.NoError(t, readerErr)
	requireCheckpoint(t, s, proj, batches)
	requireValue(t, s, "last", strconv.Itoa(batches))
	t.Logf("reader checked %d snapshots", reads.Load())
}

func testWaitForReached(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 5}))
	ctx := ctxFor(t)
	got, err := s.WaitFor(ctx, proj, 3)
	require.NoError(t, err)
	require.EqualValues(t, 5, got, "returns the checkpoint reached, not the one asked for")
	got, err = s.WaitFor(ctx, proj, 5)
	require.NoError(t, err)
	require.EqualValues(t, 5, got)
	got, err = s.WaitFor(ctx, "fresh", 0)
	require.NoError(t, err)
	require.Zero(t, got)
}

func testWaitForWakes(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	type result struct {
		seq uint64
		err error
	}
	wait := func(target uint64) <-chan result {
		ch := make(chan result, 1)
		go func() {
			seq, err := s.WaitFor(ctx, proj, target)
			ch <- result{seq, err}
		}()
		return ch
	}
	for2, for4 := wait(2), wait(4)

	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1}))
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 2}))
	r := <-for2
	require.NoError(t, r.err)
	require.EqualValues(t, 2, r.seq)
	select {
	case r := <-for4:
		t.Fatalf("waiter for 4 returned at checkpoint 2: %+v", r)
	default:
	}

	// Another projection advancing must not satisfy this one.
	require.True(t, apply(t, s, projection.Batch{Projection: "other", Sequence: 10}))
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 4}))
	r = <-for4
	require.NoError(t, r.err)
	require.EqualValues(t, 4, r.seq)
}

func testWaitForContextError(t *testing.T, s projection.Store) {
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1}))

	ctx, cancel := context.WithTimeout(ctxFor(t), 50*time.Millisecond)
	defer cancel()
	got, err := s.WaitFor(ctx, proj, 10)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.EqualValues(t, 1, got, "reports how far the projection got")

	ctx, cancel = context.WithCancel(ctxFor(t))
	cancel()
	_, err = s.WaitFor(ctx, proj, 10)
	require.ErrorIs(t, err, context.Canceled)
}

func testReset(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	require.True(t, apply(t, s, projection.Batch{
		Projection: proj, Sequence: 9,
		Puts:      puts("k", "v"),
		IndexAdds: []projection.IndexEntry{{Index: "ix", Member: "m", Score: 1}},
	}))
	require.True(t, apply(t, s, projection.Batch{Projection: "other", Sequence: 4}))

	require.NoError(t, s.Reset(ctx))
	requireCheckpoint(t, s, proj, 0)
	requireCheckpoint(t, s, "other", 0)
	requireMissing(t, s, "k")
	n, err := s.Count(ctx, "ix")
	require.NoError(t, err)
	require.Zero(t, n)

	// A rebuild replays from the start of the log.
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 1, Puts: puts("k", "rebuilt")}))
	requireValue(t, s, "k", "rebuilt")
}

func testClose(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	waiting := make(chan error, 1)
	go func() {
		_, err := s.WaitFor(ctx, proj, 1)
		waiting <- err
	}()

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.ErrorIs(t, <-waiting, projection.ErrClosed)

	_, err := s.Apply(ctx, projection.Batch{Projection: proj, Sequence: 1})
	require.ErrorIs(t, err, projection.ErrClosed)
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, projection.ErrClosed)
	_, err = s.WaitFor(ctx, proj, 1)
	require.ErrorIs(t, err, projection.ErrClosed)
}
