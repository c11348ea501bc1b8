// The model registry: held per tenant, imported from configuration, read
// and changed through the log.

package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/fault"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	"github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	rv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/routing/domain"
	"github.com/agentruntime/agentruntime/services/routing/readmodel"
)

// registries holds decoded registries per tenant. A generation per tenant
// keeps a read that started before a change from caching what it read.
// The registries are shared: callers must not modify them.
type registries struct {
	mu       sync.Mutex
	byTenant map[string]*eventsv1.Registry
	gen      map[string]uint64
}

// maxHeldRegistries bounds the registries held; past it the holder starts
// over (tenants reload on their next call).
const maxHeldRegistries = 10_000

// generation is the tenant's generation now: take it before a read or a
// write whose registry is then put.
func (r *registries) generation(tenant string) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen[tenant]
}

func (r *registries) get(tenant string) (*eventsv1.Registry, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byTenant[tenant], r.gen[tenant]
}

func (r *registries) put(tenant string, gen uint64, reg *eventsv1.Registry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen[tenant] != gen {
		return
	}
	if len(r.byTenant) >= maxHeldRegistries {
		clear(r.byTenant)
	}
	r.byTenant[tenant] = reg
}

func (r *registries) forget(tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen[tenant]++
	delete(r.byTenant, tenant)
}

// registry returns the tenant's registry (shared, read-only), importing the
// config file first when the tenant has not imported this version of it.
// It is held in process after the first read or write and read again after
// the projector applies a change to it (Applied): this process's own
// changes count at once, another replica's once the projector has them.
func (a *App) registry(ctx context.Context, tenant string) (*eventsv1.Registry, error) {
	if a.config != nil {
		if imp, ok := a.seeded.Load(tenant); !ok || imp.(imported).digest != a.config.GetConfigDigest() {
			gen := a.held.generation(tenant)
			res, err := a.w.Execute(ctx, registryAgg(tenant), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
				reg, err := readmodel.LoadRegistry(ctx, st, tenant)
				if err != nil || reg.GetConfigDigest() == a.config.GetConfigDigest() {
					return nil, err
				}
				return []*eventsv1.RuntimeEvent{domain.ConfigImported(tenant, a.config)}, nil
			})
			if err != nil {
				return nil, err
			}
			next, err := readmodel.LoadRegistry(ctx, res.State, tenant)
			if err != nil {
				return nil, err
			}
			a.held.put(tenant, gen, next)
			a.seeded.Store(tenant, imported{digest: a.config.GetConfigDigest(), sequence: res.Sequence})
		}
	}
	reg, gen := a.held.get(tenant)
	if reg != nil {
		return reg, nil
	}
	reg, err := readmodel.LoadRegistry(ctx, a.store, tenant)
	if err != nil {
		return nil, err
	}
	a.held.put(tenant, gen, reg)
	return reg, nil
}

// importedAt is the sequence the tenant's import of the config file
// reached in this process (0: none): a read of the registry waits for it.
func (a *App) importedAt(tenant string) uint64 {
	if imp, ok := a.seeded.Load(tenant); ok {
		return imp.(imported).sequence
	}
	return 0
}

// GetModelRegistry reads the tenant's registry.
func (a *App) GetModelRegistry(ctx context.Context, tenant string, req *rv1.GetModelRegistryRequest) (*rv1.GetModelRegistryResponse, error) {
	if _, err := a.registry(ctx, tenant); err != nil {
		return nil, err
	}
	// A read: the read model, at least as recent as the caller's
	// min_sequence and this process's import of the config file. The
	// registry is session-less and a caller's token may be of a session:
	// two positions of two partitions, not ordered, each waited for in its
	// own. The answer's sequence is the registry's partition's checkpoint.
	for _, pos := range []uint64{req.GetMinSequence(), a.importedAt(tenant)} {
		if pos == 0 {
			continue
		}
		if _, err := projector.WaitFor(ctx, a.log, a.store, readmodel.Name, pos, readTimeout); err != nil {
			return nil, err
		}
	}
	seq, err := projector.Checkpoint(ctx, a.log.Of(tenant, ""), a.store, readmodel.Name)
	if err != nil {
		return nil, err
	}
	reg, err := readmodel.LoadRegistry(ctx, a.store, tenant)
	if err != nil {
		return nil, err
	}
	return &rv1.GetModelRegistryResponse{Registry: reg, Sequence: seq}, nil
}

// UpdateRegistry applies changes in order, all or none: each is one
// limit.changed fact, appended together after every one was validated on
// the registry the previous ones produce.
func (a *App) UpdateRegistry(ctx context.Context, tenant, subject string, changes []*eventsv1.LimitChanged) (*eventsv1.Registry, *commonv1.WriteResult, error) {
	if _, err := a.registry(ctx, tenant); err != nil {
		return nil, nil, err
	}
	var next *eventsv1.Registry
	gen := a.held.generation(tenant)
	res, err := a.w.Execute(ctx, registryAgg(tenant), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		reg, err := readmodel.LoadRegistry(ctx, st, tenant)
		if err != nil {
			return nil, err
		}
		var evs []*eventsv1.RuntimeEvent
		for i, c := range changes {
			c.Source, c.ChangedBy = "rpc", subject
			if reg, err = domain.Apply(reg, c); err != nil {
				if de, ok := fault.As(err); ok && de.Kind == fault.KindInvalid {
					return nil, de.Under(fmt.Sprintf("changes[%d]", i))
				}
				return nil, err
			}
			evs = append(evs, domain.LimitChanged(c))
		}
		next = reg
		return evs, nil
	})
	if err != nil {
		return nil, nil, err
	}
	// Limits and decisions of this process use the new registry at once;
	// a change the projector applied meanwhile (Applied) leaves the next
	// call to read the read model instead.
	a.held.put(tenant, gen, next)
	return next, res.Write(), nil
}
