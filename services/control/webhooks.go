package control

import (
	"github.com/agentruntime/agentruntime/pkg/a2a"
	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/services/control/adapters/webhooks"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/kit"
)

// WebhookLeasePrefix prefixes the Redis keys of the leases that elect,
// per partition of the log, the replica that delivers webhooks.
const WebhookLeasePrefix = "agentruntime:control:webhook-lease:"

// newWebhooks builds the webhook subscriptions and their delivery from
// the binary's configuration: the key that seals secrets (none: webhooks
// are off) and the hook allowlist, which restricts webhook URLs too.
func newWebhooks(a *app.App, deps kit.Deps) *app.Webhooks {
	var hosts *hostallow.List
	if deps.Config.RestrictHookHosts {
		l, err := hostallow.Parse(deps.Config.HookAllowHosts)
		if err != nil && deps.Logger != nil {
			// The binary checked the list before; a bad one allows none.
			deps.Logger.Error("--hook-allow-hosts", "error", err)
		}
		hosts = &l
	}
	var leases lease.Store = lease.NewMemory(nil)
	if deps.Redis != nil {
		leases = lease.NewRedis(deps.Redis, WebhookLeasePrefix)
	}
	w := app.NewWebhooks(a, leases, hosts, deps.Logger)
	// A2A push notification configs are delivered as the A2A server folds
	// their task (docs/a2a.md, "Push notifications").
	w.TaskPush = a2a.PushBody
	if len(deps.Config.WebhookKey) > 0 {
		sealer, err := webhooks.NewSealer(deps.Config.WebhookKey)
		if err != nil && deps.Logger != nil {
			deps.Logger.Error("webhooks are off", "error", err)
		}
		w.Sealer = sealer
	}
	r := deps.Config.WebhookRetry
	if r.MaxAttempts > 0 {
		w.Retry.MaxAttempts = r.MaxAttempts
	}
	if r.MinBackoff > 0 {
		w.Retry.MinBackoff = r.MinBackoff
	}
	if r.MaxBackoff > 0 {
		w.Retry.MaxBackoff = r.MaxBackoff
	}
	if r.MaxAge > 0 {
		w.Retry.MaxAge = r.MaxAge
	}
	if r.AttemptTimeout > 0 {
		w.Sender.Timeout = r.AttemptTimeout
	}
	if r.A2APushRetention > 0 {
		w.A2ARetention = r.A2APushRetention
	}
	if r.A2APushCollectEvery > 0 {
		w.A2ACollectEvery = r.A2APushCollectEvery
	}
	return w
}

// SetWebhookLeaseScope prefixes the keys of the webhook delivery leases,
// for deployments (or tests) that share one Redis. Call it before Run.
func (s *Service) SetWebhookLeaseScope(scope string) { s.webhooks.LeaseScope = scope + ":" }
