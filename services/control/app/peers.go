package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/control/adapters/peers"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

// Peers drives remote subagents: A2A peer agents a SpawnSubagent named by
// their card URL (docs/a2a.md, "Calling a peer"). Like webhook delivery,
// one replica per partition of the log drives that partition's peers,
// elected by a lease, and what it did is in the log as facts
// (channel.peer_task.linked|updated, the input action, the subagent's
// end), folded into the Subagent read model, so whichever replica holds
// the lease next goes on from there: it follows a linked task
// (GetTask, then SubscribeToTask), waits for an open input action, or
// cancels the peer task of a closed subagent. A message sent whose
// answer was not yet recorded when a replica stopped is sent again (at
// least once): a peer that was never linked gets the objective twice.
type Peers struct {
	App *App
	// Dialer connects to peers; it holds the allowlist (--a2a-peers).
	Dialer *peers.Dialer
	// Leases elect, per partition, the replica that drives its peers.
	Leases     lease.Store
	LeaseScope string
	// Poll bounds how long a driver goes without looking at the read
	// model when nothing wakes it, and paces GetTask of a peer that does
	// not stream; default 500 ms.
	Poll time.Duration
	// Retry bounds the attempts to reach a peer at the start (its card,
	// the objective) and a linked peer that stops answering; zero fields
	// take DefaultPeerRetry's.
	Retry  PeerRetry
	Logger *slog.Logger
}

// PeerRetry bounds how a remote subagent's driver tries again to reach a
// peer that could not be reached at the start: its card could not be
// read, or the objective could not be sent, for a cause that may pass (a
// network error, a timeout, HTTP 408, 429 or 5xx; peers.Transient). The
// n-th wait is MinBackoff doubled n-1 times, at most MaxBackoff, less up
// to half of it at random; the driver gives up after MaxAttempts
// attempts, or when the next would start more than MaxElapsed after the
// first, whichever comes first. Any other failure ends the subagent at
// once. A linked peer that stops answering waits the same, whatever the
// failure but a refusal, bounded by MaxElapsed alone (driver.unreachable).
type PeerRetry struct {
	MaxAttempts            int
	MinBackoff, MaxBackoff time.Duration
	MaxElapsed             time.Duration
}

// DefaultPeerRetry: 1 s doubling to 30 s, 8 attempts or 5 minutes (the
// waits before the 8th attempt add up to at most 91 s, so the attempts
// bound it unless the attempts themselves are slow: a card read may take
// 10 s).
var DefaultPeerRetry = PeerRetry{MaxAttempts: 8, MinBackoff: time.Second, MaxBackoff: 30 * time.Second, MaxElapsed: 5 * time.Minute}

func (r PeerRetry) withDefaults() PeerRetry {
	d := DefaultPeerRetry
	if r.MaxAttempts > 0 {
		d.MaxAttempts = r.MaxAttempts
	}
	if r.MinBackoff > 0 {
		d.MinBackoff = r.MinBackoff
	}
	if r.MaxBackoff > 0 {
		d.MaxBackoff = r.MaxBackoff
	}
	if r.MaxElapsed > 0 {
		d.MaxElapsed = r.MaxElapsed
	}
	return d
}

// NewPeers returns the driver of remote subagents.
func NewPeers(a *App, dialer *peers.Dialer, leases lease.Store, logger *slog.Logger) *Peers {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Peers{App: a, Dialer: dialer, Leases: leases, Poll: 500 * time.Millisecond, Logger: logger}
}

// checkPeer says why a SpawnSubagent may not name agent (InvalidArgument
// on the field), nil when it may.
func (a *App) checkPeer(agent string) error {
	if a.PeerCheck == nil {
		return fmt.Errorf("this runtime calls no A2A peers")
	}
	return a.PeerCheck(agent)
}

// interruptPeer closes the remote subagent whose child thread an
// InterruptTurn names (ok: it did); nothing for any other thread.
func (a *App) interruptPeer(ctx context.Context, c Caller, st projection.Store, req *controlv1.InterruptTurnRequest) (uint64, bool, error) {
	th, err := threadIn(ctx, st, c, req.GetSessionId(), req.GetThreadId())
	if err != nil || th.GetSubagentId() == "" {
		return 0, false, nil
	}
	s, err := a.subagent(ctx, c, req.GetSessionId(), th.GetSubagentId())
	if err != nil || s.GetAgent() == "" || subagentTerminal(s.GetStatus()) {
		return 0, false, nil
	}
	reason := "interrupted"
	if req.GetReason() != "" {
		reason += ": " + req.GetReason()
	}
	res, err := a.CloseSubagent(ctx, c, &controlv1.CloseSubagentRequest{SessionId: s.GetSessionId(), SubagentId: s.GetSubagentId(), Reason: reason})
	if err != nil {
		return 0, false, err
	}
	return res.GetSequence(), true, nil
}

const peerLeaseTTL = 10 * time.Second

// Run drives until ctx ends: for each partition, wait for its lease,
// then drive its remote subagents while the lease holds.
func (p *Peers) Run(ctx context.Context) error {
	perPartition{Leases: p.Leases, Key: p.LeaseScope + "peers", TTL: peerLeaseTTL, Logger: p.Logger, Work: p.driveWhileHeld}.
		run(ctx, p.App.Log, ids.New("peerdriver"))
	return nil
}

// driveWhileHeld starts a driver for each remote subagent of the
// partition the read model lists, until the lease is lost.
func (p *Peers) driveWhileHeld(ctx context.Context, k int, view *eventlog.Log) {
	var (
		mu      sync.Mutex
		running = map[string]bool{}
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	// What another holder (or this process before a restart) recorded
	// must be folded before anything is decided again: else a question
	// whose action is not folded yet would be asked twice.
	for ctx.Err() == nil {
		err := projector.CaughtUp(ctx, view, p.App.Store, readmodel.Name, nil, ReadTimeout)
		if err == nil {
			break
		}
		p.Logger.WarnContext(ctx, "a2a peers: read model not caught up", "partition", k, "error", err)
	}
	checkpoint := checkpointName(view, readmodel.Name)
	for ctx.Err() == nil {
		cp, _ := p.App.Store.Checkpoint(ctx, checkpoint)
		members, err := p.App.Store.Range(ctx, readmodel.PeersIndex, projection.RangeQuery{})
		if err != nil && ctx.Err() == nil {
			p.Logger.WarnContext(ctx, "a2a peers", "error", err)
		}
		for _, e := range members {
			parts := strings.Split(e.Member, "|")
			if len(parts) != 3 || (p.App.Log.Partitions() > 1 && p.App.Log.Subjects.PartitionOf(parts[0], parts[1]) != k) {
				continue
			}
			mu.Lock()
			busy := running[e.Member]
			running[e.Member] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(running, e.Member)
					mu.Unlock()
				}()
				p.drive(ctx, parts[0], parts[1], parts[2], view)
			})
		}
		p.waitChange(ctx, checkpoint, cp, p.Poll)
	}
}

// waitChange returns when the read model applies past cp in the
// partition, after d, or when ctx ends.
func (p *Peers) waitChange(ctx context.Context, checkpoint string, cp uint64, d time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, _ = p.App.Store.WaitFor(wctx, checkpoint, cp+1)
}

// driver is one remote subagent's.
type driver struct {
	p          *Peers
	tenant     string
	sub        string
	checkpoint string
	peer       *peers.Peer
	// artifacts the peer produced so far: the summary when it completes.
	artifacts []string
	// recorded is the sequence of the last fact recorded: the read model
	// is waited for up to it before the state is read again.
	recorded uint64
	// updates counts the facts recorded: a peer that never stops sending
	// fails its subagent at maxPeerUpdates rather than flood the log.
	updates int
	// reach counts the failed attempts to reach the peer at the start;
	// nothing of them is recorded but the last one's reason.
	reach reach
}

// reach is the state of a driver's attempts to reach its peer.
type reach struct {
	attempts int
	// first is when the first attempt started.
	first time.Time
	// next is when the next attempt may start.
	next time.Time
}

// errPeerRetry says the step failed in a way worth another try, after
// the driver's reach.next.
var errPeerRetry = errors.New("the A2A peer will be tried again")

// peerCallError is a call to a linked peer task that failed (the peer
// did not answer, or answered with an error), as opposed to the
// runtime's own failure to read or record.
type peerCallError struct{ err error }

func (e *peerCallError) Error() string { return e.err.Error() }
func (e *peerCallError) Unwrap() error { return e.err }

// unreachable decides what an attempt to reach the peer that failed with
// err (what it could not do: "be reached" for the card, "take the
// objective" for the first message, "answer about its task" once linked)
// leads to: another try, scheduled (true), or the subagent's end,
// recorded with the reason.
//
// Once the peer task is linked, the peer has taken the work: any failure
// but a refusal is tried again (a peer being redeployed answers 503 or
// nothing, then an error or two), and only time bounds it, MaxElapsed
// from the first call the peer left unanswered in a row, not the
// attempts. Any answer of the peer's starts the count again.
func (d *driver) unreachable(ctx context.Context, s *controlv1.Subagent, what string, err error, linked bool) bool {
	now := time.Now()
	r := &d.reach
	if r.first.IsZero() {
		r.first = now
	}
	r.attempts++
	if refused := peers.Refused(err); refused != nil {
		d.end(ctx, s, nil, "failed", "", "the A2A peer refused the runtime: "+refused.Error())
		return false
	}
	if !linked && !peers.Transient(err) {
		d.end(ctx, s, nil, "failed", "", fmt.Sprintf("the A2A peer could not %s: %v", what, err))
		return false
	}
	policy := d.p.Retry.withDefaults()
	wait := min(policy.MinBackoff<<min(r.attempts-1, 30), policy.MaxBackoff)
	wait -= rand.N(wait/2 + 1)
	if (!linked && r.attempts >= policy.MaxAttempts) || now.Add(wait).Sub(r.first) > policy.MaxElapsed {
		d.end(ctx, s, nil, "failed", "", fmt.Sprintf("the A2A peer could not %s after %d attempts over %s: %v",
			what, r.attempts, now.Sub(r.first).Round(time.Millisecond), err))
		return false
	}
	r.next = now.Add(wait)
	d.p.Logger.InfoContext(ctx, "a2a peer not reached; trying again", "subagent_id", s.GetSubagentId(), "agent", s.GetAgent(),
		"attempt", r.attempts, "retry_in", wait.Round(time.Millisecond), "error", err)
	return true
}

// maxPeerUpdates bounds the facts one driver records of a peer.
const maxPeerUpdates = 1000

func (p *Peers) drive(ctx context.Context, tenant, session, sub string, view *eventlog.Log) {
	d := &driver{p: p, tenant: tenant, sub: sub, checkpoint: checkpointName(view, readmodel.Name)}
	defer func() {
		if d.peer != nil {
			d.peer.Close()
		}
	}()
	// A driver before this one (of this subagent, now ended) may have
	// recorded what the read model has not folded yet.
	if err := projector.CaughtUp(ctx, view, p.App.Store, readmodel.Name, nil, ReadTimeout); err != nil {
		return // the partition's loop starts it again
	}
	for ctx.Err() == nil {
		cp, _ := p.App.Store.Checkpoint(ctx, d.checkpoint)
		if d.recorded > 0 {
			if _, err := p.App.caughtUp(ctx, d.recorded); err != nil {
				p.waitChange(ctx, d.checkpoint, cp, p.Poll)
				continue
			}
			cp, _ = p.App.Store.Checkpoint(ctx, d.checkpoint)
		}
		s, ok, err := readmodel.Subagent(ctx, p.App.Store, tenant, sub)
		if err != nil {
			p.waitChange(ctx, d.checkpoint, cp, p.Poll)
			continue
		}
		if !ok || s.GetSessionId() != session || s.GetAgent() == "" {
			return
		}
		switch s.Status {
		case controlv1.SubagentStatus_SUBAGENT_STATUS_COMPLETED, controlv1.SubagentStatus_SUBAGENT_STATUS_FAILED:
			return
		case controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED:
			d.cancelPeer(ctx, s)
			return
		}
		if wait := time.Until(d.reach.next); wait > 0 {
			// Waiting to try the peer again; anything the read model
			// applies (a close, say) is looked at before.
			p.waitChange(ctx, d.checkpoint, cp, wait)
			continue
		}
		// A close while talking to the peer stops the call: the loop
		// then cancels the peer task.
		callCtx, stop := context.WithCancel(ctx)
		go d.stopOnClose(callCtx, stop)
		if d.peer == nil {
			if d.reach.first.IsZero() {
				d.reach.first = time.Now() // the attempts' time counts from here
			}
			peer, err := p.Dialer.Dial(callCtx, s.GetAgent())
			if err != nil {
				stopped := callCtx.Err() != nil
				stop()
				if stopped {
					continue // closed (the loop cancels) or stopping
				}
				// The allowlist may have narrowed, the card may be gone,
				// the peer may not be up yet: tried again when that may
				// pass, else the subagent fails with why, once.
				if !d.unreachable(ctx, s, "be reached", err, false) {
					return
				}
				continue
			}
			d.peer = peer
		}
		progressed, err := d.step(callCtx, s)
		stopped := callCtx.Err() != nil
		stop()
		if errors.Is(err, errPeerRetry) {
			continue
		}
		var call *peerCallError
		if errors.As(err, &call) && !stopped && peers.Refused(err) == nil {
			// The linked peer task did not answer: tried again after a
			// wait, within the policy's time; then the subagent fails
			// with why, once.
			if !d.unreachable(ctx, s, "answer about its task", call.err, true) {
				return
			}
			continue
		}
		if refused := peers.Refused(err); refused != nil && ctx.Err() == nil {
			// The peer refuses the runtime's credential (or its lack)
			// halfway: asking again will not change its mind.
			d.end(ctx, s, nil, "failed", "", "the A2A peer refused the runtime: "+refused.Error())
			return
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			p.Logger.WarnContext(ctx, "a2a peer", "subagent_id", sub, "agent", s.GetAgent(), "error", err)
		}
		if !progressed {
			p.waitChange(ctx, d.checkpoint, cp, p.Poll)
		}
	}
}

// stopOnClose cancels stop's call when the subagent is closed.
func (d *driver) stopOnClose(ctx context.Context, stop context.CancelFunc) {
	for ctx.Err() == nil {
		cp, _ := d.p.App.Store.Checkpoint(ctx, d.checkpoint)
		if s, ok, _ := readmodel.Subagent(ctx, d.p.App.Store, d.tenant, d.sub); ok && s.Status == controlv1.SubagentStatus_SUBAGENT_STATUS_CLOSED {
			stop()
			return
		}
		d.p.waitChange(ctx, d.checkpoint, cp, time.Minute)
	}
}

// step does the next thing the subagent's state calls for; progressed
// says it recorded something (look again at once).
func (d *driver) step(ctx context.Context, s *controlv1.Subagent) (bool, error) {
	switch {
	case s.GetPeerTaskId() == "" && s.GetPeerContextId() == "":
		// The objective, as the first message; its id is the subagent's,
		// so a peer that keeps message ids sees a resend as the same.
		return d.consume(ctx, s, d.peer.Send(ctx, s.GetSubagentId(), "", "", s.GetObjective()), "")
	case s.GetPeerActionId() != "":
		act, ok, err := readmodel.Action(ctx, d.p.App.Store, d.tenant, s.GetPeerActionId())
		if err != nil || !ok || act.Status == domain.ActionPending {
			return false, err
		}
		text := ""
		if act.Status == controlv1.ActionStatus_ACTION_STATUS_RESOLVED && act.Decision == domain.PeerAnswer {
			_ = json.Unmarshal([]byte(act.PayloadJson), &text) // a JSON string (PeerInputSchema)
		}
		if text == "" {
			// Declined, timed out or cancelled with its turn: the peer
			// task is cancelled, which fails the subagent.
			t, err := d.cancelTask(ctx, s.GetPeerTaskId())
			if err != nil {
				return false, &peerCallError{err}
			}
			return d.consume(ctx, s, one(t), act.ActionId)
		}
		return d.consume(ctx, s, d.peer.Send(ctx, "", s.GetPeerTaskId(), s.GetPeerContextId(), text), act.ActionId)
	case peers.Terminal(s.GetPeerState()):
		// The end was recorded with the state; nothing is left to do.
		return false, nil
	}
	t, err := d.peer.Get(ctx, s.GetPeerTaskId())
	if err != nil {
		return false, &peerCallError{err}
	}
	if progressed, err := d.consume(ctx, s, one(t), ""); err != nil || progressed || peers.Terminal(peers.StateWord(t.Status.State)) ||
		t.Status.State == a2a.TaskStateInputRequired || !d.peer.Streams() {
		return progressed, err
	}
	return d.consume(ctx, s, d.peer.Subscribe(ctx, s.GetPeerTaskId()), "")
}

func one(t *a2a.Task) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) { yield(t, nil) }
}

// consume records what the peer's events say until the task ends or asks
// for input. answered, when set, is the input action whose answer (or
// decline) these events follow.
func (d *driver) consume(ctx context.Context, s *controlv1.Subagent, evs iter.Seq2[a2a.Event, error], answered string) (bool, error) {
	progressed := false
	linked := s.GetPeerTaskId() != "" || s.GetPeerContextId() != ""
	state := s.GetPeerState()
	for ev, err := range evs {
		if err != nil {
			if !linked && answered == "" && ctx.Err() == nil {
				// The objective did not reach the peer, or the peer
				// refused it: tried again when that may pass.
				if d.unreachable(ctx, s, "take the objective", err, false) {
					return false, errPeerRetry
				}
				return true, nil
			}
			return progressed, &peerCallError{err}
		}
		d.reach = reach{} // the peer answered
		u := peers.Flatten(ev)
		_, snapshot := ev.(*a2a.Task)
		if snapshot && answered != "" && u.State == s.GetPeerState() {
			// The answer's stream opens with the task as it stood (still
			// input_required): not a new question.
			u.State, u.Message = "", ""
		}
		if d.updates >= maxPeerUpdates && !peers.Terminal(u.State) {
			d.cancelAndEnd(ctx, s, fmt.Sprintf("the A2A peer sent more than %d updates", maxPeerUpdates))
			return true, nil
		}
		if snapshot {
			// A task holds all its artifacts: they replace what updates
			// brought so far (a polled task repeats them).
			d.artifacts = d.artifacts[:0]
		}
		var arts []*eventsv1.PeerArtifact
		for _, a := range u.Artifacts {
			arts = append(arts, &eventsv1.PeerArtifact{ArtifactId: a.ID, Name: a.Name, Text: a.Text})
			if a.Text != "" && len(d.artifacts) < peers.MaxArtifacts {
				d.artifacts = append(d.artifacts, a.Text)
			}
		}
		if u.Direct {
			// A message answer, no task: it is the peer's answer.
			fact := &eventsv1.PeerTaskFact{ContextId: u.ContextID, Message: u.Message, AnsweredActionId: answered}
			typ := events.TypeChannelPeerTaskUpdated
			if !linked {
				typ = events.TypeChannelPeerTaskLinked
			}
			d.end(ctx, s, domain.PeerTask(s, typ, fact), "completed", u.Message, "")
			return true, nil
		}
		if !linked && (u.TaskID != "" || u.ContextID != "") {
			fact := &eventsv1.PeerTaskFact{TaskId: u.TaskID, ContextId: u.ContextID, State: u.State, Message: u.Message, Artifacts: arts, PeerName: peers.Clip(d.peer.Card.Name)}
			if err := d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskLinked, fact)); err != nil {
				return progressed, err
			}
			s.PeerTaskId, s.PeerContextId = u.TaskID, u.ContextID
			linked, progressed, arts = true, true, nil
			if u.State != "" {
				state = u.State
			}
			if !peers.Terminal(u.State) && u.State != "input_required" {
				continue
			}
		}
		if u.State == "" && len(arts) == 0 && u.Message == "" && answered == "" {
			continue
		}
		if snapshot && u.State == state && answered == "" && !peers.Terminal(u.State) && u.State != "input_required" {
			// A task read again (polled, or the first item of a
			// subscription) that has not moved: nothing new.
			continue
		}
		fact := &eventsv1.PeerTaskFact{TaskId: u.TaskID, ContextId: u.ContextID, State: u.State, Message: u.Message, Artifacts: arts, AnsweredActionId: answered}
		answered = ""
		if u.State != "" {
			state = u.State
		}
		switch {
		case peers.Terminal(u.State):
			summary := peers.Clip(strings.Join(d.artifacts, "\n"))
			if summary == "" {
				summary = u.Message
			}
			reason := ""
			if u.State != "completed" {
				reason = "the A2A peer's task ended " + u.State
				if u.Message != "" {
					reason += ": " + u.Message
				}
				summary = "" // the reason is what the parent reads
			}
			d.end(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact), u.State, summary, reason)
			return true, nil
		case u.State == "input_required":
			act, err := d.askInput(ctx, s, u.Message)
			if err != nil {
				// The parent's turn cannot take it (it ended): nobody
				// can answer, so the peer task is cancelled.
				d.p.Logger.WarnContext(ctx, "a2a peer input", "subagent_id", s.GetSubagentId(), "error", err)
				if rerr := d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact)); rerr != nil {
					return progressed, rerr
				}
				d.cancelAndEnd(ctx, s, "the A2A peer asked for input the parent's turn cannot take: "+err.Error())
				return true, nil
			}
			fact.InputActionId = act
			if err := d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact)); err != nil {
				return progressed, err
			}
			return true, nil
		}
		if u.State == state && u.State != "" && len(arts) == 0 && u.Message == "" && fact.AnsweredActionId == "" {
			continue
		}
		if err := d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact)); err != nil {
			return progressed, err
		}
		progressed = true
	}
	return progressed, nil
}

// cancelTask asks the peer to cancel a task until it says the task ended
// (a few times: a peer may refuse while an update of the task is being
// written), and answers the task as the peer last said.
func (d *driver) cancelTask(ctx context.Context, taskID string) (*a2a.Task, error) {
	var (
		t   *a2a.Task
		err error
	)
	for i := range 5 {
		if t, err = d.peer.Cancel(ctx, taskID); err == nil && peers.Terminal(peers.StateWord(t.Status.State)) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return t, err
		case <-time.After(time.Duration(i+1) * 100 * time.Millisecond):
		}
	}
	return t, err
}

// cancelAndEnd cancels the peer's task and fails the subagent with
// reason, recording how the peer answered the cancel.
func (d *driver) cancelAndEnd(ctx context.Context, s *controlv1.Subagent, reason string) {
	fact := &eventsv1.PeerTaskFact{TaskId: s.GetPeerTaskId(), ContextId: s.GetPeerContextId()}
	if s.GetPeerTaskId() != "" {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t, err := d.cancelTask(cctx, s.GetPeerTaskId())
		cancel()
		if err != nil {
			fact.Message = "cancelling the peer task failed: " + err.Error()
		} else {
			fact.State = peers.StateWord(t.Status.State)
		}
	}
	d.end(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact), "failed", "", reason)
}

// askInput opens the input action on the parent's turn: its id derives
// from the subagent's and the peer's task, and the prompt is the peer's.
func (d *driver) askInput(ctx context.Context, s *controlv1.Subagent, prompt string) (string, error) {
	if prompt == "" {
		prompt = "The A2A peer asks for input."
	}
	id := ids.New(ids.Action)
	res, err := d.p.App.requestAction(ctx, Caller{Tenant: d.tenant}, &controlv1.RequestActionRequest{
		SessionId: s.GetSessionId(), ThreadId: s.GetParentThreadId(), TurnId: s.GetParentTurnId(), ActionId: id,
		ActionType: domain.PeerInputActionType, Prompt: prompt, JsonSchema: domain.PeerInputSchema,
		Decisions: []string{domain.PeerAnswer, domain.PeerDecline},
		Context:   map[string]string{"subagent_id": s.GetSubagentId(), "agent": s.GetAgent(), "peer_task_id": s.GetPeerTaskId()},
	}, "a2a-peer:"+s.GetSubagentId(), auth.Principal{}, nil)
	if err != nil {
		return "", err
	}
	return res.GetAction().GetActionId(), nil
}

// cancelPeer cancels the peer task of a closed subagent and records how
// the peer answered (which takes it off the drivers' list).
func (d *driver) cancelPeer(ctx context.Context, s *controlv1.Subagent) {
	if s.GetPeerTaskId() == "" || peers.Terminal(s.GetPeerState()) {
		if s.GetPeerTaskId() != "" {
			_ = d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, &eventsv1.PeerTaskFact{TaskId: s.GetPeerTaskId(), ContextId: s.GetPeerContextId()}))
		}
		return
	}
	fact := &eventsv1.PeerTaskFact{TaskId: s.GetPeerTaskId(), ContextId: s.GetPeerContextId()}
	if d.peer == nil {
		peer, err := d.p.Dialer.Dial(ctx, s.GetAgent())
		if err != nil {
			fact.Message = "the subagent was closed; the peer could not be reached to cancel its task: " + err.Error()
			_ = d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact))
			return
		}
		d.peer = peer
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t, err := d.cancelTask(cctx, s.GetPeerTaskId())
	if err != nil {
		fact.Message = "the subagent was closed; cancelling the peer task failed: " + err.Error()
	} else {
		fact.State, fact.Message = peers.StateWord(t.Status.State), peers.Flatten(t).Message
	}
	if err := d.record(ctx, s, domain.PeerTask(s, events.TypeChannelPeerTaskUpdated, fact)); err != nil && ctx.Err() == nil {
		d.p.Logger.WarnContext(ctx, "a2a peer cancel", "subagent_id", s.GetSubagentId(), "error", err)
	}
}

// end records the peer task's last fact (when given) and the subagent's
// end in one append.
func (d *driver) end(ctx context.Context, s *controlv1.Subagent, last *eventsv1.RuntimeEvent, state, summary, reason string) {
	evs := []*eventsv1.RuntimeEvent{}
	if last != nil {
		evs = append(evs, last)
	}
	evs = append(evs, domain.PeerEnded(s, state, summary, reason))
	if err := d.record(ctx, s, evs...); err != nil && ctx.Err() == nil {
		d.p.Logger.WarnContext(ctx, "a2a peer end", "subagent_id", s.GetSubagentId(), "error", err)
	}
}

// record appends facts on the subagent's child thread, retrying a failed
// append a few times, even while the process stops: what the peer said
// is not asked again.
func (d *driver) record(ctx context.Context, s *controlv1.Subagent, evs ...*eventsv1.RuntimeEvent) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	agg := threadAgg(d.tenant, s.GetSessionId(), s.GetChildThreadId())
	var err error
	for i := range 5 {
		var res []eventlog.Appended
		if res, err = d.p.App.Log.Append(ctx, agg, eventlog.Any, evs...); err == nil {
			d.recorded = max(d.recorded, res[len(res)-1].Sequence)
			d.updates += len(evs)
			return nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 200 * time.Millisecond):
		}
	}
	return err
}
