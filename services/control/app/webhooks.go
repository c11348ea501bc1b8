package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/adapters/webhooks"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// Webhooks are the tenants' webhook subscriptions: their use cases
// (create, list, delete) and the loop that delivers (deliver.go).
type Webhooks struct {
	App *App
	// Sealer seals secrets with the runtime's webhook key; nil: webhooks
	// are off (CreateWebhook answers FailedPrecondition).
	Sealer *webhooks.Sealer
	// Hosts are the hosts a webhook may name; nil allows any.
	Hosts  *hostallow.List
	Sender *webhooks.Sender
	// Leases elect, per partition of the log, the one replica that
	// delivers that partition's events.
	Leases lease.Store
	// LeaseScope prefixes the lease keys: deployments (or tests) sharing
	// one Redis keep apart.
	LeaseScope string
	Retry      domain.WebhookRetry
	// Poll bounds how long the outbox goes unread when nothing wakes the
	// sender (a retry falls due); default 100 ms.
	Poll time.Duration
	// Concurrency bounds the attempts in flight per partition; default 16.
	// PerWebhook bounds those of one subscription (default 4), so a slow
	// receiver holds up only its own deliveries, not every tenant's of the
	// partition.
	Concurrency int
	PerWebhook  int
	Logger      *slog.Logger
	Now         func() time.Time
	// TaskPush makes the body of an A2A push notification (docs/a2a.md,
	// "Push notifications") from its task's events, in log order: the
	// A2A task fold, which lives with the A2A server (pkg/a2a) and is set
	// by the composition. Nil: A2A configs are made, and their
	// deliveries fail.
	TaskPush func(turnID, sessionID, threadID string, evs []*eventsv1.RuntimeEvent) ([]byte, error)
	// A2ARetention is how long an A2A push notification config is kept
	// after its task ended (or after it was made, when later); never less
	// than Retry.MaxAge plus one attempt, so no delivery still owed is
	// cancelled. Default domain.DefaultA2APushRetention.
	A2ARetention time.Duration
	// A2ACollectEvery is how often the holder of a partition looks for
	// configs to collect; default a minute.
	A2ACollectEvery time.Duration
}

// NewWebhooks returns the webhooks of a: off until a Sealer is set.
func NewWebhooks(a *App, leases lease.Store, hosts *hostallow.List, logger *slog.Logger) *Webhooks {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Webhooks{App: a, Hosts: hosts, Sender: webhooks.NewSender(hosts), Leases: leases,
		Retry: domain.DefaultWebhookRetry, Poll: 100 * time.Millisecond, Concurrency: 16, PerWebhook: 4, Logger: logger, Now: time.Now,
		A2ARetention: domain.DefaultA2APushRetention, A2ACollectEvery: time.Minute}
}

func webhookAgg(tenant, session, id string) eventlog.Aggregate {
	if session == "" {
		session = eventlog.NoSession
	}
	return eventlog.Aggregate{Tenant: tenant, Session: session, Kind: "webhook", ID: id}
}

// Create subscribes a URL: the secret is made here, sealed into the log,
// and answered once.
func (w *Webhooks) Create(ctx context.Context, c Caller, req *controlv1.CreateWebhookRequest) (*controlv1.CreateWebhookResponse, error) {
	if w.Sealer == nil {
		return nil, fault.Precondition("WEBHOOKS_DISABLED", "webhooks", "this runtime has no webhook key (--webhook-key-file, AR_WEBHOOK_KEY_FILE): webhooks are off", nil)
	}
	host, port, err := hostallow.HostPort(req.GetUrl())
	if err != nil {
		return nil, fault.Invalid("url", "%s", err.Error())
	}
	if w.Hosts != nil && !w.Hosts.Allows(host, port) {
		return nil, fault.Invalid("url", "host %s:%s is not allowed for webhooks (--hook-allow-hosts, AR_HOOK_ALLOW_HOSTS; see docs/security.md)", host, port)
	}
	if err := domain.CheckWebhookEventTypes(req.GetEventTypes()); err != nil {
		return nil, err
	}
	id := req.GetWebhookId()
	if id != "" && req.GetA2APush() != nil {
		return nil, fault.Invalid("webhook_id", "an A2A push notification config is named by a2a_push.config_id: leave webhook_id empty")
	}
	// The bounds are counted on the read model: it first holds every
	// subscription the tenant made or deleted before this call (a client
	// making configs one after the other meets its bound exactly;
	// concurrent creates may pass it by their number).
	if err := projector.CaughtUp(ctx, w.App.Log.Of(c.Tenant, ""), w.App.Store, readmodel.WebhooksName,
		[]string{readmodel.WebhookSubjects(w.App.Log.Subjects, c.Tenant)}, ReadTimeout); err != nil {
		return nil, err
	}
	// A retried create of a webhook the tenant has is not refused by the
	// bound it counts toward.
	retried := false
	if id != "" {
		_, _, found, err := readmodel.Subscription(ctx, w.App.Store, c.Tenant, id)
		if err != nil {
			return nil, err
		}
		retried = found
	}
	if req.GetA2APush() == nil && !retried {
		live, err := readmodel.Subscriptions(ctx, w.App.Store, c.Tenant)
		if err != nil {
			return nil, err
		}
		if len(live) >= domain.MaxWebhooksPerTenant {
			return nil, fault.Exhausted("WEBHOOKS_PER_TENANT", fmt.Sprintf("a tenant has at most %d webhooks (A2A push notification configs apart); delete one first", domain.MaxWebhooksPerTenant), 0, nil)
		}
	}
	if id == "" {
		id = ids.New(domain.WebhookIDPrefix)
	}
	secret, err := webhooks.NewSecret()
	if err != nil {
		return nil, err
	}
	sealed, err := w.Sealer.Seal(c.Tenant, id, secret)
	if err != nil {
		return nil, err
	}
	sub := &eventsv1.WebhookSubscription{Url: req.GetUrl(), EventTypes: req.GetEventTypes(), SessionIds: req.GetSessionIds(),
		Description: req.GetDescription(), SealedSecret: sealed, KeyId: w.Sealer.KeyID(), CreatedBy: c.Subject}
	if p := req.GetA2APush(); p != nil {
		if sub.A2APush, err = w.a2aPush(ctx, c, id, p, req); err != nil {
			return nil, err
		}
		sub.EventTypes, sub.SessionIds = domain.A2APushEventTypes, []string{sub.A2APush.GetSessionId()}
	}
	// A caller-chosen id may name a webhook made already (the same create
	// retried): decided on the aggregate's own facts, which the append's
	// expected sequence guards.
	var made *eventsv1.RuntimeEvent
	execute := w.App.w.ExecuteNew
	if req.GetWebhookId() != "" {
		execute = w.App.w.Execute
	}
	res, err := execute(ctx, webhookAgg(c.Tenant, "", id), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		ev, _, found, err := readmodel.Subscription(ctx, st, c.Tenant, id)
		if err != nil || found {
			made = ev
			return nil, err
		}
		made = nil
		return []*eventsv1.RuntimeEvent{domain.WebhookCreated(id, host, sub)}, nil
	})
	if err != nil {
		return nil, err
	}
	if made != nil {
		return w.retriedCreate(ctx, c, req, made, res.Sequence)
	}
	// Delivered from its creation on: an event appended after this answer
	// is matched against the subscriptions the read model holds when its
	// partition's fold reaches it, and on a partitioned log the tenant's
	// session-less partition, which folds the creation, may trail that
	// fold. Once the creation is folded, every later event finds it.
	if _, err := projector.WaitFor(ctx, w.App.Log, w.App.Store, readmodel.WebhooksName, res.Sequence, ReadTimeout); err != nil {
		return nil, err
	}
	ev, _, _, err := readmodel.Subscription(ctx, res.State, c.Tenant, id)
	if err != nil {
		return nil, err
	}
	return &controlv1.CreateWebhookResponse{Webhook: w.publicWebhook(c.Tenant, ev), Secret: domain.FormatWebhookSecret(secret), Sequence: res.Sequence}, nil
}

// retriedCreate answers a create whose caller-chosen id names a webhook
// made already: the same definition from the same caller is the same
// create retried (its answer was lost), answered as the first call was,
// secret included; anything else under the id is AlreadyExists. Another
// caller of the tenant, an operator too, is not shown the secret: it
// would let them sign deliveries the receiver takes for the runtime's.
func (w *Webhooks) retriedCreate(ctx context.Context, c Caller, req *controlv1.CreateWebhookRequest, made *eventsv1.RuntimeEvent, seq uint64) (*controlv1.CreateWebhookResponse, error) {
	id := req.GetWebhookId()
	if made.GetType() != events.TypeChannelConnected {
		return nil, fault.AlreadyExists("webhook", id, fmt.Sprintf("webhook %s was deleted: choose another webhook_id", id))
	}
	s := made.GetChannelConnected().GetWebhook()
	if s.GetUrl() != req.GetUrl() || !slices.Equal(s.GetEventTypes(), req.GetEventTypes()) || !slices.Equal(s.GetSessionIds(), req.GetSessionIds()) ||
		s.GetDescription() != req.GetDescription() || s.GetA2APush() != nil {
		return nil, fault.AlreadyExists("webhook", id, fmt.Sprintf("webhook %s exists with another definition (url, event_types, session_ids or description): delete it first, or choose another webhook_id", id))
	}
	if s.GetCreatedBy() != c.Subject {
		return nil, fault.AlreadyExists("webhook", id, fmt.Sprintf("webhook %s was made by another caller: its secret is shown only to its creator's retry; choose another webhook_id", id))
	}
	secret, err := w.Sealer.Open(c.Tenant, id, s.GetKeyId(), s.GetSealedSecret())
	if err != nil {
		return nil, fmt.Errorf("webhook %s: its secret: %w", id, err)
	}
	// Answered once the read model holds it, as the first call was.
	if _, err := projector.WaitFor(ctx, w.App.Log, w.App.Store, readmodel.WebhooksName, made.GetSequence(), ReadTimeout); err != nil {
		return nil, err
	}
	return &controlv1.CreateWebhookResponse{Webhook: w.publicWebhook(c.Tenant, made), Secret: domain.FormatWebhookSecret(secret), Sequence: seq}, nil
}

// a2aPush is the A2A push notification config of a subscription: the
// task (a turn of the caller's tenant: another's is NotFound), a config
// id not used by another config of the task, room for one more config on
// the task, the token and credentials sealed like the secret.
func (w *Webhooks) a2aPush(ctx context.Context, c Caller, id string, p *controlv1.A2APush, req *controlv1.CreateWebhookRequest) (*eventsv1.A2APushSubscription, error) {
	if len(req.GetEventTypes()) > 0 {
		return nil, fault.Invalid("event_types", "an A2A push notification config delivers its task's state changes: name no event types")
	}
	if len(req.GetSessionIds()) > 0 {
		return nil, fault.Invalid("session_ids", "an A2A push notification config follows its task's session: name no sessions")
	}
	tu, err := w.App.turn(ctx, c, p.GetTaskId())
	if err != nil {
		return nil, err
	}
	cfg := p.GetConfigId()
	if cfg == "" {
		cfg = id
	}
	live, err := readmodel.A2APushConfigs(ctx, w.App.Store, c.Tenant, tu.GetTurnId())
	if err != nil {
		return nil, err
	}
	for _, ev := range live {
		if a := ev.GetChannelConnected().GetWebhook().GetA2APush(); a.GetConfigId() == cfg {
			return nil, fault.AlreadyExists("push notification config", cfg, fmt.Sprintf("task %s has a push notification config %s already (webhook %s): delete it first", tu.GetTurnId(), cfg, ev.GetChannelId()))
		}
	}
	if len(live) >= domain.MaxA2APushConfigsPerTask {
		return nil, fault.Exhausted("A2A_PUSH_CONFIGS_PER_TASK", fmt.Sprintf("a task has at most %d push notification configs; delete one first", domain.MaxA2APushConfigsPerTask), 0, nil)
	}
	if p.GetAuthCredentials() != "" && p.GetAuthScheme() == "" {
		return nil, fault.Invalid("a2a_push.auth_scheme", "required with credentials")
	}
	auth, err := json.Marshal(a2aAuth{Token: p.GetToken(), Credentials: p.GetAuthCredentials()})
	if err != nil {
		return nil, err
	}
	sealed, err := w.Sealer.Seal(c.Tenant, id+a2aSealSuffix, auth)
	if err != nil {
		return nil, err
	}
	return &eventsv1.A2APushSubscription{ConfigId: cfg, TurnId: tu.GetTurnId(), SessionId: tu.GetSessionId(), ThreadId: tu.GetThreadId(),
		TurnSequence: tu.GetSubmittedSequence(), AuthScheme: p.GetAuthScheme(), SealedAuth: sealed}, nil
}

// a2aSealSuffix binds a config's sealed token and credentials to it, apart
// from its secret.
const a2aSealSuffix = "/a2a"

// a2aAuth is what an A2A push subscription seals.
type a2aAuth struct {
	Token       string `json:"token,omitempty"`
	Credentials string `json:"credentials,omitempty"`
}

// openA2AAuth opens a subscription's sealed token and credentials.
func (w *Webhooks) openA2AAuth(tenant string, ev *eventsv1.RuntimeEvent) (a2aAuth, error) {
	var out a2aAuth
	s := ev.GetChannelConnected().GetWebhook()
	if w.Sealer == nil {
		return out, fmt.Errorf("this runtime has no webhook key")
	}
	raw, err := w.Sealer.Open(tenant, ev.GetChannelId()+a2aSealSuffix, s.GetKeyId(), s.GetA2APush().GetSealedAuth())
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(raw, &out)
}

// List answers the tenant's live subscriptions, or one task's A2A push
// notification configs, with their recent deliveries; never a secret,
// sealed or not.
func (w *Webhooks) List(ctx context.Context, c Caller, req *controlv1.ListWebhooksRequest) (*controlv1.ListWebhooksResponse, error) {
	seq, err := projector.WaitForSession(ctx, w.App.Log, w.App.Store, readmodel.WebhooksName, c.Tenant, "", req.GetMinSequence(), ReadTimeout)
	if err != nil {
		return nil, err
	}
	var subs []*eventsv1.RuntimeEvent
	if task := req.GetA2ATaskId(); task != "" {
		if _, err := w.App.turn(ctx, c, task); err != nil {
			return nil, err
		}
		subs, err = readmodel.A2APushConfigs(ctx, w.App.Store, c.Tenant, task)
	} else {
		subs, err = readmodel.Subscriptions(ctx, w.App.Store, c.Tenant)
	}
	if err != nil {
		return nil, err
	}
	out := &controlv1.ListWebhooksResponse{Sequence: seq}
	for i := len(subs) - 1; i >= 0; i-- {
		wh := w.publicWebhook(c.Tenant, subs[i])
		wh.RecentDeliveries, wh.Delivered, wh.Failed, err = readmodel.RecentDeliveries(ctx, w.App.Store, c.Tenant, wh.WebhookId, 10)
		if err != nil {
			return nil, err
		}
		out.Webhooks = append(out.Webhooks, wh)
	}
	return out, nil
}

// Delete ends a subscription. Deliveries still owed to it are recorded as
// cancelled by the sender, not attempted.
func (w *Webhooks) Delete(ctx context.Context, c Caller, req *controlv1.DeleteWebhookRequest) (*controlv1.DeleteWebhookResponse, error) {
	seq, err := w.end(ctx, c.Tenant, req.GetWebhookId(), domain.WebhookDeletedReason)
	if err != nil {
		return nil, err
	}
	// Answered once the read model has dropped it, as Create answers once
	// it holds it: the caller's next list does not show it.
	if _, err := projector.WaitFor(ctx, w.App.Log, w.App.Store, readmodel.WebhooksName, seq, ReadTimeout); err != nil {
		return nil, err
	}
	return &controlv1.DeleteWebhookResponse{Sequence: seq}, nil
}

// end records a live subscription's deletion; NotFound when it is not
// live.
func (w *Webhooks) end(ctx context.Context, tenant, id, reason string) (uint64, error) {
	res, err := w.App.w.Execute(ctx, webhookAgg(tenant, "", id), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		_, live, _, err := readmodel.Subscription(ctx, st, tenant, id)
		if err != nil {
			return nil, err
		}
		if !live {
			return nil, fault.NotFound("webhook", id)
		}
		return []*eventsv1.RuntimeEvent{domain.WebhookDeleted(id, reason)}, nil
	})
	return res.Sequence, err
}

// a2aRetention is how long a config is kept after its task ended: at
// least past the last attempt of a delivery of its task's last state.
func (w *Webhooks) a2aRetention() time.Duration {
	return max(w.A2ARetention, w.Retry.MaxAge+w.Sender.Timeout)
}

// collectWhileHeld collects, every A2ACollectEvery until ctx ends, the
// A2A push notification configs of partition k's tenants whose task
// ended more than the retention ago. It pages through the configs made
// before that (a config whose task still runs stays listed), a page of
// 256 each time, so every config is looked at in turn.
func (w *Webhooks) collectWhileHeld(ctx context.Context, k int) {
	every := w.A2ACollectEvery
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var offset int64 // configs made long ago whose task still runs, skipped
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		const page = 256
		now, keep := w.Now(), w.a2aRetention()
		due, err := readmodel.A2APushCollectable(ctx, w.App.Store, k, now.Add(-keep).UnixMilli(), offset, page)
		if err != nil {
			if ctx.Err() == nil {
				w.Logger.WarnContext(ctx, "collecting A2A push notification configs", "partition", k, "error", err)
			}
			continue
		}
		kept := int64(0)
		for _, e := range due {
			tenant, id, ok := readmodel.ParseA2APushCollectMember(e.Member)
			if !ok {
				kept++
				continue
			}
			collected, err := w.collect(ctx, tenant, id, now, keep)
			if err != nil && ctx.Err() == nil {
				w.Logger.WarnContext(ctx, "collecting an A2A push notification config", "tenant", tenant, "webhook_id", id, "error", err)
			}
			if !collected {
				kept++
			}
		}
		// The next page starts after what stays listed; from the start
		// again once a page came back short.
		offset += kept
		if len(due) < page {
			offset = 0
		}
	}
}

// collect deletes an A2A push notification config whose task ended more
// than keep before now (or is gone); collected says it did.
func (w *Webhooks) collect(ctx context.Context, tenant, id string, now time.Time, keep time.Duration) (bool, error) {
	sub, live, _, err := readmodel.Subscription(ctx, w.App.Store, tenant, id)
	if err != nil || !live {
		return false, err
	}
	turn := sub.GetChannelConnected().GetWebhook().GetA2APush().GetTurnId()
	tu, found, err := readmodel.Turn(ctx, w.App.Store, tenant, turn)
	if err != nil {
		return false, err
	}
	reason := fmt.Sprintf("collected: its A2A task %s is gone", turn)
	if found {
		if tu.GetEndedAt() == nil || now.Sub(tu.GetEndedAt().AsTime()) < keep {
			return false, nil
		}
		reason = fmt.Sprintf("collected: its A2A task %s ended at %s, more than %s ago", turn, tu.GetEndedAt().AsTime().UTC().Format(time.RFC3339), keep)
	}
	if _, err := w.end(ctx, tenant, id, reason); err != nil && !fault.Is(err, fault.KindNotFound) {
		return false, err
	}
	return true, nil
}

// publicWebhook is what readers see of a subscription: an A2A config's
// token (A2A's GetTaskPushNotificationConfig answers it), never its
// credentials.
func (w *Webhooks) publicWebhook(tenant string, ev *eventsv1.RuntimeEvent) *controlv1.Webhook {
	s := ev.GetChannelConnected().GetWebhook()
	wh := &controlv1.Webhook{WebhookId: ev.GetChannelId(), Url: s.GetUrl(), EventTypes: s.GetEventTypes(), SessionIds: s.GetSessionIds(),
		Description: s.GetDescription(), CreatedAt: ev.GetTimestamp(), Sequence: ev.GetSequence()}
	if a := s.GetA2APush(); a != nil {
		wh.A2APush = &controlv1.A2APush{TaskId: a.GetTurnId(), ConfigId: a.GetConfigId(), AuthScheme: a.GetAuthScheme(),
			SessionId: a.GetSessionId(), ThreadId: a.GetThreadId()}
		if auth, err := w.openA2AAuth(tenant, ev); err == nil {
			wh.A2APush.Token = auth.Token
		}
	}
	return wh
}
