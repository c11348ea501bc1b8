// Package lease is the port for worker leases (a run or a turn held by one
// worker token until its ttl lapses) and its two stores: Redis (deployments)
// and in process (dev mode), both held to one contract suite (leasetest).
// The tasks service leases task runs and the control service turn claims
// through it; neither imports the other.
package lease

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store is the lease port: Acquire takes a free or lapsed key, Renew extends
// a key the token holds, Release frees it, Holder says who holds it now.
type Store interface {
	Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Renew(ctx context.Context, key, token string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, key, token string) error
	Holder(ctx context.Context, key string) (string, bool, error)
}

// Memory keeps leases in process, for the single-binary dev mode
// where one process runs every replica there is.
type Memory struct {
	mu     sync.Mutex
	now    func() time.Time
	leases map[string]memLease
}

type memLease struct {
	token   string
	expires time.Time
}

// NewMemory returns an empty lease table; now is the clock (nil:
// time.Now), injectable so tests can expire leases without sleeping.
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, leases: map[string]memLease{}}
}

func (m *Memory) live(key string) (memLease, bool) {
	l, ok := m.leases[key]
	if ok && !m.now().Before(l.expires) {
		delete(m.leases, key)
		return memLease{}, false
	}
	return l, ok
}

func (m *Memory) Acquire(_ context.Context, key, token string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.live(key); held {
		return false, nil
	}
	m.leases[key] = memLease{token: token, expires: m.now().Add(ttl)}
	return true, nil
}

func (m *Memory) Renew(_ context.Context, key, token string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, held := m.live(key)
	if !held || l.token != token {
		return false, nil
	}
	m.leases[key] = memLease{token: token, expires: m.now().Add(ttl)}
	return true, nil
}

func (m *Memory) Release(_ context.Context, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, held := m.live(key); held && l.token == token {
		delete(m.leases, key)
	}
	return nil
}

func (m *Memory) Holder(_ context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, held := m.live(key)
	return l.token, held, nil
}

// Redis keeps leases as Redis keys with a TTL: SET NX PX takes one,
// a compare-and-renew script extends it only for its holder, and Redis
// expiry is the authority on whether it is still held (every replica of
// the service sees the same answer).
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis stores leases under prefix (e.g.
// "agentruntime:tasks:lease:").
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// The token comparison and the write are one atomic step, so a holder
// whose lease already expired (and was taken by another) cannot extend or
// delete the new holder's.
var (
	renewScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)
	releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)
)

func (r *Redis) Acquire(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	ok, err := r.client.SetNX(ctx, r.prefix+key, token, ttl).Result()
	return ok, err
}

func (r *Redis) Renew(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, r.client, []string{r.prefix + key}, token, ttl.Milliseconds()).Int()
	return n == 1, err
}

func (r *Redis) Release(ctx context.Context, key, token string) error {
	return releaseScript.Run(ctx, r.client, []string{r.prefix + key}, token).Err()
}

func (r *Redis) Holder(ctx context.Context, key string) (string, bool, error) {
	v, err := r.client.Get(ctx, r.prefix+key).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}
