package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// Generations of one Redis namespace (docs/upgrading.md):
//
//   - "ar:{<namespace>}:generations" is a hash of every generation built
//     in the namespace (ID -> label), registered when a process of it
//     starts;
//   - "ar:{<namespace>}:active" names the generation whose read models are
//     complete: set once, atomically, by the first process of a generation
//     that caught up with the log; "ar:{<namespace>}:previous" names the
//     one it replaced (kept for a rollback and for the processes of the
//     old binary still serving from it);
//   - LegacyGeneration stands for the keys written before generations
//     existed (NewRedis's layout: "doc:", "idx:", "ckpt:" right under the
//     namespace).
//
// Retire deletes every generation but the active and the previous one:
// a generation is deleted when a second upgrade after it has switched.

// LegacyGeneration is the ID of the read models written before stores had
// generations.
const LegacyGeneration = "legacy"

func (r *Redis) generationsKey() string { return r.prefix + "generations" }
func (r *Redis) activeKey() string      { return r.prefix + "active" }
func (r *Redis) previousKey() string    { return r.prefix + "previous" }

// Generation is the store's generation (zero for a store of NewRedis).
func (r *Redis) Generation() Generation { return r.gen }

// registerScript: KEYS are the generations hash and the active key; ARGV
// the generation's ID and label. The first generation registered in a
// namespace with no active one also registers the legacy layout, which
// the release before generations may have written.
var registerScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], '` + LegacyGeneration + `', 'before fold versions')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// Register records the store's generation in its namespace and answers
// the active generation: LegacyGeneration when none was ever activated.
func (r *Redis) Register(ctx context.Context) (active string, err error) {
	if err := r.generational(); err != nil {
		return "", err
	}
	if err := registerScript.Run(ctx, r.client, []string{r.generationsKey(), r.activeKey()}, r.gen.ID, r.gen.Label()).Err(); err != nil {
		return "", fmt.Errorf("projection: register generation %s: %w", r.gen, err)
	}
	return r.ActiveGeneration(ctx)
}

// ActiveGeneration answers the namespace's active generation:
// LegacyGeneration when none was ever activated.
func (r *Redis) ActiveGeneration(ctx context.Context) (string, error) {
	if r.isClosed() {
		return "", ErrClosed
	}
	id, err := r.client.Get(ctx, r.activeKey()).Result()
	if errors.Is(err, redis.Nil) {
		return LegacyGeneration, nil
	}
	if err != nil {
		return "", fmt.Errorf("projection: active generation: %w", err)
	}
	return id, nil
}

// activateScript: KEYS are the active, previous and generations keys;
// ARGV the generation's ID and label. It answers the previous generation.
var activateScript = redis.NewScript(`
local current = redis.call('GET', KEYS[1]) or '` + LegacyGeneration + `'
if current ~= ARGV[1] then
  redis.call('SET', KEYS[2], current)
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
end
return redis.call('GET', KEYS[2]) or ''
`)

// Activate makes the store's generation the namespace's active one, in
// one step, and answers the generation that stays as the previous one.
// Activating the active generation changes nothing.
func (r *Redis) Activate(ctx context.Context) (previous string, err error) {
	if err := r.generational(); err != nil {
		return "", err
	}
	previous, err = activateScript.Run(ctx, r.client, []string{r.activeKey(), r.previousKey(), r.generationsKey()}, r.gen.ID, r.gen.Label()).Text()
	if err != nil {
		return "", fmt.Errorf("projection: activate generation %s: %w", r.gen, err)
	}
	return previous, nil
}

// Retire deletes every generation of the namespace but the active and the
// previous one, and answers the IDs it deleted. A generation's checkpoints
// go first, as in Reset. The legacy layout's checkpoints are those of the
// store's generation's projections (the names a fold version did not
// change); its documents and indexes are every "doc:" and "idx:" key.
func (r *Redis) Retire(ctx context.Context) ([]string, error) {
	if err := r.generational(); err != nil {
		return nil, err
	}
	keep, err := r.client.MGet(ctx, r.activeKey(), r.previousKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("projection: retire generations: %w", err)
	}
	if keep[0] == nil {
		// Nothing is active yet: nothing is safe to delete.
		return nil, nil
	}
	ids, err := r.client.HKeys(ctx, r.generationsKey()).Result()
	if err != nil {
		return nil, fmt.Errorf("projection: retire generations: %w", err)
	}
	node, err := r.namespaceNode(ctx)
	if err != nil {
		return nil, err
	}
	var retired []string
	for _, id := range ids {
		if slices.Contains(keep, any(id)) {
			continue
		}
		if err := r.deleteGeneration(ctx, node, id); err != nil {
			return retired, fmt.Errorf("projection: retire generation %s: %w", id, err)
		}
		if err := r.client.HDel(ctx, r.generationsKey(), id).Err(); err != nil {
			return retired, fmt.Errorf("projection: retire generation %s: %w", id, err)
		}
		retired = append(retired, id)
	}
	return retired, nil
}

func (r *Redis) deleteGeneration(ctx context.Context, node redis.Cmdable, id string) error {
	ns := globEscape(r.prefix)
	var matches []string
	if id == LegacyGeneration {
		for _, f := range r.gen.folds {
			name := globEscape(f.Name)
			matches = append(matches, ns+"ckpt:"+name, ns+"ckpt:"+name+"@p*")
		}
		matches = append(matches, ns+"doc:*", ns+"idx:*")
	} else {
		g := ns + globEscape(id) + ":"
		matches = append(matches, g+"ckpt:*", g+"*")
	}
	for _, match := range matches {
		if err := deleteMatching(ctx, node, match); err != nil {
			return err
		}
	}
	return nil
}

func (r *Redis) generational() error {
	if r.gen.ID == "" {
		return fmt.Errorf("%w: store has no generation (NewRedisGeneration)", ErrInvalid)
	}
	if r.isClosed() {
		return ErrClosed
	}
	return nil
}
