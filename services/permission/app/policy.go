// Package app holds the permission service's use cases. Commands decide
// on the aggregate as this process's writer holds it (command.Writer: the
// policy level, evaluation, hook run or permission request folded from its
// own subject by the read model's own fold), append with its expected
// sequence and answer from the decision; no command waits for the read
// model. Reads come from the read model (services/permission/readmodel)
// and wait for min_sequence (docs/architecture.md, "The write path";
// docs/adr/0005-hot-path.md).
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	commonv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/common/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	"github.com/agentruntime/agentruntime/services/permission/readmodel"
)

// App is the permission service's use cases.
type App struct {
	log   *eventlog.Log
	store projection.Store
	// policies holds the policy levels (tenant, workspace, session,
	// thread aggregates) that policy commands decide on and that
	// evaluations consult (policyLevels).
	policies *command.Writer
	// requests holds the aggregates a request creates and writes alone:
	// evaluations, hook runs and permission requests (which Resolve
	// decides on later). Apart from policies, so a stream of evaluations
	// does not evict the policy levels every evaluation reads.
	requests *command.Writer
	hooks    HookCaller
	// hookHosts are the hosts RegisterHook lets a target name; nil: any.
	hookHosts *domain.HookHosts
	now       func() time.Time
	logger    *slog.Logger
	// CatchUp bounds a read's wait for min_sequence.
	catchUp time.Duration
}

// Config of an App.
type Config struct {
	Log    *eventlog.Log
	Store  projection.Store
	Hooks  HookCaller
	Logger *slog.Logger
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// HookHosts are the hosts a hook's target may name; nil allows any.
	HookHosts *domain.HookHosts
}

// New builds the use cases.
func New(cfg Config) *App {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &App{
		log: cfg.Log, store: cfg.Store, hooks: cfg.Hooks, now: cfg.Now, logger: cfg.Logger, catchUp: 5 * time.Second, hookHosts: cfg.HookHosts,
		policies: command.NewWriter(cfg.Log, readmodel.New(cfg.Log.Subjects), command.Options{}),
		requests: command.NewWriter(cfg.Log, readmodel.New(cfg.Log.Subjects), command.Options{CacheSize: requestCacheSize}),
	}
}

// requestCacheSize bounds the requests writer: an evaluation or hook run
// is written within one call; a permission request is decided on again
// when answered, and reloaded from its subject if it was evicted.
const requestCacheSize = 1024

// Instrument records the command path's metrics (conflict retries) on mp.
func (a *App) Instrument(mp metric.MeterProvider) error {
	return errors.Join(a.policies.Instrument(mp), a.requests.Instrument(mp))
}

// Projection returns the read model to run with projector.Run.
func (a *App) Projection() *readmodel.Projection { return readmodel.New(a.log.Subjects) }

// waitFor is read-your-writes for reads that carry min_sequence.
func (a *App) waitFor(ctx context.Context, seq uint64) (uint64, error) {
	return projector.WaitFor(ctx, a.log, a.store, readmodel.Name, seq, a.catchUp)
}

// levelIn reads a policy level from st: the read model, or a level's
// aggregate as the writer holds it (its hooks too: they are the tenant
// level's).
func levelIn(ctx context.Context, st projection.Store, tenant string, s Scope) (*domain.Level, error) {
	state := &permissionv1.LevelState{}
	raw, err := st.Get(ctx, readmodel.LevelKey(tenant, s))
	switch {
	case errors.Is(err, projection.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if err := proto.Unmarshal(raw, state); err != nil {
			return nil, err
		}
	}
	l := readmodel.LevelFromState(state)
	l.Level, l.ScopeID = s.Level, s.ID()
	if s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_TENANT {
		hooks, err := hookListIn(ctx, st, tenant)
		if err != nil {
			return nil, err
		}
		l.Hooks = hooks.GetHooks()
	}
	return l, nil
}

func hookListIn(ctx context.Context, st projection.Store, tenant string) (*permissionv1.ListHooksResponse, error) {
	hooks := &permissionv1.ListHooksResponse{}
	raw, err := st.Get(ctx, readmodel.HooksKey(tenant))
	if errors.Is(err, projection.ErrNotFound) {
		return hooks, nil
	}
	if err != nil {
		return nil, err
	}
	return hooks, proto.Unmarshal(raw, hooks)
}

// Scope is where a policy lives.
type Scope = readmodel.Scope

// scopesOf lists the policy levels that apply to a target, least
// specific first.
func scopesOf(workspace, session, thread string) []Scope {
	scopes := []Scope{{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT}}
	if workspace != "" {
		scopes = append(scopes, Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_WORKSPACE, WorkspaceID: workspace})
	}
	if session != "" {
		scopes = append(scopes, Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_SESSION, SessionID: session})
		if thread != "" {
			scopes = append(scopes, Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_THREAD, SessionID: session, ThreadID: thread})
		}
	}
	return scopes
}

// levels returns the levels that apply to a target as the read model
// holds them, least specific first (nil entries for levels the target
// does not name).
func (a *App) levels(ctx context.Context, tenant, workspace, session, thread string) ([]*domain.Level, error) {
	return levelsFrom(ctx, tenant, workspace, session, thread, func(Scope) projection.Store { return a.store })
}

// policyLevels are the levels a decision consults (an evaluation, a run
// of hooks): a policy is an input of those commands, not an invariant of
// the aggregate they write, so it is not read from the log on every
// call. Each level is the newer of two sources, neither waited for: the
// writer's entry of the level's aggregate when this process wrote or
// loaded it after the read model's checkpoint of the level's partition
// (its own policy writes count at once, before its projector applies
// them), else the read model, which follows every replica's writes (a
// write elsewhere counts as soon as this process's projector has it; a
// caller that must see it passes the sequence it was given as
// min_sequence, and the decision waited for it: waitCheckpoints).
// Positions of different partitions are not ordered, so an entry is
// compared with its own partition's checkpoint: the tenant and workspace
// levels are session-less, the session and thread levels the session's.
func (a *App) policyLevels(ctx context.Context, tenant, workspace, session, thread string, cps checkpoints) ([]*domain.Level, error) {
	states := map[Scope]projection.Store{}
	for _, s := range scopesOf(workspace, session, thread) {
		states[s] = a.store
		agg := s.Aggregate(tenant)
		st, ok := a.policies.Held(agg)
		if !ok {
			continue
		}
		cp, err := a.checkpointOf(ctx, cps, tenant, agg.Session)
		if err != nil {
			return nil, err
		}
		if st.Last > cp {
			states[s] = st
		}
	}
	return levelsFrom(ctx, tenant, workspace, session, thread, func(s Scope) projection.Store { return states[s] })
}

// checkpoints are the read model's checkpoints a decision has read, by
// partition.
type checkpoints map[int]uint64

// waitCheckpoints is waitFor for a decision: it waits for min_sequence in
// its partition and keeps the checkpoint reached as that partition's (the
// log's, with one partition); with none at P > 1 it knows none yet.
func (a *App) waitCheckpoints(ctx context.Context, minSequence uint64) (checkpoints, error) {
	cp, err := a.waitFor(ctx, minSequence)
	if err != nil {
		return nil, err
	}
	cps := checkpoints{}
	if k := a.log.PartitionOfPosition(minSequence); k >= 0 {
		cps[k] = cp
	}
	return cps, nil
}

// checkpointOf is the read model's checkpoint of the partition of a
// tenant's session (NoSession: its session-less facts), read once per
// decision.
func (a *App) checkpointOf(ctx context.Context, cps checkpoints, tenant, session string) (uint64, error) {
	k := a.log.Subjects.PartitionOf(tenant, session)
	if cp, ok := cps[k]; ok {
		return cp, nil
	}
	cp, err := projector.Checkpoint(ctx, a.log.Of(tenant, session), a.store, readmodel.Name)
	if err != nil {
		return 0, err
	}
	cps[k] = cp
	return cp, nil
}

// currentLevels are the levels as the log holds them now: each level's
// entry caught up from its subject (one batch get when warm), for a
// snapshot that must hold a profile set just before on any replica.
func (a *App) currentLevels(ctx context.Context, tenant, workspace, session, thread string) ([]*domain.Level, error) {
	states := map[Scope]projection.Store{}
	for _, s := range scopesOf(workspace, session, thread) {
		st, err := a.policies.Refresh(ctx, s.Aggregate(tenant))
		if err != nil {
			return nil, err
		}
		states[s] = st
	}
	return levelsFrom(ctx, tenant, workspace, session, thread, func(s Scope) projection.Store { return states[s] })
}

func levelsFrom(ctx context.Context, tenant, workspace, session, thread string, from func(Scope) projection.Store) ([]*domain.Level, error) {
	scopes := scopesOf(workspace, session, thread)
	out := make([]*domain.Level, 0, len(scopes))
	for _, s := range scopes {
		l, err := levelIn(ctx, from(s), tenant, s)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// State is the permission state of a target.
type State struct {
	Policy   domain.Policy
	Levels   []*permissionv1.LevelState
	Sequence uint64
}

// PermissionState answers GetPermissionState and GetSandboxProfile.
func (a *App) PermissionState(ctx context.Context, tenant, workspace, session, thread string, minSequence uint64) (State, error) {
	// The answer's position is the session's partition's (the tenant's
	// session-less partition without a session).
	seq, err := projector.WaitForSession(ctx, a.log, a.store, readmodel.Name, tenant, session, minSequence, a.catchUp)
	if err != nil {
		return State{}, err
	}
	levels, err := a.levels(ctx, tenant, workspace, session, thread)
	if err != nil {
		return State{}, err
	}
	st := State{Policy: domain.Effective(levels...), Sequence: seq}
	for _, l := range levels {
		s := Scope{Level: l.Level, WorkspaceID: workspace, SessionID: session, ThreadID: thread}
		st.Levels = append(st.Levels, readmodel.StateFromLevel(l, s))
	}
	return st, nil
}

// changePolicy runs a policy command on a level as the writer holds it:
// decide, append policy.changed at the level's expected sequence (a
// conflict: another replica changed the level; the writer catches up and
// decides again), answer from the decision.
func (a *App) changePolicy(ctx context.Context, tenant, subject, reason string, s Scope, decide func(*domain.Level) (*eventsv1.PolicyChanged, error)) (*commonv1.WriteResult, error) {
	res, err := a.policies.Execute(ctx, s.Aggregate(tenant), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		l, err := levelIn(ctx, st, tenant, s)
		if err != nil {
			return nil, err
		}
		pc, err := decide(l)
		if err != nil || pc == nil {
			return nil, err
		}
		pc.Level, pc.ScopeId, pc.ChangedBy, pc.Reason = s.Level, s.ID(), subject, reason
		return []*eventsv1.RuntimeEvent{domain.PolicyChanged(sessionOf(s), s.ThreadID, pc)}, nil
	})
	if err != nil {
		return nil, err
	}
	return res.Write(), nil
}

func sessionOf(s Scope) string {
	if s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_SESSION || s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_THREAD {
		return s.SessionID
	}
	return ""
}

// ScopeOf is the policy level a request names.
func ScopeOf(s *permissionv1.PolicyScope) Scope {
	return Scope{Level: s.GetLevel(), WorkspaceID: s.GetWorkspaceId(), SessionID: s.GetSessionId(), ThreadID: s.GetThreadId()}
}

// The policy commands take the caller and their request and answer their
// response, the shape kit.Call runs: each is one decision of the domain on
// the level's aggregate (changePolicy).

// SetMode sets a level's mode and interactivity.
func (a *App) SetMode(ctx context.Context, p auth.Principal, req *permissionv1.SetPermissionModeRequest) (*permissionv1.SetPermissionModeResponse, error) {
	w, err := a.changePolicy(ctx, p.Tenant, p.Subject, req.GetReason(), ScopeOf(req.GetScope()), func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		return domain.DecideSetMode(l, req.GetMode(), req.GetInteractive()), nil
	})
	if err != nil {
		return nil, err
	}
	return &permissionv1.SetPermissionModeResponse{Write: w}, nil
}

// PutRules replaces a level's rules and answers them as stored.
func (a *App) PutRules(ctx context.Context, p auth.Principal, req *permissionv1.PutRulesRequest) (*permissionv1.PutRulesResponse, error) {
	var stored []*eventsv1.PermissionRule
	w, err := a.changePolicy(ctx, p.Tenant, p.Subject, req.GetReason(), ScopeOf(req.GetScope()), func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecidePutRules(l, req.GetRules())
		stored = out
		return pc, err
	})
	if err != nil {
		return nil, err
	}
	return &permissionv1.PutRulesResponse{Rules: stored, Write: w}, nil
}

// SetSandbox sets a level's sandbox profile.
func (a *App) SetSandbox(ctx context.Context, p auth.Principal, req *permissionv1.SetSandboxProfileRequest) (*permissionv1.SetSandboxProfileResponse, error) {
	var stored *eventsv1.SandboxProfile
	w, err := a.changePolicy(ctx, p.Tenant, p.Subject, req.GetReason(), ScopeOf(req.GetScope()), func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecideSetSandbox(l, req.GetProfile())
		stored = out
		return pc, err
	})
	if err != nil {
		return nil, err
	}
	return &permissionv1.SetSandboxProfileResponse{Profile: stored, Write: w}, nil
}

var tenantScope = Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT}

// RegisterHook adds a hook to the tenant's registry.
func (a *App) RegisterHook(ctx context.Context, p auth.Principal, req *permissionv1.RegisterHookRequest) (*permissionv1.RegisterHookResponse, error) {
	var stored *eventsv1.Hook
	w, err := a.changePolicy(ctx, p.Tenant, p.Subject, "hook registered", tenantScope, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecideRegisterHook(l, req.GetHook(), a.hookHosts)
		stored = out
		return pc, err
	})
	if err != nil {
		return nil, err
	}
	return &permissionv1.RegisterHookResponse{Hook: stored, Write: w}, nil
}

// RemoveHook removes a hook from the tenant's registry.
func (a *App) RemoveHook(ctx context.Context, p auth.Principal, req *permissionv1.RemoveHookRequest) (*permissionv1.RemoveHookResponse, error) {
	w, err := a.changePolicy(ctx, p.Tenant, p.Subject, "hook removed", tenantScope, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		return domain.DecideRemoveHook(l, req.GetHookId())
	})
	if err != nil {
		return nil, err
	}
	return &permissionv1.RemoveHookResponse{Write: w}, nil
}

// ListHooks lists the tenant's hooks, optionally for one point.
func (a *App) ListHooks(ctx context.Context, tenant string, point eventsv1.HookPoint, minSequence uint64) ([]*eventsv1.Hook, uint64, error) {
	seq, err := a.waitFor(ctx, minSequence)
	if err != nil {
		return nil, 0, err
	}
	list, err := hookListIn(ctx, a.store, tenant)
	if err != nil {
		return nil, 0, err
	}
	var out []*eventsv1.Hook
	for _, h := range list.GetHooks() {
		if point == eventsv1.HookPoint_HOOK_POINT_UNSPECIFIED || h.GetPoint() == point {
			out = append(out, h)
		}
	}
	return out, seq, nil
}
