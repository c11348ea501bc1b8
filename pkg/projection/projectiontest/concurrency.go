// The contract's conditional and concurrent cases, and the Apply benchmark.

package projectiontest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/projection"
)

// testConcurrentDistinctSequences races many appliers of distinct sequences
// on one projection. What is provable without timing: the batch with the
// highest sequence always applies (nothing can move the checkpoint past it
// first); a batch's documents exist exactly when it reported applied=true;
// and after any Apply returns, the checkpoint is at least its sequence,
// whether it applied or was skipped as stale.
func testConditional(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	_, err := s.Apply(ctx, projection.Batch{Projection: proj, Sequence: 3, Conditional: true, Base: 3})
	require.ErrorIs(t, err, projection.ErrInvalid, "a conditional batch must move forward")

	// From an empty store the base is 0.
	require.False(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 5, Conditional: true, Base: 2, Puts: puts("k", "wrong base")}))
	requireMissing(t, s, "k")
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 5, Conditional: true, Base: 0, Puts: puts("k", "v5")}))
	requireCheckpoint(t, s, proj, 5)

	// A fold started at 3 would count events 4 and 5 twice: refused.
	require.False(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 9, Conditional: true, Base: 3, Puts: puts("k", "v9 from 3")}))
	requireValue(t, s, "k", "v5")
	requireCheckpoint(t, s, proj, 5)
	// Not above the checkpoint: skipped whatever the base.
	require.False(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 5, Conditional: true, Base: 4, Puts: puts("k", "old")}))
	require.True(t, apply(t, s, projection.Batch{Projection: proj, Sequence: 9, Conditional: true, Base: 5, Puts: puts("k", "v9")}))
	requireValue(t, s, "k", "v9")
	requireCheckpoint(t, s, proj, 9)
	// Other projections' checkpoints are their own.
	require.True(t, apply(t, s, projection.Batch{Projection: proj + ".other", Sequence: 2, Conditional: true, Base: 0}))
}

// testConcurrentConditional: replicas folding different ranges from the
// same base: exactly one write lands, so no range is folded twice.
func testConcurrentConditional(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	const n = 16
	var wins atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := uint64(1); i <= n; i++ {
		wg.Go(func() {
			<-start
			ok, err := s.Apply(ctx, projection.Batch{Projection: proj, Sequence: 10 * i, Conditional: true, Base: 0,
				Puts: puts("winner", strconv.FormatUint(i, 10))})
			if assert.NoError(t, err) && ok {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, int64(1), wins.Load(), "writes from one base that landed")
	got, err := s.Get(ctx, "winner")
	require.NoError(t, err)
	requireCheckpoint(t, s, proj, 10*mustUint(t, string(got)))
}

func mustUint(t *testing.T, s string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err)
	return n
}

func testConcurrentDistinctSequences(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	const n = 64
	applied := make([]bool, n+1)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for seq := uint64(1); seq <= n; seq++ {
		wg.Go(func() {
			<-start
			id := strconv.FormatUint(seq, 10)
			ok, err := s.Apply(ctx, projection.Batch{
				Projection: proj, Sequence: seq,
				Puts:      puts("race/"+id, id, "race/last", id),
				IndexAdds: []projection.IndexEntry{{Index: "race", Member: id, Score: float64(seq)}},
			})
			if !assert.NoError(t, err) {
				return
			}
			applied[seq] = ok
			seen, err := s.Checkpoint(ctx, proj)
			if assert.NoError(t, err) {
				assert.GreaterOrEqual(t, seen, seq, "checkpoint after Apply(%d) returned applied=%v", seq, ok)
			}
		})
	}
	close(start)
	wg.Wait()

	requireCheckpoint(t, s, proj, n)
	require.True(t, applied[n], "the highest sequence always applies")
	requireValue(t, s, "race/last", strconv.Itoa(n))

	keys := make([]string, n)
	for i := range keys {
		keys[i] = "race/" + strconv.Itoa(i+1)
	}
	docs, err := s.GetMany(ctx, keys...)
	require.NoError(t, err)
	var wins int64
	for i, doc := range docs {
		seq := i + 1
		require.Equal(t, applied[seq], doc != nil, "document of batch %d exists iff it applied", seq)
		if applied[seq] {
			wins++
		}
	}
	count, err := s.Count(ctx, "race")
	require.NoError(t, err)
	require.Equal(t, wins, count, "index entries exist iff their batch applied")
	t.Logf("%d of %d batches applied", wins, n)
}

// testConcurrentSameSequenceOneWins races appliers of the same sequence,
// as redeliveries to several replicas would: exactly one applies, and the
// state is the winner's.
func testConcurrentSameSequence(t *testing.T, s projection.Store) {
	ctx := ctxFor(t)
	const n = 32
	var wins atomic.Int64
	var winner atomic.Value
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			id := "writer-" + strconv.Itoa(i)
			ok, err := s.Apply(ctx, projection.Batch{Projection: proj, Sequence: 1, Puts: puts("doc", id)})
			if !assert.NoError(t, err) {
				return
			}
			if ok {
				wins.Add(1)
				winner.Store(id)
			}
		})
	}
	close(start)
	wg.Wait()
	require.EqualValues(t, 1, wins.Load())
	requireValue(t, s, "doc", winner.Load().(string))
}

// BenchmarkApply measures Apply for a store: "event" is the common shape
// (one document written, one index entry moved), "batch100" a catch-up run
// of 100 documents, "parallel" many projectors at once, one per goroutine.
func BenchmarkApply(b *testing.B, s projection.Store) {
	ctx := b.Context()
	// The testing package calls each body more than once; sequences and
	// projection names live out here so every call continues the last.
	var eventSeq, batchSeq uint64
	var parallelProjections atomic.Int64
	b.Run("event", func(b *testing.B) {
		value := make([]byte, 256)
		seq := eventSeq
		defer func() { eventSeq = seq }()
		for b.Loop() {
			seq++
			id := strconv.FormatUint(seq%1000, 10)
			if !mustApply(b, s, ctx, projection.Batch{
				Projection:   "bench.event",
				Sequence:     seq,
				Puts:         []projection.KV{{Key: "session/" + id, Value: value}},
				IndexRemoves: []projection.IndexEntry{{Index: "sessions.by_state/idle", Member: id}},
				IndexAdds:    []projection.IndexEntry{{Index: "sessions.by_state/running", Member: id, Score: float64(seq)}},
			}) {
				b.FailNow()
			}
		}
	})
	b.Run("batch100", func(b *testing.B) {
		value := make([]byte, 256)
		kvs := make([]projection.KV, 100)
		for i := range kvs {
			kvs[i] = projection.KV{Key: "doc/" + strconv.Itoa(i), Value: value}
		}
		seq := batchSeq
		defer func() { batchSeq = seq }()
		for b.Loop() {
			seq++
			if !mustApply(b, s, ctx, projection.Batch{Projection: "bench.batch", Sequence: seq, Puts: kvs}) {
				b.FailNow()
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		value := make([]byte, 256)
		b.RunParallel(func(pb *testing.PB) {
			name := "bench.parallel." + strconv.FormatInt(parallelProjections.Add(1), 10)
			var seq uint64
			for pb.Next() {
				seq++
				id := strconv.FormatUint(seq%1000, 10)
				if !mustApply(b, s, ctx, projection.Batch{
					Projection: name, Sequence: seq,
					Puts:      []projection.KV{{Key: name + "/" + id, Value: value}},
					IndexAdds: []projection.IndexEntry{{Index: name, Member: id, Score: float64(seq)}},
				}) {
					return
				}
			}
		})
	})
}

// mustApply reports with Errorf, not Fatalf, because RunParallel bodies run
// outside the benchmark's goroutine.
func mustApply(b *testing.B, s projection.Store, ctx context.Context, batch projection.Batch) bool {
	applied, err := s.Apply(ctx, batch)
	if err != nil || !applied {
		b.Errorf("apply %s at %d: applied=%v err=%v", batch.Projection, batch.Sequence, applied, err)
		return false
	}
	return true
}
