package control

import (
	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/services/control/adapters/peers"
	"github.com/agentruntime/agentruntime/services/control/app"
	"github.com/agentruntime/agentruntime/services/kit"
)

// PeerLeasePrefix prefixes the Redis keys of the leases that elect, per
// partition of the log, the replica that drives remote subagents.
const PeerLeasePrefix = "agentruntime:control:peer-lease:"

// newPeers builds the driver of remote subagents (A2A peers) from the
// binary's configuration: the allowlist of peer hosts (--a2a-peers; none
// allows no peer) and the credentials sent to them
// (--a2a-peer-credentials).
func newPeers(a *app.App, deps kit.Deps) *app.Peers {
	hosts, err := hostallow.Parse(deps.Config.A2APeers)
	if err != nil && deps.Logger != nil {
		// The binary checked the list before; a bad one allows none.
		deps.Logger.Error("--a2a-peers", "error", err)
		hosts = hostallow.List{}
	}
	dialer := peers.NewDialer(hosts, deps.Config.A2APeerCredentials)
	a.PeerCheck = dialer.Check
	var leases lease.Store = lease.NewMemory(nil)
	if deps.Redis != nil {
		leases = lease.NewRedis(deps.Redis, PeerLeasePrefix)
	}
	p := app.NewPeers(a, dialer, leases, deps.Logger)
	r := deps.Config.A2APeerRetry
	p.Retry = app.PeerRetry{MaxAttempts: r.MaxAttempts, MinBackoff: r.MinBackoff, MaxBackoff: r.MaxBackoff, MaxElapsed: r.MaxElapsed}
	return p
}

// SetPeerLeaseScope prefixes the keys of the peer driver's leases, for
// deployments (or tests) that share one Redis. Call it before Run.
func (s *Service) SetPeerLeaseScope(scope string) { s.peers.LeaseScope = scope + ":" }
