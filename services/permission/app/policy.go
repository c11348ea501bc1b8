// Package app holds the permission service's use cases: the domain's
// decisions joined to the event log (appends with optimistic concurrency)
// and to the service's read model (services/permission/projector).
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/permission/domain"
	rm "github.com/agentruntime/agentruntime/services/permission/projector"
)

// App is the permission service's use cases.
type App struct {
	log    *eventlog.Log
	store  projection.Store
	exec   command.Executor
	hooks  HookCaller
	now    func() time.Time
	logger *slog.Logger
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
		log: cfg.Log, store: cfg.Store, hooks: cfg.Hooks, now: cfg.Now, logger: cfg.Logger, catchUp: 5 * time.Second,
		exec: command.Executor{Log: cfg.Log, Store: cfg.Store, Projection: rm.Name},
	}
}

// Projection returns the read model to run with projector.Run.
func (a *App) Projection() *rm.Projection { return rm.New(a.log.Subjects) }

// Write is what a command appended.
type Write struct {
	Sequence     uint64
	EventIDs     []string
	Deduplicated bool
}

func writeOf(r command.Result) Write {
	w := Write{Sequence: r.Sequence, Deduplicated: len(r.Appended) == 0}
	for _, a := range r.Appended {
		w.EventIDs = append(w.EventIDs, a.EventID)
	}
	return w
}

// waitFor is read-your-writes for reads that carry min_sequence.
func (a *App) waitFor(ctx context.Context, seq uint64) (uint64, error) {
	return projector.WaitFor(ctx, a.store, rm.Name, seq, a.catchUp)
}

func (a *App) level(ctx context.Context, tenant string, s Scope) (*domain.Level, error) {
	state := &permissionv1.LevelState{}
	raw, err := a.store.Get(ctx, rm.LevelKey(tenant, s))
	switch {
	case errors.Is(err, projection.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		if err := proto.Unmarshal(raw, state); err != nil {
			return nil, err
		}
	}
	l := rm.LevelFromState(state)
	l.Level, l.ScopeID = s.Level, s.ID()
	if s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_TENANT {
		hooks, err := a.hookList(ctx, tenant)
		if err != nil {
			return nil, err
		}
		l.Hooks = hooks.GetHooks()
	}
	return l, nil
}

func (a *App) hookList(ctx context.Context, tenant string) (*permissionv1.ListHooksResponse, error) {
	hooks := &permissionv1.ListHooksResponse{}
	raw, err := a.store.Get(ctx, rm.HooksKey(tenant))
	if errors.Is(err, projection.ErrNotFound) {
		return hooks, nil
	}
	if err != nil {
		return nil, err
	}
	return hooks, proto.Unmarshal(raw, hooks)
}

// Scope is where a policy lives.
type Scope = rm.Scope

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

// awaitPolicy waits until the read model has applied the latest policy
// change of every level that applies to a target, for writes that carry
// the policy but whose request has no min_sequence to wait for.
func (a *App) awaitPolicy(ctx context.Context, tenant, workspace, session, thread string) error {
	var last uint64
	for _, s := range scopesOf(workspace, session, thread) {
		seq, err := a.log.LastSequence(ctx, s.Aggregate(tenant))
		if err != nil {
			return err
		}
		last = max(last, seq)
	}
	_, err := a.waitFor(ctx, last)
	return err
}

// Levels returns the levels that apply to a target, least specific first
// (nil entries for levels the target does not name).
func (a *App) levels(ctx context.Context, tenant, workspace, session, thread string) ([]*domain.Level, error) {
	scopes := scopesOf(workspace, session, thread)
	out := make([]*domain.Level, 0, len(scopes))
	for _, s := range scopes {
		l, err := a.level(ctx, tenant, s)
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
	seq, err := a.waitFor(ctx, minSequence)
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
		st.Levels = append(st.Levels, rm.StateFromLevel(l, s))
	}
	return st, nil
}

// changePolicy runs a policy command on a level: load, decide, append
// policy.changed.
func (a *App) changePolicy(ctx context.Context, tenant, subject, reason string, s Scope, decide func(*domain.Level) (*eventsv1.PolicyChanged, error)) (Write, error) {
	res, err := a.exec.Execute(ctx, s.Aggregate(tenant), func(ctx context.Context, _ uint64) ([]*eventsv1.RuntimeEvent, error) {
		l, err := a.level(ctx, tenant, s)
		if err != nil {
			return nil, err
		}
		pc, err := decide(l)
		if err != nil || pc == nil {
			return nil, err
		}
		pc.Level, pc.ScopeId, pc.ChangedBy, pc.Reason = s.Level, s.ID(), subject, reason
		return []*eventsv1.RuntimeEvent{{Type: "policy.changed", SessionId: sessionOf(s), ThreadId: s.ThreadID,
			Payload: &eventsv1.RuntimeEvent_PolicyChanged{PolicyChanged: pc}}}, nil
	})
	if err != nil {
		return Write{}, err
	}
	return writeOf(res), nil
}

func sessionOf(s Scope) string {
	if s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_SESSION || s.Level == eventsv1.PolicyLevel_POLICY_LEVEL_THREAD {
		return s.SessionID
	}
	return ""
}

// SetMode sets a level's mode and interactivity.
func (a *App) SetMode(ctx context.Context, tenant, subject, reason string, s Scope, mode eventsv1.PermissionMode, interactive bool) (Write, error) {
	return a.changePolicy(ctx, tenant, subject, reason, s, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		return domain.DecideSetMode(l, mode, interactive), nil
	})
}

// PutRules replaces a level's rules and returns them as stored.
func (a *App) PutRules(ctx context.Context, tenant, subject, reason string, s Scope, rules []*eventsv1.PermissionRule) ([]*eventsv1.PermissionRule, Write, error) {
	var stored []*eventsv1.PermissionRule
	w, err := a.changePolicy(ctx, tenant, subject, reason, s, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecidePutRules(l, rules)
		stored = out
		return pc, err
	})
	return stored, w, err
}

// SetSandbox sets a level's sandbox profile.
func (a *App) SetSandbox(ctx context.Context, tenant, subject, reason string, s Scope, profile *eventsv1.SandboxProfile) (*eventsv1.SandboxProfile, Write, error) {
	var stored *eventsv1.SandboxProfile
	w, err := a.changePolicy(ctx, tenant, subject, reason, s, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecideSetSandbox(l, profile)
		stored = out
		return pc, err
	})
	return stored, w, err
}

var tenantScope = Scope{Level: eventsv1.PolicyLevel_POLICY_LEVEL_TENANT}

// RegisterHook adds a hook to the tenant's registry.
func (a *App) RegisterHook(ctx context.Context, tenant, subject string, h *eventsv1.Hook) (*eventsv1.Hook, Write, error) {
	var stored *eventsv1.Hook
	w, err := a.changePolicy(ctx, tenant, subject, "hook registered", tenantScope, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		pc, out, err := domain.DecideRegisterHook(l, h)
		stored = out
		return pc, err
	})
	return stored, w, err
}

// RemoveHook removes a hook from the tenant's registry.
func (a *App) RemoveHook(ctx context.Context, tenant, subject, id string) (Write, error) {
	return a.changePolicy(ctx, tenant, subject, "hook removed", tenantScope, func(l *domain.Level) (*eventsv1.PolicyChanged, error) {
		return domain.DecideRemoveHook(l, id)
	})
}

// ListHooks lists the tenant's hooks, optionally for one point.
func (a *App) ListHooks(ctx context.Context, tenant string, point eventsv1.HookPoint, minSequence uint64) ([]*eventsv1.Hook, uint64, error) {
	seq, err := a.waitFor(ctx, minSequence)
	if err != nil {
		return nil, 0, err
	}
	list, err := a.hookList(ctx, tenant)
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
