package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentruntime/agentruntime/pkg/command"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
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
}

// NewWebhooks returns the webhooks of a: off until a Sealer is set.
func NewWebhooks(a *App, leases lease.Store, hosts *hostallow.List, logger *slog.Logger) *Webhooks {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Webhooks{App: a, Hosts: hosts, Sender: webhooks.NewSender(hosts), Leases: leases,
		Retry: domain.DefaultWebhookRetry, Poll: 100 * time.Millisecond, Concurrency: 16, PerWebhook: 4, Logger: logger, Now: time.Now}
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
	live, err := readmodel.Subscriptions(ctx, w.App.Store, c.Tenant)
	if err != nil {
		return nil, err
	}
	if len(live) >= domain.MaxWebhooksPerTenant {
		return nil, fault.Exhausted("WEBHOOKS_PER_TENANT", fmt.Sprintf("a tenant has at most %d webhooks; delete one first", domain.MaxWebhooksPerTenant), 0, nil)
	}
	id := ids.New(domain.WebhookIDPrefix)
	secret, err := webhooks.NewSecret()
	if err != nil {
		return nil, err
	}
	sealed, err := w.Sealer.Seal(c.Tenant, id, secret)
	if err != nil {
		return nil, err
	}
	sub := &eventsv1.WebhookSubscription{Url: req.GetUrl(), EventTypes: req.GetEventTypes(), SessionIds: req.GetSessionIds(),
		Description: req.GetDescription(), SealedSecret: sealed, KeyId: w.Sealer.KeyID()}
	res, err := w.App.w.ExecuteNew(ctx, webhookAgg(c.Tenant, "", id), "", func(context.Context, command.State) ([]*eventsv1.RuntimeEvent, error) {
		return []*eventsv1.RuntimeEvent{domain.WebhookCreated(id, host, sub)}, nil
	})
	if err != nil {
		return nil, err
	}
	ev, _, _, err := readmodel.Subscription(ctx, res.State, c.Tenant, id)
	if err != nil {
		return nil, err
	}
	return &controlv1.CreateWebhookResponse{Webhook: publicWebhook(ev), Secret: domain.FormatWebhookSecret(secret), Sequence: res.Sequence}, nil
}

// List answers the tenant's live subscriptions with their recent
// deliveries; never a secret, sealed or not.
func (w *Webhooks) List(ctx context.Context, c Caller, req *controlv1.ListWebhooksRequest) (*controlv1.ListWebhooksResponse, error) {
	seq, err := projector.WaitForSession(ctx, w.App.Log, w.App.Store, readmodel.WebhooksName, c.Tenant, "", req.GetMinSequence(), ReadTimeout)
	if err != nil {
		return nil, err
	}
	subs, err := readmodel.Subscriptions(ctx, w.App.Store, c.Tenant)
	if err != nil {
		return nil, err
	}
	out := &controlv1.ListWebhooksResponse{Sequence: seq}
	for i := len(subs) - 1; i >= 0; i-- {
		wh := publicWebhook(subs[i])
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
	res, err := w.App.w.Execute(ctx, webhookAgg(c.Tenant, "", req.GetWebhookId()), "", func(ctx context.Context, st command.State) ([]*eventsv1.RuntimeEvent, error) {
		_, live, _, err := readmodel.Subscription(ctx, st, c.Tenant, req.GetWebhookId())
		if err != nil {
			return nil, err
		}
		if !live {
			return nil, fault.NotFound("webhook", req.GetWebhookId())
		}
		return []*eventsv1.RuntimeEvent{domain.WebhookDeleted(req.GetWebhookId())}, nil
	})
	if err != nil {
		return nil, err
	}
	return &controlv1.DeleteWebhookResponse{Sequence: res.Sequence}, nil
}

// publicWebhook is what readers see of a subscription.
func publicWebhook(ev *eventsv1.RuntimeEvent) *controlv1.Webhook {
	s := ev.GetChannelConnected().GetWebhook()
	return &controlv1.Webhook{WebhookId: ev.GetChannelId(), Url: s.GetUrl(), EventTypes: s.GetEventTypes(), SessionIds: s.GetSessionIds(),
		Description: s.GetDescription(), CreatedAt: ev.GetTimestamp(), Sequence: ev.GetSequence()}
}
