package app

import (
	"context"
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

func rangeUpTo(max float64, limit int64) projection.RangeQuery {
	return projection.RangeQuery{Max: &max, Limit: limit}
}

// GetSession returns the session shell, its threads, and the newest turns;
// the cursor pages older history.
func (a *App) GetSession(ctx context.Context, c Caller, req *controlv1.GetSessionRequest) (*controlv1.GetSessionResponse, error) {
	seq, err := a.caughtUpIn(ctx, c.Tenant, req.GetSessionId(), req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	s, ok, err := readmodel.Session(ctx, a.Store, c.Tenant, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.NotFoundWith("session", req.GetSessionId(), "session "+req.GetSessionId()+" not found")
	}
	out := &controlv1.GetSessionResponse{Session: s, Sequence: seq}
	for _, id := range s.ThreadIds {
		th, ok, err := readmodel.Thread(ctx, a.Store, c.Tenant, id)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Threads = append(out.Threads, th)
		}
	}
	limit := int64(req.GetHistoryLimit())
	if limit == 0 {
		limit = 20
	}
	q := projection.RangeQuery{Reverse: true, Limit: limit + 1}
	if cur := req.GetHistoryCursor(); cur != "" {
		before, err := strconv.ParseUint(cur, 10, 64)
		if err != nil {
			return nil, fault.Invalid("history_cursor", "%s", "not a cursor from a previous response")
		}
		max := math.Nextafter(float64(before), math.Inf(-1))
		q.Max = &max
	}
	entries, err := a.Store.Range(ctx, readmodel.SessionTurnsIndex(c.Tenant, s.SessionId), q)
	if err != nil {
		return nil, err
	}
	more := int64(len(entries)) > limit
	if more {
		entries = entries[:limit]
	}
	if out.History, err = a.turnsOf(ctx, c.Tenant, entries); err != nil {
		return nil, err
	}
	if more && len(entries) > 0 {
		out.HistoryCursor = strconv.FormatUint(uint64(entries[len(entries)-1].Score), 10)
	}
	return out, nil
}

// GetThreadRead returns the thread read model with its active turn.
func (a *App) GetThreadRead(ctx context.Context, c Caller, req *controlv1.GetThreadReadRequest) (*controlv1.GetThreadReadResponse, error) {
	seq, err := a.caughtUpIn(ctx, c.Tenant, req.GetSessionId(), req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	th, err := a.threadRead(ctx, c, req.GetSessionId(), req.GetThreadId())
	if err != nil {
		return nil, err
	}
	return &controlv1.GetThreadReadResponse{Thread: th, Sequence: seq}, nil
}

func (a *App) threadRead(ctx context.Context, c Caller, session, thread string) (*controlv1.ThreadRead, error) {
	th, err := a.thread(ctx, c, session, thread)
	if err != nil {
		return nil, err
	}
	if th.ActiveTurnId != "" {
		if tu, ok, err := readmodel.Turn(ctx, a.Store, c.Tenant, th.ActiveTurnId); err != nil {
			return nil, err
		} else if ok {
			th.ActiveTurn = tu
		}
	}
	return th, nil
}

// ListSessions pages the tenant's sessions, newest first: by creation
// time, sessions of one millisecond by id, descending. A page token is the
// last session listed (its time and id), so sessions created while a
// client pages do not shift the pages. The response's sequence is how far
// the read model has applied the partition of min_sequence (a tenant's
// sessions are in every partition of the log, which no one sequence
// describes); 0 when min_sequence is 0 on a partitioned log.
func (a *App) ListSessions(ctx context.Context, c Caller, req *controlv1.ListSessionsRequest) (*controlv1.ListSessionsResponse, error) {
	seq, err := a.caughtUp(ctx, req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	entries, next, err := a.pageNewestFirst(ctx, readmodel.SessionsIndex(c.Tenant), req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	out := &controlv1.ListSessionsResponse{Sequence: seq, NextPageToken: next}
	for _, e := range entries {
		s, ok, err := readmodel.Session(ctx, a.Store, c.Tenant, e.Member)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Sessions = append(out.Sessions, s)
		}
	}
	return out, nil
}

// ListTurns pages the tenant's turns across its sessions, newest first: by
// the time of their turn.submitted, turns of one millisecond by id,
// descending (readmodel.TenantTurnsIndex), paged as ListSessions. The
// response's sequence is as ListSessions'.
func (a *App) ListTurns(ctx context.Context, c Caller, req *controlv1.ListTurnsRequest) (*controlv1.ListTurnsResponse, error) {
	seq, err := a.caughtUp(ctx, req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	index := readmodel.TenantTurnsIndex(c.Tenant)
	tok := req.GetPageToken()
	if after := req.GetAfterTurnId(); after != "" {
		if tok != "" {
			return nil, fault.Invalid("after_turn_id", "%s", "not with page_token")
		}
		tu, ok, err := readmodel.Turn(ctx, a.Store, c.Tenant, after)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fault.Invalid("after_turn_id", "no turn %s", after)
		}
		// The turn's place in the index: the time of its turn.submitted
		// (readmodel.TenantTurnsIndex) and its id.
		tok = timeToken(float64(tu.GetSubmittedAt().AsTime().UnixMilli()), after)
	}
	entries, next, err := a.pageNewestFirst(ctx, index, req.GetPageSize(), tok)
	if err != nil {
		return nil, err
	}
	total, err := a.Store.Count(ctx, index)
	if err != nil {
		return nil, err
	}
	out := &controlv1.ListTurnsResponse{Sequence: seq, NextPageToken: next, TotalSize: total}
	if out.Turns, err = a.turnsOf(ctx, c.Tenant, entries); err != nil {
		return nil, err
	}
	return out, nil
}

// turnsOf reads the turns an index's entries name (members are turn ids),
// in their order, in one round trip; a turn gone since is left out.
func (a *App) turnsOf(ctx context.Context, tenant string, entries []projection.IndexEntry) ([]*controlv1.Turn, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = readmodel.TurnKey(tenant, e.Member)
	}
	raws, err := a.Store.GetMany(ctx, keys...)
	if err != nil {
		return nil, err
	}
	var out []*controlv1.Turn
	for _, raw := range raws {
		if raw == nil {
			continue
		}
		tu := &controlv1.Turn{}
		if err := proto.Unmarshal(raw, tu); err != nil {
			return nil, err
		}
		out = append(out, tu)
	}
	return out, nil
}

// pageNewestFirst is a page of an index scored by time in milliseconds,
// newest first, members of one millisecond descending: up to size
// entries (default 50) after the page token, and the token after the
// last of them when more follow. A token is the last entry listed (its
// time and member), so entries added while a client pages do not shift
// the pages.
func (a *App) pageNewestFirst(ctx context.Context, index string, pageSize int32, tok string) ([]projection.IndexEntry, string, error) {
	size := int64(pageSize)
	if size == 0 {
		size = 50
	}
	var entries []projection.IndexEntry
	q := projection.RangeQuery{Reverse: true}
	if tok != "" {
		created, after, ok := parseTimeToken(tok)
		if !ok {
			return nil, "", fault.Invalid("page_token", "%s", "not a page token from a previous response")
		}
		// The rest of the token's millisecond: members below the token's.
		same, err := a.Store.Range(ctx, index, projection.RangeQuery{Min: &created, Max: &created, Reverse: true})
		if err != nil {
			return nil, "", err
		}
		for _, e := range same {
			if e.Member < after {
				entries = append(entries, e)
			}
		}
		older := math.Nextafter(created, math.Inf(-1))
		q.Max = &older
	}
	if n := int64(len(entries)); n <= size {
		q.Limit = size + 1 - n
		rest, err := a.Store.Range(ctx, index, q)
		if err != nil {
			return nil, "", err
		}
		entries = append(entries, rest...)
	}
	next := ""
	if int64(len(entries)) > size {
		entries = entries[:size]
		last := entries[size-1]
		next = timeToken(last.Score, last.Member)
	}
	return entries, next, nil
}

// timeToken is the page token after an entry of an index scored by time
// (pageNewestFirst): its score (unix milliseconds) and member, opaque to
// clients.
func timeToken(score float64, member string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(int64(score), 10) + ":" + member))
}

func parseTimeToken(tok string) (created float64, session string, ok bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, "", false
	}
	ms, session, ok := strings.Cut(string(raw), ":")
	if !ok || session == "" {
		return 0, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return float64(n), session, true
}
