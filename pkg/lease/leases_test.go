package lease_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/lease/leasetest"
	"github.com/agentruntime/agentruntime/pkg/testkit/redistest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestMemoryLeases(t *testing.T) {
	clocks := map[leasetest.Leases]*clock{}
	leasetest.Run(t, leasetest.Harness{
		New: func(t *testing.T) leasetest.Leases {
			c := &clock{t: time.Unix(1700000000, 0)}
			l := lease.NewMemory(c.now)
			clocks[l] = c
			return l
		},
		Expire: func(t *testing.T, l leasetest.Leases, _ string, d time.Duration) { clocks[l].add(d) },
	})
}

func TestRedisLeases(t *testing.T) {
	client := redistest.Client(t)
	leasetest.Run(t, leasetest.Harness{
		New: func(t *testing.T) leasetest.Leases {
			return lease.NewRedis(client, "agentruntime:tasks:test:"+ids.New("t")+":")
		},
		// Redis expires keys on its own clock: let the ttl pass. A GET on
		// an expired key misses at once (Redis expires lazily on access),
		// so no polling is needed; a renewed lease must still be there.
		Expire: func(t *testing.T, _ leasetest.Leases, _ string, d time.Duration) {
			<-time.After(d + 50*time.Millisecond)
		},
	})
}
