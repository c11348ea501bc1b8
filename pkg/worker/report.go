package worker

import (
	"context"
	"errors"
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
