package projection_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projection/projectiontest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

func put(t *testing.T, s projection.Store, proj string, seq uint64, key, value string) {
	t.Helper()
	_, err := s.Apply(t.Context(), projection.Batch{Projection: proj, Sequence: seq,
		Puts:      []projection.KV{{Key: key, Value: []byte(value)}},
		IndexAdds: []projection.IndexEntry{{Index: "ix", Member: key, Score: float64(seq)}}})
	require.NoError(t, err)
}

func keys(t *testing.T, c *redis.Client, pattern string) []string {
	t.Helper()
	ks, err := c.Keys(t.Context(), pattern).Result()
	require.NoError(t, err)
	return ks
}

// Generations of one namespace live beside each other: the same key
// answers each generation its own document, a projection's checkpoint is
// its generation's, a reactor's is shared. The first activation keeps the
// layout from before generations as the previous one; the next one
// retires it (two behind), and only its projections' checkpoints among
// the shared ones.
func TestRedisGenerationsLiveBesideEachOther(t *testing.T) {
	c := redistest.Client(t)
	ns := namespace(t, c)
	ctx := t.Context()
	legacy := projection.NewRedis(c, ns)
	defer legacy.Close()
	put(t, legacy, "p", 1, "k", "legacy")
	put(t, legacy, "reactor", 1, "r", "legacy reactor")

	g1 := projection.NewGeneration(projection.Fold{Name: "p", Version: 1})
	g2 := projection.NewGeneration(projection.Fold{Name: "p", Version: 2})
	require.NotEqual(t, g1.ID, g2.ID)
	require.Equal(t, g1.ID, projection.NewGeneration(projection.Fold{Name: "p", Version: 1}).ID, "a generation's ID is derived from its folds")
	s1 := projection.NewRedisGeneration(c, ns, g1)
	defer s1.Close()
	s2 := projection.NewRedisGeneration(c, ns, g2)
	defer s2.Close()

	active, err := s1.Register(ctx)
	require.NoError(t, err)
	require.Equal(t, projection.LegacyGeneration, active)
	cp, err := s1.Checkpoint(ctx, "p")
	require.NoError(t, err)
	require.Zero(t, cp, "a new generation starts from the start of the log")
	cp, err = s1.Checkpoint(ctx, "reactor")
	require.NoError(t, err)
	require.Equal(t, uint64(1), cp, "a reactor's checkpoint is shared by every generation")
	put(t, s1, "p", 1, "k", "one")
	put(t, s1, "p@p1", 1, "k2", "one, partition 1")
	put(t, s2, "p", 1, "k", "two")
	for s, want := range map[projection.Store]string{legacy: "legacy", s1: "one", s2: "two"} {
		got, err := s.Get(ctx, "k")
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}

	previous, err := s1.Activate(ctx)
	require.NoError(t, err)
	require.Equal(t, projection.LegacyGeneration, previous)
	retired, err := s1.Retire(ctx)
	require.NoError(t, err)
	require.Empty(t, retired, "the legacy layout is the previous generation: kept")
	got, err := legacy.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "legacy", string(got))

	_, err = s2.Register(ctx)
	require.NoError(t, err)
	previous, err = s2.Activate(ctx)
	require.NoError(t, err)
	require.Equal(t, g1.ID, previous)
	retired, err = s2.Retire(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{projection.LegacyGeneration}, retired)
	_, err = legacy.Get(ctx, "k")
	require.ErrorIs(t, err, projection.ErrNotFound, "the legacy layout, two behind, is deleted")
	n, err := legacy.Count(ctx, "ix")
	require.NoError(t, err)
	require.Zero(t, n)
	cp, err = legacy.Checkpoint(ctx, "p")
	require.NoError(t, err)
	require.Zero(t, cp)
	cp, err = s2.Checkpoint(ctx, "reactor")
	require.NoError(t, err)
	require.Equal(t, uint64(1), cp, "retiring the legacy layout keeps the reactors' checkpoints")
	got, err = s1.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "one", string(got), "the previous generation is kept")

	// Activating again changes nothing; a third generation retires g1.
	previous, err = s2.Activate(ctx)
	require.NoError(t, err)
	require.Equal(t, g1.ID, previous)
	g3 := projection.NewGeneration(projection.Fold{Name: "p", Version: 3})
	s3 := projection.NewRedisGeneration(c, ns, g3)
	defer s3.Close()
	_, err = s3.Register(ctx)
	require.NoError(t, err)
	_, err = s3.Activate(ctx)
	require.NoError(t, err)
	retired, err = s3.Retire(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{g1.ID}, retired)
	require.Empty(t, keys(t, c, "ar:{"+ns+"}:"+g1.ID+":*"))
	require.NotEmpty(t, keys(t, c, "ar:{"+ns+"}:"+g2.ID+":*"))
	active, err = s1.ActiveGeneration(ctx)
	require.NoError(t, err)
	require.Equal(t, g3.ID, active)
}

// A store without a generation refuses the generation calls.
func TestRedisWithoutGenerationRefusesToActivate(t *testing.T) {
	c := redistest.Client(t)
	s := projection.NewRedis(c, namespace(t, c))
	defer s.Close()
	_, err := s.Activate(t.Context())
	require.ErrorIs(t, err, projection.ErrInvalid)
}

// The contract holds for a generation's store as for any.
func TestRedisGeneration(t *testing.T) {
	projectiontest.Run(t, func(t *testing.T) projection.Store {
		c := redistest.Client(t)
		return projection.NewRedisGeneration(c, namespace(t, c), projection.NewGeneration(projection.Fold{Name: "p", Version: 1}))
	})
}
