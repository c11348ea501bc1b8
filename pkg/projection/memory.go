package projection

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
)

// Memory is the in-process Store of the single-binary dev mode. One mutex
// guards everything, which makes every Apply trivially atomic; reads share a
// read lock. Values are copied in and out so callers cannot alias stored
// state.
type Memory struct {
	mu          sync.RWMutex
	closed      bool
	docs        map[string][]byte
	indexes     map[string]*memIndex
	checkpoints map[string]uint64
	// advanced holds, per projection with waiters, a channel that Apply
	// closes when the checkpoint moves: a broadcast without polling.
	advanced map[string]chan struct{}
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-process store.
func NewMemory() *Memory {
	return &Memory{
		docs:        make(map[string][]byte),
		indexes:     make(map[string]*memIndex),
		checkpoints: make(map[string]uint64),
		advanced:    make(map[string]chan struct{}),
	}
}

// Apply implements Store.
func (m *Memory) Apply(ctx context.Context, b Batch) (bool, error) {
	if err := b.validate(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	if current := m.checkpoints[b.Projection]; current >= b.Sequence || (b.Conditional && current != b.Base) {
		return false, nil
	}
	for _, key := range b.Deletes {
		delete(m.docs, key)
	}
	for _, kv := range b.Puts {
		m.docs[kv.Key] = clone(kv.Value)
	}
	for _, e := range b.IndexRemoves {
		if ix := m.indexes[e.Index]; ix != nil {
			ix.remove(e.Member)
			if len(ix.entries) == 0 {
				// Redis drops empty sorted sets; do the same so both stores agree.
				delete(m.indexes, e.Index)
			}
		}
	}
	for _, e := range b.IndexAdds {
		ix := m.indexes[e.Index]
		if ix == nil {
			ix = &memIndex{scores: make(map[string]float64)}
			m.indexes[e.Index] = ix
		}
		ix.add(e.Member, e.Score)
	}
	m.checkpoints[b.Projection] = b.Sequence
	if ch, ok := m.advanced[b.Projection]; ok {
		close(ch)
		delete(m.advanced, b.Projection)
	}
	return true, nil
}

// Checkpoint implements Store.
func (m *Memory) Checkpoint(ctx context.Context, projection string) (uint64, error) {
	if err := validProjection(projection); err != nil {
		return 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	return m.checkpoints[projection], nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	v, ok := m.docs[key]
	if !ok {
		return nil, ErrNotFound
	}
	return clone(v), nil
}

// GetMany implements Store.
func (m *Memory) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	out := make([][]byte, len(keys))
	for i, key := range keys {
		if v, ok := m.docs[key]; ok {
			out[i] = clone(v)
		}
	}
	return out, nil
}

// Range implements Store.
func (m *Memory) Range(ctx context.Context, index string, q RangeQuery) ([]IndexEntry, error) {
	if _, _, err := q.bounds(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	ix := m.indexes[index]
	if ix == nil {
		return []IndexEntry{}, nil
	}
	return rangeIndex(ix, index, q)
}

// rangeIndex selects q's entries of ix; q's bounds are valid.
func rangeIndex(ix *memIndex, index string, q RangeQuery) ([]IndexEntry, error) {
	lo, hi, err := q.bounds()
	if err != nil {
		return nil, err
	}
	out := []IndexEntry{}
	es := ix.entries
	skip := q.Offset
	emit := func(e scored) bool {
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, IndexEntry{Index: index, Member: e.member, Score: e.score})
		return q.Limit == 0 || int64(len(out)) < q.Limit
	}
	if q.Reverse {
		end, _ := slices.BinarySearchFunc(es, hi, func(e scored, s float64) int {
			if e.score <= s {
				return -1
			}
			return 1
		})
		for i := end - 1; i >= 0 && es[i].score >= lo; i-- {
			if !emit(es[i]) {
				break
			}
		}
		return out, nil
	}
	start, _ := slices.BinarySearchFunc(es, lo, func(e scored, s float64) int {
		if e.score < s {
			return -1
		}
		return 1
	})
	for i := start; i < len(es) && es[i].score <= hi; i++ {
		if !emit(es[i]) {
			break
		}
	}
	return out, nil
}

// Count implements Store.
func (m *Memory) Count(ctx context.Context, index string) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	if ix := m.indexes[index]; ix != nil {
		return int64(len(ix.entries)), nil
	}
	return 0, nil
}

// WaitFor implements Store.
func (m *Memory) WaitFor(ctx context.Context, projection string, seq uint64) (uint64, error) {
	if err := validProjection(projection); err != nil {
		return 0, err
	}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return 0, ErrClosed
		}
		current := m.checkpoints[projection]
		if current >= seq {
			m.mu.Unlock()
			return current, nil
		}
		// Taken under the same lock as the read, so an Apply in between
		// cannot be missed.
		ch, ok := m.advanced[projection]
		if !ok {
			ch = make(chan struct{})
			m.advanced[projection] = ch
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return current, ctx.Err()
		case <-ch:
		}
	}
}

// Dump copies every document and every index of the store, checkpoints
// aside, each index's entries in Range order: for tests and debugging (two
// stores folded from one log can be compared key by key). It is not part
// of Store: Redis has no cheap equivalent.
func (m *Memory) Dump() (docs map[string][]byte, indexes map[string][]IndexEntry) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	docs = make(map[string][]byte, len(m.docs))
	for k, v := range m.docs {
		docs[k] = clone(v)
	}
	indexes = make(map[string][]IndexEntry, len(m.indexes))
	for name, ix := range m.indexes {
		es := make([]IndexEntry, len(ix.entries))
		for i, e := range ix.entries {
			es[i] = IndexEntry{Index: name, Member: e.member, Score: e.score}
		}
		indexes[name] = es
	}
	return docs, indexes
}

// Reset implements Store.
func (m *Memory) Reset(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	clear(m.docs)
	clear(m.indexes)
	clear(m.checkpoints)
	return nil
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	for projection, ch := range m.advanced {
		close(ch)
		delete(m.advanced, projection)
	}
	return nil
}

// clone copies v, keeping a present empty value distinct from a missing one.
func clone(v []byte) []byte {
	return append([]byte{}, v...)
}

type scored struct {
	score  float64
	member string
}

// memIndex is a sorted slice plus a member lookup. Insertion is O(n) by
// memmove, which is fast at dev-mode sizes and far simpler than a skip list.
type memIndex struct {
	scores  map[string]float64
	entries []scored // ordered by score, then member bytewise, as in Redis
}

func compareScored(a, b scored) int {
	if c := cmp.Compare(a.score, b.score); c != 0 {
		return c
	}
	return strings.Compare(a.member, b.member)
}

func (ix *memIndex) add(member string, score float64) {
	if old, ok := ix.scores[member]; ok {
		if old == score {
			return
		}
		ix.remove(member)
	}
	e := scored{score: score, member: member}
	i, _ := slices.BinarySearchFunc(ix.entries, e, compareScored)
	ix.entries = slices.Insert(ix.entries, i, e)
	ix.scores[member] = score
}

func (ix *memIndex) remove(member string) {
	score, ok := ix.scores[member]
	if !ok {
		return
	}
	if i, found := slices.BinarySearchFunc(ix.entries, scored{score: score, member: member}, compareScored); found {
		ix.entries = slices.Delete(ix.entries, i, i+1)
	}
	delete(ix.scores, member)
}
