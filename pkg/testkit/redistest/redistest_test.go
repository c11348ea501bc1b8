package redistest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestClientAnswers(t *testing.T) {
	c := Client(t)
	ctx := t.Context()
	key := "redistest:" + t.Name()
	require.NoError(t, c.Set(ctx, key, "v", time.Minute).Err())
	require.Equal(t, "v", c.Get(ctx, key).Val())
	require.NoError(t, c.Del(ctx, key).Err())
}

// TestURLStartsServerWithoutEnv exercises the start path even when the
// suite runs against $REDIS_URL.
func TestURLStartsServerWithoutEnv(t *testing.T) {
	t.Setenv(EnvURL, "")
	url := URL(t)
	require.NotEmpty(t, url)
	if shareServer {
		require.Equal(t, url, URL(t), "one server per test binary")
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, c.Ping(ctx).Err())
}

func TestStartNamesTheFixWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := start(t.TempDir())
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "apt-get install redis-server") && strings.Contains(err.Error(), EnvURL), err.Error())
}

func TestStopEndsTheProcess(t *testing.T) {
	s, err := start(t.TempDir())
	require.NoError(t, err)
	s.stop()
	select {
	case <-s.exited:
	default:
		t.Fatal("stop returned before the process exited")
	}
}
