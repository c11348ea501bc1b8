package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Overlay folds several events' batches in memory over a base store and
// yields them as one batch. Reads see the batches staged so far, then the
// base; a document or index read from the base is kept for the rest of the
// fold, so a batch of N events reads each key it needs once, not N times.
//
// It implements Store so a projection's Project reads it as it reads the
// real store. Apply stages a batch (unconditionally, ignoring its sequence);
// Checkpoint, WaitFor and Reset are not for folds and report ErrInvalid.
// An Overlay is used by one goroutine.
type Overlay struct {
	base    Store
	docs    map[string]overlayDoc
	dirty   []string // keys written, in first-write order
	indexes map[string]*overlayIndex
	idxOps  []string // indexes written, in first-write order
}

type overlayDoc struct {
	value   []byte
	present bool
	written bool
}

// overlayIndex is an index as the fold sees it. Until something ranges or
// counts it, only the writes are kept (members' final state); a read loads
// the base index once and the writes are replayed on it.
type overlayIndex struct {
	loaded  *memIndex
	final   map[string]overlayMember
	order   []string
	written bool
}

type overlayMember struct {
	present bool
	score   float64
}

var _ Store = (*Overlay)(nil)

// NewOverlay starts a fold over base.
func NewOverlay(base Store) *Overlay {
	return &Overlay{base: base, docs: map[string]overlayDoc{}, indexes: map[string]*overlayIndex{}}
}

// Empty reports whether nothing has been staged.
func (o *Overlay) Empty() bool { return len(o.dirty) == 0 && len(o.idxOps) == 0 }

// Apply stages b as if it were applied: deletes before puts, index
// removals before additions, as Store.Apply does.
func (o *Overlay) Apply(_ context.Context, b Batch) (bool, error) {
	b.Projection, b.Sequence, b.Conditional = "overlay", 1, false
	if err := b.validate(); err != nil {
		return false, err
	}
	for _, key := range b.Deletes {
		o.write(key, nil, false)
	}
	for _, kv := range b.Puts {
		o.write(kv.Key, clone(kv.Value), true)
	}
	for _, e := range b.IndexRemoves {
		o.index(e.Index).set(e.Member, overlayMember{})
	}
	for _, e := range b.IndexAdds {
		o.index(e.Index).set(e.Member, overlayMember{present: true, score: e.Score})
	}
	return true, nil
}

func (o *Overlay) write(key string, value []byte, present bool) {
	if d, ok := o.docs[key]; !ok || !d.written {
		o.dirty = append(o.dirty, key)
	}
	o.docs[key] = overlayDoc{value: value, present: present, written: true}
}

func (o *Overlay) index(name string) *overlayIndex {
	ix := o.indexes[name]
	if ix == nil {
		ix = &overlayIndex{final: map[string]overlayMember{}}
		o.indexes[name] = ix
	}
	if !ix.written {
		ix.written = true
		o.idxOps = append(o.idxOps, name)
	}
	return ix
}

func (ix *overlayIndex) set(member string, m overlayMember) {
	if _, ok := ix.final[member]; !ok {
		ix.order = append(ix.order, member)
	}
	ix.final[member] = m
	if ix.loaded != nil {
		apply(ix.loaded, member, m)
	}
}

func apply(ix *memIndex, member string, m overlayMember) {
	if m.present {
		ix.add(member, m.score)
	} else {
		ix.remove(member)
	}
}

// Batch returns everything staged as one batch for projection at sequence
// seq: each written key's final value (or its deletion), each written index
// member's final score (or its removal).
func (o *Overlay) Batch(projection string, seq uint64) Batch {
	b := Batch{Projection: projection, Sequence: seq}
	for _, key := range o.dirty {
		d := o.docs[key]
		if d.present {
			b.Puts = append(b.Puts, KV{Key: key, Value: d.value})
		} else {
			b.Deletes = append(b.Deletes, key)
		}
	}
	for _, name := range o.idxOps {
		ix := o.indexes[name]
		for _, member := range ix.order {
			m := ix.final[member]
			e := IndexEntry{Index: name, Member: member, Score: m.score}
			if m.present {
				b.IndexAdds = append(b.IndexAdds, e)
			} else {
				b.IndexRemoves = append(b.IndexRemoves, e)
			}
		}
	}
	return b
}

// Get implements Store.
func (o *Overlay) Get(ctx context.Context, key string) ([]byte, error) {
	d, err := o.doc(ctx, key)
	if err != nil {
		return nil, err
	}
	if !d.present {
		return nil, ErrNotFound
	}
	return clone(d.value), nil
}

func (o *Overlay) doc(ctx context.Context, key string) (overlayDoc, error) {
	if d, ok := o.docs[key]; ok {
		return d, nil
	}
	v, err := o.base.Get(ctx, key)
	switch {
	case err == nil:
		d := overlayDoc{value: v, present: true}
		o.docs[key] = d
		return d, nil
	case errors.Is(err, ErrNotFound):
		o.docs[key] = overlayDoc{}
		return overlayDoc{}, nil
	default:
		return overlayDoc{}, err
	}
}

// GetMany implements Store; keys not yet seen are read from the base in one
// call.
func (o *Overlay) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	var missing []string
	for _, key := range keys {
		if _, ok := o.docs[key]; !ok && !slices.Contains(missing, key) {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		vals, err := o.base.GetMany(ctx, missing...)
		if err != nil {
			return nil, err
		}
		for i, key := range missing {
			o.docs[key] = overlayDoc{value: vals[i], present: vals[i] != nil}
		}
	}
	out := make([][]byte, len(keys))
	for i, key := range keys {
		if d := o.docs[key]; d.present {
			out[i] = clone(d.value)
		}
	}
	return out, nil
}

func (o *Overlay) loadIndex(ctx context.Context, name string) (*memIndex, error) {
	ix := o.indexes[name]
	if ix == nil {
		ix = &overlayIndex{final: map[string]overlayMember{}}
		o.indexes[name] = ix
	}
	if ix.loaded != nil {
		return ix.loaded, nil
	}
	entries, err := o.base.Range(ctx, name, RangeQuery{})
	if err != nil {
		return nil, err
	}
	loaded := &memIndex{scores: make(map[string]float64, len(entries))}
	for _, e := range entries {
		loaded.add(e.Member, e.Score)
	}
	for _, member := range ix.order {
		apply(loaded, member, ix.final[member])
	}
	ix.loaded = loaded
	return loaded, nil
}

// Range implements Store. The first read of an index loads it whole from
// the base: folds range over small indexes (a turn's processes).
func (o *Overlay) Range(ctx context.Context, index string, q RangeQuery) ([]IndexEntry, error) {
	if _, _, err := q.bounds(); err != nil {
		return nil, err
	}
	ix, err := o.loadIndex(ctx, index)
	if err != nil {
		return nil, err
	}
	return rangeIndex(ix, index, q)
}

// Count implements Store.
func (o *Overlay) Count(ctx context.Context, index string) (int64, error) {
	ix, err := o.loadIndex(ctx, index)
	if err != nil {
		return 0, err
	}
	return int64(len(ix.entries)), nil
}

// Checkpoint is not part of a fold.
func (o *Overlay) Checkpoint(context.Context, string) (uint64, error) {
	return 0, fmt.Errorf("%w: an overlay has no checkpoint", ErrInvalid)
}

// WaitFor is not part of a fold.
func (o *Overlay) WaitFor(context.Context, string, uint64) (uint64, error) {
	return 0, fmt.Errorf("%w: an overlay has no checkpoint", ErrInvalid)
}

// Reset is not part of a fold.
func (o *Overlay) Reset(context.Context) error {
	return fmt.Errorf("%w: an overlay cannot be reset", ErrInvalid)
}

// Close does nothing: the base belongs to the caller.
func (o *Overlay) Close() error { return nil }
