package quota

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

// clock is a limiter's time, moved by the test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newLimiter(cfg Config) (*Limiter, *clock) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	l := New(cfg)
	l.now = c.Now
	return l, c
}

// call is one caller's call: a fresh ticket.
func call(l *Limiter) context.Context { return AtDoor(context.Background(), l) }

func TestATenantAppendsItsBucketThenIsRefusedWithWhenToRetry(t *testing.T) {
	l, clk := newLimiter(Config{Default: Limits{EventsPerSecond: 10}})
	for i := range 10 {
		require.NoError(t, Charge(call(l), "acme", 1, 100), "append %d of the first second's 10", i)
	}
	err := Charge(call(l), "acme", 1, 100)
	e, ok := fault.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, fault.KindExhausted, e.Kind)
	require.Equal(t, ReasonEventsRate, e.Reason)
	require.Equal(t, map[string]string{"limit": "append_events_per_second", "rate": "10", "tenant": "acme"}, e.Metadata)
	require.Equal(t, 100*time.Millisecond, e.RetryAfter)

	clk.Advance(e.RetryAfter)
	require.NoError(t, Charge(call(l), "acme", 1, 100), "one event's worth of time later")
	require.Error(t, Charge(call(l), "acme", 1, 100))
}

func TestBytesAreALimitOfTheirOwn(t *testing.T) {
	l, clk := newLimiter(Config{Default: Limits{EventsPerSecond: 1000, BytesPerSecond: 1000}})
	require.NoError(t, Charge(call(l), "acme", 1, 600))
	err := Charge(call(l), "acme", 1, 600)
	require.True(t, fault.HasReason(err, ReasonBytesRate), "%v", err)
	e, _ := fault.As(err)
	require.Equal(t, 200*time.Millisecond, e.RetryAfter, "200 more bytes at 1000/s")
	require.Equal(t, "append_bytes_per_second", e.Metadata["limit"])
	// The refused call charged nothing, not even its event.
	clk.Advance(200 * time.Millisecond)
	require.NoError(t, Charge(call(l), "acme", 1, 600))
}

// A command larger than the whole bucket still lands, on a full bucket,
// and its debt holds the tenant back for as long as it overshot.
func TestAnAppendLargerThanTheBucketLandsOnAFullOneAndIsRepaid(t *testing.T) {
	l, clk := newLimiter(Config{Default: Limits{BytesPerSecond: 1000}})
	require.NoError(t, Charge(call(l), "acme", 1, 3000))
	err := Charge(call(l), "acme", 1, 10)
	e, ok := fault.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 2010*time.Millisecond, e.RetryAfter, "the 2000 bytes of debt, then the 10")
	clk.Advance(2010 * time.Millisecond)
	require.NoError(t, Charge(call(l), "acme", 1, 10))
}

// Once admitted, a call's later appends (a second aggregate, a retry after
// a conflict) are never refused: a command is not cut half-way. Its
// overshoot is the tenant's debt.
func TestAnAdmittedCallIsNeverRefusedHalfWay(t *testing.T) {
	l, clk := newLimiter(Config{Default: Limits{EventsPerSecond: 2}})
	ctx := call(l)
	for i := range 5 {
		require.NoError(t, Charge(ctx, "acme", 1, 10), "append %d of one admitted call", i)
	}
	err := Charge(call(l), "acme", 1, 10)
	e, _ := fault.As(err)
	require.NotNil(t, e, "the next call waits for the debt")
	require.Equal(t, 2*time.Second, e.RetryAfter, "3 events of debt and the next one at 2/s")
	clk.Advance(2 * time.Second)
	require.NoError(t, Charge(call(l), "acme", 1, 10))
}

// The runtime's own appends (a reactor's follow-up facts) carry no ticket
// and are never charged, however far over its quota the tenant is.
func TestTheRuntimesOwnAppendsAreNotCharged(t *testing.T) {
	l, _ := newLimiter(Config{Default: Limits{EventsPerSecond: 1}})
	require.NoError(t, Charge(call(l), "acme", 1, 10))
	require.Error(t, Charge(call(l), "acme", 1, 10))
	for range 100 {
		require.NoError(t, Charge(context.Background(), "acme", 1, 10))
	}
	require.NoError(t, Charge(AtDoor(context.Background(), nil), "acme", 1, 10), "no limiter: no quota")
}

func TestTenantsHaveTheirOwnBucketsAndLimits(t *testing.T) {
	l, _ := newLimiter(Config{Default: Limits{EventsPerSecond: 1}, Tenants: map[string]Limits{"big": {EventsPerSecond: 100}, "free": {}}})
	require.NoError(t, Charge(call(l), "acme", 1, 1))
	require.Error(t, Charge(call(l), "acme", 1, 1))
	require.NoError(t, Charge(call(l), "globex", 1, 1), "acme's flood is acme's")
	for range 100 {
		require.NoError(t, Charge(call(l), "big", 1, 1))
	}
	require.Error(t, Charge(call(l), "big", 1, 1))
	for range 1000 {
		require.NoError(t, Charge(call(l), "free", 1, 1), "0 is no limit")
	}
}

// However many calls race for one bucket, it admits exactly what it holds.
func TestRacingCallsGetNoMoreThanTheBucket(t *testing.T) {
	l, _ := newLimiter(Config{Default: Limits{EventsPerSecond: 50}})
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if Charge(call(l), "acme", 1, 1) == nil {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(50), admitted.Load())
}

// Open turns a tenant away at the door only while it cannot append a
// single event or byte, and takes nothing.
func TestTheDoorOpensWhileOneEventFits(t *testing.T) {
	l, clk := newLimiter(Config{Default: Limits{EventsPerSecond: 2, BytesPerSecond: 100}})
	for range 5 {
		require.NoError(t, l.Open(context.Background(), "acme"), "open takes nothing")
	}
	require.NoError(t, Charge(call(l), "acme", 1, 10))
	require.NoError(t, l.Open(context.Background(), "acme"))
	require.NoError(t, Charge(call(l), "acme", 1, 10))
	err := l.Open(context.Background(), "acme")
	require.True(t, fault.HasReason(err, ReasonEventsRate), "%v", err)
	e, _ := fault.As(err)
	require.Equal(t, 500*time.Millisecond, e.RetryAfter)
	clk.Advance(500 * time.Millisecond)
	require.NoError(t, l.Open(context.Background(), "acme"))

	// In debt on bytes: turned away until it is repaid.
	require.NoError(t, Charge(call(l), "acme", 1, 300))
	clk.Advance(time.Second)
	err = l.Open(context.Background(), "acme")
	require.True(t, fault.HasReason(err, ReasonBytesRate), "%v", err)
}

// A tenant holds at most its bound of streams open; a closed one frees its
// place (once, however often it is released); other tenants are apart.
func TestATenantHoldsABoundedNumberOfStreams(t *testing.T) {
	l, _ := newLimiter(Config{Default: Limits{Streams: 2}, Tenants: map[string]Limits{"free": {}}})
	ctx := context.Background()
	r1, err := l.OpenStream(ctx, "acme")
	require.NoError(t, err)
	_, err = l.OpenStream(ctx, "acme")
	require.NoError(t, err)
	_, err = l.OpenStream(ctx, "acme")
	e, ok := fault.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, ReasonStreams, e.Reason)
	require.Equal(t, map[string]string{"limit": "max_streams", "max": "2", "tenant": "acme"}, e.Metadata)
	require.Positive(t, e.RetryAfter)
	_, err = l.OpenStream(ctx, "globex")
	require.NoError(t, err, "acme's streams are acme's")
	r1()
	r1()
	_, err = l.OpenStream(ctx, "acme")
	require.NoError(t, err, "a closed stream frees its place")
	_, err = l.OpenStream(ctx, "acme")
	require.Error(t, err, "released twice, freed once")
	for range 50 {
		_, err := l.OpenStream(ctx, "free")
		require.NoError(t, err, "0 is no bound")
	}
}
