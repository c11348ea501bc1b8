package a2a

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Bounds of one tenant-wide ListTasks call with a status filter: it reads
// the tenant's turns (ListTurns) until its page is full, but examines at
// most listExamine turns, and answers what it found with a token that
// resumes after the last turn it examined: a page may then hold fewer
// tasks than asked, even none, and still have a next page.
const (
	listExamine int64 = 500
	// listBatch is how many turns a filtered call reads at once.
	listBatch int64 = 100
	// listFolds is how many threads' events one call folds at once.
	listFolds = 32
)

// tenantToken is a page token of the tenant-wide listing: how many turns
// the pages before examined and how many of them matched (what totalSize
// is counted from under a status filter), and the last turn examined.
type tenantToken struct {
	examined, matched int64
	after             string
}

const tenantTokenPrefix = "all."

func (t tenantToken) String() string {
	return tenantTokenPrefix + strconv.FormatInt(t.examined, 10) + "." + strconv.FormatInt(t.matched, 10) + "." + t.after
}

func parseTenantToken(s string) (tenantToken, bool) {
	rest, ok := strings.CutPrefix(s, tenantTokenPrefix)
	if !ok {
		return tenantToken{}, false
	}
	parts := strings.SplitN(rest, ".", 3)
	if len(parts) != 3 || len(parts[2]) > maxIDLen || !idPattern.MatchString(parts[2]) {
		return tenantToken{}, false
	}
	e, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || e < 0 || m < 0 || m > e {
		return tenantToken{}, false
	}
	return tenantToken{examined: e, matched: m, after: parts[2]}, true
}

// listTenantTasks serves ListTasks without a contextId: the tenant's
// tasks across its contexts, newest first by submission (the control
// service's ListTurns, an index of the tenant's turns, never a scan of
// the log), each folded from its events as GetTask folds it.
//
// Without a status filter a page is the next pageSize turns, totalSize
// the tenant's turns. With one, the filter is the fold's state (a task
// waiting for an action is input-required, whatever its turn's status),
// so turns are read and folded until the page is full or listExamine
// turns were examined; totalSize is then exact on the last page (no next
// page), and on the others the tasks matched so far plus every turn not
// yet examined: an upper bound.
func (h *Handler) listTenantTasks(ctx context.Context, p *ListTasksRequest, size int) (*ListTasksResponse, *rpcError) {
	var tok tenantToken
	if p.PageToken != "" {
		var ok bool
		if tok, ok = parseTenantToken(p.PageToken); !ok {
			return nil, invalidParams("params.pageToken", "not a page token of this server's listing without a contextId")
		}
	}
	res := &ListTasksResponse{Tasks: []Task{}, PageSize: size}
	var (
		total             int64
		examined, matched int64
		more              bool
	)
	after := tok.after
	for {
		ask := int64(size)
		if p.Status != "" {
			// Twice what is missing, as some will not match; no more than
			// a batch, nor past the call's bound.
			need := int64(size - len(res.Tasks))
			ask = min(max(2*need, 10), listBatch, h.examine-examined)
		}
		resp, err := h.control.ListTurns(ctx, &controlv1.ListTurnsRequest{PageSize: int32(ask), AfterTurnId: after})
		if status.Code(err) == codes.InvalidArgument {
			return nil, invalidParams("params.pageToken", "not a page token of this server's listing without a contextId")
		}
		if err != nil {
			return nil, fromStatus(err, "")
		}
		total = resp.GetTotalSize()
		turns := resp.GetTurns()
		tasks, rerr := h.foldTurns(ctx, turns)
		if rerr != nil {
			return nil, rerr
		}
		more = resp.GetNextPageToken() != ""
		for i, t := range tasks {
			examined++
			after = turns[i].GetTurnId()
			if p.Status != "" && t.Status.State != p.Status {
				continue
			}
			if !p.IncludeArtifacts {
				t.Artifacts = nil
			}
			res.Tasks = append(res.Tasks, t)
			matched++
			if len(res.Tasks) == size {
				// Full: the turns after this one are the next page's.
				more = more || i < len(tasks)-1
				break
			}
		}
		if !more || len(res.Tasks) == size || examined >= h.examine || len(turns) == 0 {
			break
		}
	}
	if more && after != "" {
		res.NextPageToken = tenantToken{examined: tok.examined + examined, matched: tok.matched + matched, after: after}.String()
	}
	switch {
	case p.Status == "":
		res.TotalSize = int(total)
	case res.NextPageToken == "":
		res.TotalSize = int(tok.matched + matched)
	default:
		res.TotalSize = int(tok.matched + matched + max(0, total-tok.examined-examined))
	}
	return res, nil
}

// foldTurns folds each turn's events into its task, in the order of
// turns: one subscription per thread, from the first of its turns'
// turn.submitted, a few threads at a time.
func (h *Handler) foldTurns(ctx context.Context, turns []*controlv1.Turn) ([]Task, *rpcError) {
	type thread struct {
		session, thread string
		from            uint64
		views           map[string]*taskView
	}
	views := make([]*taskView, len(turns))
	byThread := map[string]*thread{}
	var order []*thread
	for i, tu := range turns {
		key := tu.GetSessionId() + "/" + tu.GetThreadId()
		th := byThread[key]
		if th == nil {
			th = &thread{session: tu.GetSessionId(), thread: tu.GetThreadId(), from: tu.GetSubmittedSequence(), views: map[string]*taskView{}}
			byThread[key] = th
			order = append(order, th)
		}
		th.from = min(th.from, tu.GetSubmittedSequence())
		views[i] = newTaskView(tu.GetTurnId(), contextOf(tu.GetSessionId(), tu.GetThreadId()))
		th.views[tu.GetTurnId()] = views[i]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listFolds)
	var (
		mu   sync.Mutex
		fail *rpcError
	)
	for _, th := range order {
		g.Go(func() error {
			if err := h.foldThread(gctx, th.session, th.thread, max(th.from, 1), th.views); err != nil {
				mu.Lock()
				if fail == nil {
					fail = err
				}
				mu.Unlock()
				return err
			}
			return nil
		})
	}
	_ = g.Wait()
	if fail != nil {
		return nil, fail
	}
	out := make([]Task, len(views))
	for i, v := range views {
		out[i] = v.snapshot()
	}
	return out, nil
}

// foldThread folds the events of a thread from the sequence from into the
// views of its turns, to the end of the log as it is (untilPresent), or
// until every one of them has ended.
func (h *Handler) foldThread(ctx context.Context, session, thread string, from uint64, views map[string]*taskView) *rpcError {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := h.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: session, ThreadId: thread, TypePrefixes: []string{"turn.", "action.", "queue.", "model.delta"},
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: from, Heartbeat: durationpb.New(heartbeat),
	})
	if err != nil {
		return fromStatus(err, "")
	}
	open := len(views)
	for {
		resp, err := sub.Recv()
		if err != nil {
			return fromStatus(err, "")
		}
		switch item := resp.GetItem().(type) {
		case *controlv1.SubscribeEventsResponse_Heartbeat:
			if item.Heartbeat.GetSequence() > 0 {
				return nil
			}
		case *controlv1.SubscribeEventsResponse_Event:
			ev := item.Event
			v := views[ev.GetTurnId()]
			if v == nil || ev.GetThreadId() != thread || terminal(v.task.Status.State) {
				break
			}
			v.apply(ev)
			if terminal(v.task.Status.State) {
				if open--; open == 0 {
					return nil
				}
			}
		}
	}
}
