package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/ids"
)

// maxReportBatch bounds the events of one ReportEvents call.
const maxReportBatch = 256

// reportFacts says facts of a turn the worker holds. Every event gets its
// id before the first attempt and keeps it, so a retry appends nothing
// twice (the log de-duplicates by event id). A fact that happened is said
// even while the turn is being cancelled (an interrupt): only a lost lease
// or a turn ended by someone else stops it, because the facts are then no
// longer this worker's to tell. Aborted and Unavailable are retried with
// backoff until Config.ReportTimeout: a transient conflict or a restarting
// control service never costs the turn its lease and an attempt.
func (w *Worker) reportFacts(ctx context.Context, runID, leaseToken string, evs []*eventsv1.RuntimeEvent) error {
	for _, ev := range evs {
		if ev.GetEventId() == "" {
			ev.EventId = ids.New(ids.Event)
		}
	}
	if gone := context.Cause(ctx); errors.Is(gone, errLeaseLost) || errors.Is(gone, errEnded) {
		return gone
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ReportTimeout)
	defer cancel()
	for len(evs) > 0 {
		n := min(len(evs), maxReportBatch)
		if err := w.retryReport(ctx, rctx, &controlv1.ReportEventsRequest{Events: evs[:n], RunId: runID, LeaseToken: leaseToken}); err != nil {
			return err
		}
		evs = evs[n:]
	}
	return nil
}

// reporter holds a turn's facts for a short linger (Config.ReportLinger)
// so that the facts of a step travel in one ReportEvents call instead of
// one call each. Facts leave in the order they were said, one call in
// flight at a time, each with the event id it was given when said (a
// retry appends nothing twice). say lingers; report and flush send what
// is held before they return: the turn calls them before anything another
// service decides on, or records to the log, sees the turn (a route, a
// permission evaluation, a sandbox fact, a hand back, the turn's end), so
// the log's order is the order the worker said things in.
type reporter struct {
	w                 *Worker
	runID, leaseToken string
	// ctx is the turn's: a flush on the timer stops when its lease is lost
	// or someone else ended it (reportFacts).
	ctx context.Context
	// sending is held for one call: held facts are taken under it, so the
	// calls carry them in order.
	sending sync.Mutex
	mu      sync.Mutex
	held    []*eventsv1.RuntimeEvent
	timer   *time.Timer
	// err is the failure of a flush on the timer, returned (once) by the
	// next say, report or flush.
	err error
}

func (w *Worker) newReporter(ctx context.Context, runID, leaseToken string) *reporter {
	return &reporter{w: w, runID: runID, leaseToken: leaseToken, ctx: ctx}
}

// say holds facts for at most the linger, or sends them with those held
// when ReportBatch are held (the caller then waits for that call: a
// burst never holds more than that).
func (r *reporter) say(evs ...*eventsv1.RuntimeEvent) error {
	linger := r.w.cfg.ReportLinger
	r.mu.Lock()
	if err := r.err; err != nil {
		r.err = nil
		r.mu.Unlock()
		return err
	}
	for _, ev := range evs {
		if ev.GetEventId() == "" {
			ev.EventId = ids.New(ids.Event)
		}
	}
	r.held = append(r.held, evs...)
	now := linger <= 0 || len(r.held) >= r.w.cfg.ReportBatch
	if !now && r.timer == nil {
		r.timer = time.AfterFunc(linger, r.onTimer)
	}
	r.mu.Unlock()
	if now {
		return r.flush(r.ctx)
	}
	return nil
}

// report says facts and sends them, with everything held, before it
// returns.
func (r *reporter) report(ctx context.Context, evs ...*eventsv1.RuntimeEvent) error {
	if err := r.say(evs...); err != nil {
		return err
	}
	return r.flush(ctx)
}

// onTimer sends what is held once the linger ran out; a failure waits for
// the turn's next say, report or flush (decided before any later call is
// sent, so nothing said after the failed facts lands without them).
func (r *reporter) onTimer() {
	r.sending.Lock()
	defer r.sending.Unlock()
	if err := r.send(r.ctx); err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
}

// flush sends what is held and returns when it landed (or failed).
func (r *reporter) flush(ctx context.Context) error {
	r.sending.Lock()
	defer r.sending.Unlock()
	return r.send(ctx)
}

// send is flush with sending held.
func (r *reporter) send(ctx context.Context) error {
	r.mu.Lock()
	if err := r.err; err != nil {
		r.err = nil
		r.mu.Unlock()
		return err
	}
	evs := r.held
	r.held = nil
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.mu.Unlock()
	if len(evs) == 0 {
		return nil
	}
	return r.w.reportFacts(ctx, r.runID, r.leaseToken, evs)
}

// stop drops the timer of a turn that is over: what is still held was
// said after its end (someone else ended it, or its lease was lost).
func (r *reporter) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

func (w *Worker) retryReport(turnCtx, rctx context.Context, req *controlv1.ReportEventsRequest) error {
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := w.control.ReportEvents(rctx, req)
		if !retryableReport(err) {
			return err
		}
		if gone := context.Cause(turnCtx); errors.Is(gone, errLeaseLost) || errors.Is(gone, errEnded) {
			return gone
		}
		w.cfg.Logger.WarnContext(rctx, "retrying a report", "attempt", attempt, "error", err, "retry_in", backoff)
		if !sleep(rctx, backoff) {
			return err
		}
		backoff = min(backoff*2, time.Second)
	}
}

// retryableReport: a conflict that outlasted control's own retries, or a
// control service (or its log) briefly unavailable.
func retryableReport(err error) bool {
	switch status.Code(err) {
	case codes.Aborted, codes.Unavailable:
		return true
	}
	return false
}
