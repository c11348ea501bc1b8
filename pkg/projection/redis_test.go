package projection_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projection/projectiontest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

func TestRedis(t *testing.T) {
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		return newRedis(t, redistest.Client(t))
	})
}

// The contract on the projector's batched write path (overlay fold,
// conditional write).
func TestRedisBatched(t *testing.T) {
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		return projectiontest.Batched(newRedis(t, redistest.Client(t)))
	})
}

// newRedis returns a store in a namespace of its own, so tests sharing one
// server never see each other's keys, and removes its keys afterwards.
func newRedis(t testing.TB, c *redis.Client) *projection.Redis {
	return projection.NewRedis(c, namespace(t, c))
}

func namespace(t testing.TB, c *redis.Client) string {
	ns := "test-" + rand.Text()
	t.Cleanup(func() {
		s := projection.NewRedis(c, ns)
		defer s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Reset(ctx); err != nil {
			t.Errorf("remove namespace %s: %v", ns, err)
		}
	})
	return ns
}

func TestRedisKeyLayout(t *testing.T) {
	c := redistest.Client(t)
	ns := namespace(t, c)
	s := projection.NewRedis(c, ns)
	defer s.Close()
	ctx := t.Context()
	_, err := s.Apply(ctx, projection.Batch{
		Projection: "p", Sequence: 1,
		Puts:      []projection.KV{{Key: "k", Value: []byte("v")}},
		IndexAdds: []projection.IndexEntry{{Index: "ix", Member: "m", Score: 1}},
	})
	require.NoError(t, err)

	keys, err := c.Keys(ctx, "ar:{"+ns+"}:*").Result()
	require.NoError(t, err)
	// One hash tag for all keys puts a namespace in one Cluster slot.
	require.ElementsMatch(t, []string{
		"ar:{" + ns + "}:doc:k",
		"ar:{" + ns + "}:idx:ix",
		"ar:{" + ns + "}:ckpt:p",
	}, keys)
}

// TestRedisWaitForWakesByNotification stretches the safety-net poll past the
// test's deadline, so only the dispatcher can wake a waiter in time.
func TestRedisWaitForWakesByNotification(t *testing.T) {
	s := newRedis(t, redistest.Client(t))
	defer s.Close()
	projection.SetPoll(s, time.Hour, time.Hour)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	wait := func(seq uint64) <-chan error {
		got := make(chan error, 1)
		go func() {
			_, err := s.WaitFor(ctx, "p", seq)
			got <- err
		}()
		require.Eventually(t, func() bool { return projection.Waiters(s) == 1 }, 5*time.Second, time.Millisecond)
		return got
	}
	apply := func(seq uint64) {
		applied, err := s.Apply(ctx, projection.Batch{Projection: "p", Sequence: seq})
		require.NoError(t, err)
		require.True(t, applied)
	}

	// The first wake-up may come from the subscription's confirmation, which
	// makes every waiter re-read; once it has come, the subscription is live.
	first := wait(1)
	apply(1)
	require.NoError(t, <-first)

	// Now only the notification published by Apply can wake the waiter.
	second := wait(3)
	apply(2)
	apply(3)
	require.NoError(t, <-second)
}

// TestRedisRefusesHalfApplyingBatch plants a foreign type on an index key:
// the script must refuse before its first write, because Redis does not roll
// scripts back.
func TestRedisRefusesHalfApplyingBatch(t *testing.T) {
	c := redistest.Client(t)
	ns := namespace(t, c)
	s := projection.NewRedis(c, ns)
	defer s.Close()
	ctx := t.Context()
	require.NoError(t, c.Set(ctx, "ar:{"+ns+"}:idx:broken", "not a zset", 0).Err())

	_, err := s.Apply(ctx, projection.Batch{
		Projection: "p", Sequence: 1,
		Puts:      []projection.KV{{Key: "k", Value: []byte("v")}},
		IndexAdds: []projection.IndexEntry{{Index: "broken", Member: "m", Score: 1}},
	})
	require.ErrorContains(t, err, "WRONGTYPE")
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, projection.ErrNotFound)
	seq, err := s.Checkpoint(ctx, "p")
	require.NoError(t, err)
	require.Zero(t, seq)
}

func TestNewRedisRejectsNamespaceBreakingTheHashTag(t *testing.T) {
	for _, ns := range []string{"", "a}b", "{a"} {
		require.Panics(t, func() { projection.NewRedis(redis.NewClient(&redis.Options{}), ns) }, ns)
	}
}
