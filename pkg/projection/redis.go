package projection

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Store of a deployment. It needs Redis 6.2 or later (ZRANGE
// BYSCORE) and works with a single node, Sentinel or Cluster.
//
// Keys of one store share the prefix "ar:{<namespace>}:" (documents under
// "doc:", indexes under "idx:", checkpoints under "ckpt:"). The braces are a
// Cluster hash tag: every key of a namespace lives in one slot, which is what
// lets one script touch them all.
//
// Apply is one round trip: a Lua script (EVALSHA, falling back to EVAL when
// the server has not cached it) compares the checkpoint, applies the batch,
// sets the checkpoint and publishes a notification. Redis runs scripts
// atomically but does not roll them back, so the script checks every index
// key's type before its first write: nothing it then calls can fail halfway.
//
// WaitFor listens to those notifications on one shared subscription per store,
// started on first use, and still re-reads the checkpoint with a capped
// backoff: a notification lost while the subscription reconnects, or refused
// by an ACL, delays a waiter but cannot hang it. Every (re)subscription also
// wakes all waiters to re-read, which closes the gap a reconnect opens.
type Redis struct {
	client redis.UniversalClient
	// prefix is the namespace's; keys is the generation's within it (the
	// namespace's own without a generation), computed once: a read costs
	// no round trip to learn which generation it reads.
	prefix  string
	keys    string
	gen     Generation
	channel string

	// Bounds of the safety-net poll in WaitFor; variables so tests can prove
	// that notifications, not polling, wake waiters.
	minPoll, maxPoll time.Duration

	ctx    context.Context // ends on Close; bounds the subscription
	cancel context.CancelFunc

	mu         sync.Mutex
	closed     bool
	sub        *redis.PubSub
	dispatched chan struct{} // closed when the dispatcher has returned
	waiters    map[string]map[*redisWaiter]struct{}
}

type redisWaiter struct {
	target uint64
	wake   chan struct{} // capacity 1: a pending wake-up is never lost
}

var _ Store = (*Redis)(nil)

// NewRedis returns a store keeping its data under namespace. The caller owns
// client and closes it after Close. It panics when namespace is empty or
// contains a brace, as either would break the hash tag.
func NewRedis(client redis.UniversalClient, namespace string) *Redis {
	return NewRedisGeneration(client, namespace, Generation{})
}

// NewRedisGeneration returns the store of generation g under namespace:
// its documents, indexes and projections' checkpoints live under
// "ar:{<namespace>}:<g.ID>:", beside other generations'; checkpoints g
// does not cover (reactors') stay under the namespace's "ckpt:", shared
// by every generation. The zero Generation is NewRedis's layout. See
// generations.go for how a generation becomes the active one.
func NewRedisGeneration(client redis.UniversalClient, namespace string, g Generation) *Redis {
	if namespace == "" || strings.ContainsAny(namespace, "{}") {
		panic(fmt.Sprintf("projection: invalid Redis namespace %q: must be non-empty and brace-free", namespace))
	}
	prefix := "ar:{" + namespace + "}:"
	keys := prefix
	if g.ID != "" {
		keys = prefix + g.ID + ":"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Redis{
		client:  client,
		prefix:  prefix,
		keys:    keys,
		gen:     g,
		channel: keys + "applied",
		minPoll: 10 * time.Millisecond,
		maxPoll: time.Second,
		ctx:     ctx,
		cancel:  cancel,
		waiters: make(map[string]map[*redisWaiter]struct{}),
	}
}

func (r *Redis) docKey(key string) string     { return r.keys + "doc:" + key }
func (r *Redis) indexKey(index string) string { return r.keys + "idx:" + index }
func (r *Redis) checkpointKey(proj string) string {
	if r.gen.Covers(proj) {
		return r.keys + "ckpt:" + proj
	}
	return r.prefix + "ckpt:" + proj
}

func (r *Redis) isClosed() bool {
	return r.ctx.Err() != nil
}

// applyScript: KEYS[1] is the checkpoint, then the keys of deletes, puts,
// index removes and index adds; ARGV holds the sequence, the four counts, the
// notification channel and projection, the base checkpoint of a conditional
// batch (empty when unconditional), then put values, removed members and
// (score, member) pairs.
//
// Sequences are compared as decimal strings because Lua numbers are doubles
// and would round sequences above 2^53.
var applyScript = redis.NewScript(`
local function above(a, b)
  if #a ~= #b then return #a > #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return false
end

local seq = ARGV[1]
local current = redis.call('GET', KEYS[1])
if current and not above(seq, current) then
  return 0
end
if ARGV[8] ~= '' and ARGV[8] ~= (current or '0') then
  return 0
end

local nDel, nPut, nRem, nAdd = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
for i = 2 + nDel + nPut, 1 + nDel + nPut + nRem + nAdd do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'zset' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE projection index ' .. KEYS[i] .. ' holds a ' .. t)
  end
end

local k, a = 2, 9
for _ = 1, nDel do redis.call('DEL', KEYS[k]); k = k + 1 end
for _ = 1, nPut do redis.call('SET', KEYS[k], ARGV[a]); k = k + 1; a = a + 1 end
for _ = 1, nRem do redis.call('ZREM', KEYS[k], ARGV[a]); k = k + 1; a = a + 1 end
for _ = 1, nAdd do redis.call('ZADD', KEYS[k], ARGV[a], ARGV[a + 1]); k = k + 1; a = a + 2 end
redis.call('SET', KEYS[1], seq)
-- Best effort: waiters fall back to polling, and a refused PUBLISH must not
-- turn an applied batch into an error.
redis.pcall('PUBLISH', ARGV[6], seq .. ' ' .. ARGV[7])
return 1
`)

// Apply implements Store.
func (r *Redis) Apply(ctx context.Context, b Batch) (bool, error) {
	if err := b.validate(); err != nil {
		return false, err
	}
	if r.isClosed() {
		return false, ErrClosed
	}
	nKeys := 1 + len(b.Deletes) + len(b.Puts) + len(b.IndexRemoves) + len(b.IndexAdds)
	keys := make([]string, 0, nKeys)
	args := make([]any, 0, 8+len(b.Puts)+len(b.IndexRemoves)+2*len(b.IndexAdds))
	keys = append(keys, r.checkpointKey(b.Projection))
	base := ""
	if b.Conditional {
		base = strconv.FormatUint(b.Base, 10)
	}
	args = append(args,
		strconv.FormatUint(b.Sequence, 10),
		len(b.Deletes), len(b.Puts), len(b.IndexRemoves), len(b.IndexAdds),
		r.channel, b.Projection, base)
	for _, key := range b.Deletes {
		keys = append(keys, r.docKey(key))
	}
	for _, kv := range b.Puts {
		keys = append(keys, r.docKey(kv.Key))
		// A nil slice would be sent as an empty string anyway; be explicit.
		if kv.Value == nil {
			args = append(args, "")
		} else {
			args = append(args, kv.Value)
		}
	}
	for _, e := range b.IndexRemoves {
		keys = append(keys, r.indexKey(e.Index))
		args = append(args, e.Member)
	}
	for _, e := range b.IndexAdds {
		keys = append(keys, r.indexKey(e.Index))
		args = append(args, formatScore(e.Score), e.Member)
	}
	n, err := applyScript.Run(ctx, r.client, keys, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("projection: apply %q at %d: %w", b.Projection, b.Sequence, err)
	}
	return n == 1, nil
}

// Checkpoint implements Store.
func (r *Redis) Checkpoint(ctx context.Context, projection string) (uint64, error) {
	if err := validProjection(projection); err != nil {
		return 0, err
	}
	if r.isClosed() {
		return 0, ErrClosed
	}
	s, err := r.client.Get(ctx, r.checkpointKey(projection)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("projection: checkpoint of %q: %w", projection, err)
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("projection: checkpoint of %q is corrupt: %w", projection, err)
	}
	return seq, nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	v, err := r.client.Get(ctx, r.docKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("projection: get %q: %w", key, err)
	}
	return v, nil
}

// GetMany implements Store with one MGET; the shared hash tag makes it legal
// on Cluster.
func (r *Redis) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	redisKeys := make([]string, len(keys))
	for i, key := range keys {
		redisKeys[i] = r.docKey(key)
	}
	vals, err := r.client.MGet(ctx, redisKeys...).Result()
	if err != nil {
		return nil, fmt.Errorf("projection: get %d keys: %w", len(keys), err)
	}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i] = []byte(s)
		}
	}
	return out, nil
}

// Range implements Store.
func (r *Redis) Range(ctx context.Context, index string, q RangeQuery) ([]IndexEntry, error) {
	lo, hi, err := q.bounds()
	if err != nil {
		return nil, err
	}
	if r.isClosed() {
		return nil, ErrClosed
	}
	args := redis.ZRangeArgs{
		Key:     r.indexKey(index),
		Start:   formatScore(lo),
		Stop:    formatScore(hi),
		ByScore: true,
		Rev:     q.Reverse,
		Offset:  q.Offset,
		Count:   q.Limit,
	}
	if q.Reverse {
		args.Start, args.Stop = args.Stop, args.Start
	}
	if q.Limit == 0 && q.Offset > 0 {
		// LIMIT with a count of 0 returns nothing; -1 means all.
		args.Count = -1
	}
	zs, err := r.client.ZRangeArgsWithScores(ctx, args).Result()
	if err != nil {
		return nil, fmt.Errorf("projection: range %q: %w", index, err)
	}
	out := make([]IndexEntry, len(zs))
	for i, z := range zs {
		member, _ := z.Member.(string)
		out[i] = IndexEntry{Index: index, Member: member, Score: z.Score}
	}
	return out, nil
}

// Count implements Store.
func (r *Redis) Count(ctx context.Context, index string) (int64, error) {
	if r.isClosed() {
		return 0, ErrClosed
	}
	n, err := r.client.ZCard(ctx, r.indexKey(index)).Result()
	if err != nil {
		return 0, fmt.Errorf("projection: count %q: %w", index, err)
	}
	return n, nil
}

// WaitFor implements Store.
func (r *Redis) WaitFor(ctx context.Context, projection string, seq uint64) (uint64, error) {
	if err := validProjection(projection); err != nil {
		return 0, err
	}
	// Registered before the first read, so a notification that arrives
	// between the read and the wait is not lost.
	w, err := r.register(projection, seq)
	if err != nil {
		return 0, err
	}
	defer r.unregister(projection, w)

	poll := r.minPoll
	timer := time.NewTimer(poll)
	defer timer.Stop()
	var current uint64
	for {
		c, err := r.Checkpoint(ctx, projection)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return current, ctxErr
			}
			return current, err
		}
		current = c
		if current >= seq {
			return current, nil
		}
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return current, ctx.Err()
		case <-r.ctx.Done():
			return current, ErrClosed
		case <-w.wake:
		case <-timer.C:
			poll = min(2*poll, r.maxPoll)
		}
	}
}

func (r *Redis) register(projection string, target uint64) (*redisWaiter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.sub == nil {
		r.startDispatcher()
	}
	w := &redisWaiter{target: target, wake: make(chan struct{}, 1)}
	set := r.waiters[projection]
	if set == nil {
		set = make(map[*redisWaiter]struct{})
		r.waiters[projection] = set
	}
	set[w] = struct{}{}
	return w, nil
}

func (r *Redis) unregister(projection string, w *redisWaiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.waiters[projection]
	delete(set, w)
	if len(set) == 0 {
		delete(r.waiters, projection)
	}
}

// startDispatcher opens the store's one subscription. Callers hold r.mu.
// Subscribing happens in the goroutine, so a slow or unreachable server
// never blocks a caller holding the lock; go-redis reconnects and
// resubscribes by itself after a failure.
func (r *Redis) startDispatcher() {
	r.sub = r.client.Subscribe(r.ctx)
	r.dispatched = make(chan struct{})
	sub, done := r.sub, r.dispatched
	go func() {
		defer close(done)
		_ = sub.Subscribe(r.ctx, r.channel)
		for msg := range sub.ChannelWithSubscriptions() {
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					r.wakeAll()
				}
			case *redis.Message:
				r.dispatch(m.Payload)
			}
		}
	}()
}

// dispatch wakes the waiters a notification "<sequence> <projection>"
// satisfies; they confirm by re-reading the checkpoint.
func (r *Redis) dispatch(payload string) {
	seqText, projection, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.waiters[projection] {
		if w.target <= seq {
			signal(w.wake)
		}
	}
}

func (r *Redis) wakeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, set := range r.waiters {
		for w := range set {
			signal(w.wake)
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Reset implements Store. It deletes checkpoints first, so that if it is
// interrupted the projections restart from zero instead of resuming over
// half-deleted state. A store of a generation deletes that generation and
// the shared checkpoints; one without deletes the whole namespace.
func (r *Redis) Reset(ctx context.Context) error {
	if r.isClosed() {
		return ErrClosed
	}
	node, err := r.namespaceNode(ctx)
	if err != nil {
		return err
	}
	shared, pattern := globEscape(r.prefix), globEscape(r.keys)
	for _, match := range []string{shared + "ckpt:*", pattern + "ckpt:*", pattern + "*"} {
		if err := deleteMatching(ctx, node, match); err != nil {
			return fmt.Errorf("projection: reset %s: %w", r.prefix, err)
		}
	}
	return nil
}

// namespaceNode returns the client to SCAN: on Cluster, SCAN covers one
// node only, and the hash tag puts the whole namespace on the master of one
// slot.
func (r *Redis) namespaceNode(ctx context.Context) (redis.Cmdable, error) {
	cluster, ok := r.client.(*redis.ClusterClient)
	if !ok {
		return r.client, nil
	}
	node, err := cluster.MasterForKey(ctx, r.prefix)
	if err != nil {
		return nil, fmt.Errorf("projection: locate %s: %w", r.prefix, err)
	}
	return node, nil
}

func deleteMatching(ctx context.Context, c redis.Cmdable, match string) error {
	const batch = 512
	keys := make([]string, 0, batch)
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		err := c.Unlink(ctx, keys...).Err()
		keys = keys[:0]
		return err
	}
	// Deleting while scanning is safe: SCAN still returns every key that
	// exists for the whole iteration.
	iter := c.Scan(ctx, 0, match, batch).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// Close implements Store. It stops the subscription but leaves the client,
// which the caller owns, open.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.cancel()
	sub, done := r.sub, r.dispatched
	r.mu.Unlock()
	if sub != nil {
		_ = sub.Close()
		<-done
	}
	return nil
}

// formatScore renders a score exactly, in a form both ZADD and ZRANGE parse.
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// globEscape quotes the characters SCAN MATCH treats as patterns.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
