package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/fault"
)

// Elections are retries, not errors (docs/scaling.md, "Elections are
// retries, not errors"). While a clustered stream has no leader (its node
// was lost and the others elect one, a few seconds), or the connection
// moves to another server, publishes and reads
// fail with "no response from stream", no responders, timeouts or a
// JetStream "temporarily unavailable". The log retries those, each attempt
// bounded, below the caller's deadline, with the same message ids (the
// de-duplication window drops a retried publish that had landed), and only
// when the caller's time is spent answers ErrUnavailable: the caller sees
// Unavailable with RetryInfo, never Internal.

// ErrUnavailable: the event log did not answer within the caller's
// deadline (a leader election, a lost server). Retrying the request can
// succeed.
var ErrUnavailable = fault.Sentinel("eventlog: the event log is unavailable",
	fault.Unavailable("the event log is unavailable (a leader election?); retry the request", time.Second))

// JetStream API errors that say "not now" rather than "no".
const (
	errCodeClusterNotAvail        jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	errCodeClusterIncomplete      jetstream.ErrorCode = 10004 // incomplete results
	errCodeLastSeqPerSubjNotReady jetstream.ErrorCode = 10163 // expected last sequence per subject temporarily unavailable
	errCodeStreamOffline          jetstream.ErrorCode = 10118 // stream is offline
	// no suitable peers for placement: a node of a cluster that is still
	// forming (or restarting) is not known to be online yet; seen creating
	// the second of three R3 streams right after the cluster started.
	errCodeClusterNoPeers jetstream.ErrorCode = 10005
)

// errStaleConflict marks a wrong-last-sequence answer that a fresh read
// from the stream leader shows to be stale: the subject's last sequence is
// the expected one (an R3 follower still applying the previous append).
var errStaleConflict = errors.New("eventlog: stale wrong last sequence")

// outage reports whether err says the engine is not answering now (as
// opposed to a refusal or the caller's own cancellation).
func outage(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, errStaleConflict),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoHeartbeat),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrNoServers),
		errors.Is(err, nats.ErrDisconnected):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterNotAvail, errCodeClusterIncomplete, errCodeLastSeqPerSubjNotReady, errCodeStreamOffline, errCodeClusterNoPeers:
			return true
		}
		return apiErr.Code == 503
	}
	return false
}

// outageBudget is when a retried operation must give up: a little before
// the caller's deadline (so the answer is Unavailable, not a deadline the
// client hit first), or Config.OutageWait from now when ctx has none.
func (l *Log) outageBudget(ctx context.Context) time.Time {
	now := time.Now()
	d, ok := ctx.Deadline()
	if !ok {
		return now.Add(l.cfg.OutageWait)
	}
	margin := min(max(d.Sub(now)/10, 20*time.Millisecond), 250*time.Millisecond)
	return d.Add(-margin)
}

// retry runs op until it succeeds, fails with something other than an
// outage, or the budget is spent (then ErrUnavailable naming what and the
// last cause). Each attempt gets at most Config.AttemptTimeout; an attempt
// that ran out of it counts as an outage.
func (l *Log) retry(ctx context.Context, what string, op func(context.Context) error) error {
	return l.retryProgress(ctx, what, func(actx context.Context) (bool, error) { return false, op(actx) })
}

// retryProgress is retry for reads that make progress attempt by attempt
// (each goes on after the last event the one before delivered): an attempt
// that delivered something starts the budget again when there is no
// deadline, so a long rebuild is never cut short by OutageWait.
func (l *Log) retryProgress(ctx context.Context, what string, op func(context.Context) (bool, error)) error {
	return l.retryAttempts(ctx, what, l.cfg.AttemptTimeout, op)
}

// setupRetry retries stream and bucket setup at start: every replica of
// every service creates or updates them at once, on a cluster that may be
// electing its first leaders, and an R3 create can take seconds. Attempts
// get 10s each, within the caller's deadline or OutageWait.
func setupRetry(ctx context.Context, cfg Config, what string, op func(context.Context) error) error {
	l := &Log{cfg: cfg}
	l.cfg.OutageWait = max(cfg.OutageWait, time.Minute)
	return l.retryAttempts(ctx, what, 10*time.Second, func(actx context.Context) (bool, error) { return false, op(actx) })
}

func (l *Log) retryAttempts(ctx context.Context, what string, attemptTimeout time.Duration, op func(context.Context) (bool, error)) error {
	end := l.outageBudget(ctx)
	backoff := 20 * time.Millisecond
	var last error
	for {
		left := time.Until(end)
		if left <= 0 {
			if last == nil {
				last = context.DeadlineExceeded
			}
			return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, last)
		}
		actx, cancel := context.WithTimeout(ctx, min(attemptTimeout, left))
		progressed, err := op(actx)
		expired := actx.Err() != nil
		cancel()
		if progressed {
			if _, ok := ctx.Deadline(); !ok {
				end = l.outageBudget(ctx)
			}
			backoff = 20 * time.Millisecond
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return l.callerDone(ctx, what, err)
		}
		if !outage(err) && !(expired && timeoutLike(err)) {
			return err
		}
		last = err
		select {
		case <-time.After(min(backoff, max(time.Until(end), 0))):
		case <-ctx.Done():
			return l.callerDone(ctx, what, err)
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// callerDone answers an operation whose caller's context ended during it:
// its deadline ran out while the engine did not answer (ErrUnavailable, so
// the caller sees Unavailable with RetryInfo, not a bare deadline), or the
// caller canceled.
func (l *Log) callerDone(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && (outage(err) || timeoutLike(err)) {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, what, err)
	}
	return fmt.Errorf("eventlog: %s: %w", what, ctx.Err())
}

func timeoutLike(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// publish is one synchronous append of msg with retries through outages.
// A wrong-last-sequence answer is checked against the stream leader: when
// the subject's last sequence is the expected one, the refusal was stale
// (R3, error 10164, the previous append still being applied) and the same
// message is published again; otherwise it is a conflict for the caller.
func (l *Log) publish(ctx context.Context, agg Aggregate, subject string, expectSet bool, expectSeq uint64, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	var ack *jetstream.PubAck
	err := l.retry(ctx, "append to "+agg.String(), func(actx context.Context) error {
		a, err := l.js.PublishMsg(actx, msg, opts...)
		if err == nil {
			ack = a
			return nil
		}
		perr := publishError(agg, err)
		if expectSet && errors.Is(perr, ErrConflict) {
			last, found, lerr := l.leaderLastSequence(actx, l.aggregatePart(agg), subject)
			switch {
			case lerr != nil && outage(lerr):
				return lerr
			case lerr == nil && (last == expectSeq || (!found && expectSeq == 0)):
				return fmt.Errorf("%w: %s", errStaleConflict, agg)
			}
		}
		if outage(err) {
			return err
		}
		return perr
	})
	return ack, err
}

// leaderLastSequence asks the stream leader (not a direct get, which a
// follower may answer from behind) for the last sequence on subject.
func (l *Log) leaderLastSequence(ctx context.Context, k int, subject string) (uint64, bool, error) {
	return l.leaderGet(ctx, k, subject, map[string]any{"last_by_subj": subject})
}

// leaderNext asks the stream leader for the first message at stream
// sequence from or later matching any of filters (none: any message), and
// answers its sequence, or 0 when there is none.
func (l *Log) leaderNext(ctx context.Context, k int, filters []string, from uint64) (uint64, error) {
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var first uint64
	for _, f := range filters {
		actx, cancel := context.WithTimeout(ctx, l.cfg.AttemptTimeout)
		seq, found, err := l.leaderGet(actx, k, f, map[string]any{"seq": from, "next_by_subj": f})
		cancel()
		if err != nil {
			return 0, fmt.Errorf("eventlog: read: %w", err)
		}
		if found && (first == 0 || seq < first) {
			first = seq
		}
	}
	return first, nil
}

// leaderGet asks the stream leader for one message (a STREAM.MSG.GET
// request, which only the leader answers) and answers its sequence, or
// found false when there is none.
func (l *Log) leaderGet(ctx context.Context, k int, subject string, request map[string]any) (uint64, bool, error) {
	req, err := json.Marshal(request)
	if err != nil {
		return 0, false, err
	}
	resp, err := l.js.Conn().RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+l.streamName(k), req)
	if err != nil {
		return 0, false, err
	}
	var out struct {
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &out); err != nil {
		return 0, false, fmt.Errorf("eventlog: a message of %s from the leader: %w", subject, err)
	}
	switch {
	case out.Error != nil && out.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return 0, false, nil
	case out.Error != nil:
		return 0, false, out.Error
	case out.Message == nil:
		return 0, false, fmt.Errorf("eventlog: a message of %s from the leader: empty answer", subject)
	}
	return out.Message.Seq, true, nil
}
