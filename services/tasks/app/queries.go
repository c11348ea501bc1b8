package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/fault"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/projector"
	"github.com/agentruntime/agentruntime/services/tasks/domain"
	"github.com/agentruntime/agentruntime/services/tasks/readmodel"
)

// ErrBadPageToken: a page token this service did not issue.
var ErrBadPageToken = fault.Invalid("page_token", "%s", "not a token this service issued")

// at waits until the read model has applied minSequence and returns the
// sequence the answer reflects.
func (a *App) at(ctx context.Context, minSequence uint64) (uint64, error) {
	if err := a.ensureWarm(ctx); err != nil {
		return 0, err
	}
	return projector.WaitFor(ctx, a.log, a.store, readmodel.Name, minSequence, a.cfg.CatchUp)
}

// GetTask returns a task with its attempts and edges, and the edges of
// other tasks that point at it.
func (a *App) GetTask(ctx context.Context, tenant, id string, minSequence uint64) (*tasksv1.Task, []*tasksv1.Edge, uint64, error) {
	seq, err := a.at(ctx, minSequence)
	if err != nil {
		return nil, nil, seq, err
	}
	t, err := a.LoadTask(ctx, tenant, id)
	if err != nil {
		return nil, nil, seq, err
	}
	if seq, err = a.sessionAt(ctx, tenant, t.GetSessionId(), seq); err != nil {
		return nil, nil, seq, err
	}
	rev, err := a.reverseEdges(ctx, tenant, t)
	return t, rev, seq, err
}

// sessionAt is the position a read of one session's records covers: the
// read model's checkpoint of the session's partition ("" is the tenant's
// session-less partition). With one partition it is the position the read
// waited for.
func (a *App) sessionAt(ctx context.Context, tenant, session string, seq uint64) (uint64, error) {
	if a.log.Partitions() <= 1 {
		return seq, nil
	}
	return projector.Checkpoint(ctx, a.log.Of(tenant, session), a.store, readmodel.Name)
}

// reverseEdges shows edges stored on other tasks from t's side: a child's
// PARENT edge is t's CHILD edge, a dependent's BLOCKED_BY is t's BLOCKS.
func (a *App) reverseEdges(ctx context.Context, tenant string, t *tasksv1.Task) ([]*tasksv1.Edge, error) {
	entries, err := a.store.Range(ctx, readmodel.Reverse(tenant, t.GetTaskId()), projection.RangeQuery{})
	if err != nil {
		return nil, err
	}
	var out []*tasksv1.Edge
	for _, e := range entries {
		rel, src := readmodel.SplitReverse(e.Member)
		other, err := a.LoadTask(ctx, tenant, src)
		if err != nil {
			continue // removed concurrently; the index follows
		}
		for _, edge := range other.GetEdges() {
			if edge.GetRelation() != rel || edge.GetTargetId() != t.GetTaskId() {
				continue
			}
			r := proto.Clone(edge).(*tasksv1.Edge)
			r.SourceTaskId = src
			switch rel {
			case tasksv1.EdgeRelation_EDGE_RELATION_PARENT:
				r.Relation, r.TargetId = tasksv1.EdgeRelation_EDGE_RELATION_CHILD, src
			case tasksv1.EdgeRelation_EDGE_RELATION_BLOCKED_BY:
				r.Relation, r.TargetId = tasksv1.EdgeRelation_EDGE_RELATION_BLOCKS, src
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// ListTasks pages through the tenant's tasks in creation order. It walks
// the most selective index the filters name and checks the others on each
// record; the page token is where the page ended (a cursor).
func (a *App) ListTasks(ctx context.Context, tenant string, req *tasksv1.ListTasksRequest) ([]*tasksv1.Task, string, uint64, error) {
	seq, err := a.at(ctx, req.GetMinSequence())
	if err != nil {
		return nil, "", seq, err
	}
	index := readmodel.AllTasks(tenant)
	switch {
	case req.GetParentTaskId() != "":
		index = readmodel.TasksByParent(tenant, req.GetParentTaskId())
	case req.GetThreadId() != "":
		index = readmodel.TasksByThread(tenant, req.GetThreadId())
	case req.GetSessionId() != "":
		index = readmodel.TasksBySession(tenant, req.GetSessionId())
	case req.GetOwner() != "":
		index = readmodel.TasksByOwner(tenant, req.GetOwner())
	case req.GetTaskKind() != "":
		index = readmodel.TasksByKind(tenant, req.GetTaskKind())
	case req.GetStatus() != tasksv1.TaskStatus_TASK_STATUS_UNSPECIFIED:
		index = readmodel.TasksByStatus(tenant, req.GetStatus())
	}
	match := func(t *tasksv1.Task) bool {
		return (req.GetSessionId() == "" || t.GetSessionId() == req.GetSessionId()) &&
			(req.GetThreadId() == "" || t.GetThreadId() == req.GetThreadId() || t.GetSpec().GetScope().GetThreadId() == req.GetThreadId()) &&
			(req.GetStatus() == 0 || t.GetStatus() == req.GetStatus()) &&
			(req.GetParentTaskId() == "" || t.GetParentTaskId() == req.GetParentTaskId()) &&
			(req.GetTaskKind() == "" || t.GetSpec().GetTaskKind() == req.GetTaskKind()) &&
			(req.GetOwner() == "" || t.GetSpec().GetOwner() == req.GetOwner())
	}
	var out []*tasksv1.Task
	next, err := page(ctx, a.store, index, req.GetPageToken(), req.GetPageSize(), func(keys []string) (int, error) {
		docs, err := a.store.GetMany(ctx, taskKeys(tenant, keys)...)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, d := range docs {
			if d == nil {
				continue
			}
			t := &tasksv1.Task{}
			if err := proto.Unmarshal(d, t); err != nil {
				return 0, err
			}
			if match(t) {
				out = append(out, t)
				n++
			}
		}
		return n, nil
	})
	return out, next, seq, err
}

func taskKeys(tenant string, ids []string) []string {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = readmodel.TaskKey(tenant, id)
	}
	return keys
}

// page walks an index from after the token, handing members to take
// (which returns how many it kept) until size are kept; it returns the
// next token ("" at the end). Entries are in (score, member) order
// (projection.RangeQuery): by creation time, then id.
func page(ctx context.Context, store projection.Store, index, token string, size int32, take func([]string) (int, error)) (string, error) {
	if size <= 0 {
		size = 100
	}
	var from *cursor
	if token != "" {
		c, err := parseCursor(token)
		if err != nil {
			return "", err
		}
		if err := c.resolve(ctx, store, index); err != nil {
			return "", err
		}
		from = &c
	}
	kept := 0
	for {
		entries, err := after(ctx, store, index, from, int64(size)-int64(kept))
		if err != nil {
			return "", err
		}
		if len(entries) == 0 {
			return "", nil
		}
		members := make([]string, len(entries))
		for i, e := range entries {
			members[i] = e.Member
		}
		n, err := take(members)
		if err != nil {
			return "", err
		}
		kept += n
		last := entries[len(entries)-1]
		from = &cursor{score: last.Score, member: last.Member}
		if kept >= int(size) {
			// One more look tells whether anything follows.
			more, err := after(ctx, store, index, from, 1)
			if err != nil || len(more) == 0 {
				return "", err
			}
			return from.token(), nil
		}
	}
}

// cursor is where a page ended: the last entry's score and member. A
// page token is a cursor, opaque to clients. A score alone would not do:
// scores are creation times (ms), which tasks created in the same
// millisecond share, and a page may end among them.
type cursor struct {
	score  float64
	member string
	// hash is set when member is only a prefix of the last member, whose
	// id was too long for a page token: the one of that prefix with this
	// hash (resolve).
	hash string
}

// maxToken is the longest page token a request takes (page_token's
// max_len).
const maxToken = 64

// token is "c<score>.<member>", or "h<score>.<hash>.<member prefix>"
// when the member does not fit; the score is in base 36 (scores are ms).
func (c cursor) token() string {
	score := strconv.FormatInt(int64(c.score), 36)
	if t := "c" + score + "." + c.member; len(t) <= maxToken {
		return t
	}
	head := "h" + score + "." + memberHash(c.member) + "."
	return head + c.member[:maxToken-len(head)]
}

func memberHash(m string) string {
	sum := sha256.Sum256([]byte(m))
	return base64.RawURLEncoding.EncodeToString(sum[:6])
}

func parseCursor(token string) (cursor, error) {
	if token == "" {
		return cursor{}, ErrBadPageToken
	}
	kind, rest := token[0], token[1:]
	score, member, ok := strings.Cut(rest, ".")
	if !ok || member == "" {
		return cursor{}, ErrBadPageToken
	}
	ms, err := strconv.ParseInt(score, 36, 64)
	if err != nil {
		return cursor{}, ErrBadPageToken
	}
	c := cursor{score: float64(ms), member: member}
	switch kind {
	case 'c':
	case 'h':
		if c.hash, c.member, ok = strings.Cut(member, "."); !ok || c.member == "" {
			return cursor{}, ErrBadPageToken
		}
	default:
		return cursor{}, ErrBadPageToken
	}
	return c, nil
}

// resolve finds the member a cursor holds only a prefix of among the
// entries of its score. When it has left the index, the cursor is the
// prefix itself: the next page may repeat entries of that prefix and
// score, and misses none.
func (c *cursor) resolve(ctx context.Context, store projection.Store, index string) error {
	if c.hash == "" {
		return nil
	}
	s := c.score
	entries, err := store.Range(ctx, index, projection.RangeQuery{Min: &s, Max: &s})
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Member, c.member) && memberHash(e.Member) == c.hash {
			c.member = e.Member
			break
		}
	}
	c.hash = ""
	return nil
}

// after reads up to limit entries of index that follow c (from the first
// with no cursor); fewer when entries sharing c's score had to be passed.
func after(ctx context.Context, store projection.Store, index string, c *cursor, limit int64) ([]projection.IndexEntry, error) {
	if c == nil {
		return store.Range(ctx, index, projection.RangeQuery{Limit: limit})
	}
	lo, n := c.score, max(limit, 32)
	for skip := int64(0); ; {
		entries, err := store.Range(ctx, index, projection.RangeQuery{Min: &lo, Offset: skip, Limit: n})
		if err != nil || len(entries) == 0 {
			return entries, err
		}
		// Entries of c's score up to c's member come first: passed.
		i := 0
		for i < len(entries) && entries[i].Score == c.score && entries[i].Member <= c.member {
			i++
		}
		if i < len(entries) {
			return entries[i:min(len(entries), i+int(limit))], nil
		}
		skip += int64(len(entries))
	}
}

// GetJob returns a job with its items.
func (a *App) GetJob(ctx context.Context, tenant, id string, minSequence uint64) (*tasksv1.Job, uint64, error) {
	seq, err := a.at(ctx, minSequence)
	if err != nil {
		return nil, seq, err
	}
	j, err := a.LoadJob(ctx, tenant, id)
	if err != nil {
		return nil, seq, err
	}
	seq, err = a.sessionAt(ctx, tenant, j.GetSessionId(), seq)
	return j, seq, err
}

// ListJobs pages through the tenant's jobs in creation order.
func (a *App) ListJobs(ctx context.Context, tenant string, req *tasksv1.ListJobsRequest) ([]*tasksv1.Job, string, uint64, error) {
	seq, err := a.at(ctx, req.GetMinSequence())
	if err != nil {
		return nil, "", seq, err
	}
	index := readmodel.AllJobs(tenant)
	switch {
	case req.GetTaskId() != "":
		index = readmodel.JobsByTask(tenant, req.GetTaskId())
	case req.GetSessionId() != "":
		index = readmodel.JobsBySession(tenant, req.GetSessionId())
	case req.GetStatus() != tasksv1.JobStatus_JOB_STATUS_UNSPECIFIED:
		index = readmodel.JobsByStatus(tenant, req.GetStatus())
	}
	var out []*tasksv1.Job
	next, err := page(ctx, a.store, index, req.GetPageToken(), req.GetPageSize(), func(keys []string) (int, error) {
		n := 0
		for _, id := range keys {
			j, err := a.LoadJob(ctx, tenant, id)
			if fault.Is(err, fault.KindNotFound) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if (req.GetTaskId() == "" || j.GetTaskId() == req.GetTaskId()) && (req.GetSessionId() == "" || j.GetSessionId() == req.GetSessionId()) &&
				(req.GetStatus() == 0 || j.GetStatus() == req.GetStatus()) {
				out = append(out, j)
				n++
			}
		}
		return n, nil
	})
	return out, next, seq, err
}

// GetTaskSnapshot is the task part of a session snapshot (the Agent Runtime
// standard, Agent task, "Snapshot projection"). Counts cover every task of
// the session; the lists are cut at maxTasks.
func (a *App) GetTaskSnapshot(ctx context.Context, tenant string, req *tasksv1.GetTaskSnapshotRequest) (*tasksv1.GetTaskSnapshotResponse, error) {
	seq, err := a.at(ctx, req.GetMinSequence())
	if err != nil {
		return nil, err
	}
	entries, err := a.store.Range(ctx, readmodel.TasksBySession(tenant, req.GetSessionId()), projection.RangeQuery{})
	if err != nil {
		return nil, err
	}
	limit := int(req.GetMaxTasks())
	if limit <= 0 {
		limit = 1000
	}
	out := &tasksv1.GetTaskSnapshotResponse{TaskSummary: &tasksv1.TaskSummary{}, Sequence: seq}
	members := make([]string, len(entries))
	for i, e := range entries {
		members[i] = e.Member
	}
	docs, err := a.store.GetMany(ctx, taskKeys(tenant, members)...)
	if err != nil {
		return nil, err
	}
	sum := out.TaskSummary
	var recent []*tasksv1.Task
	for _, d := range docs {
		if d == nil {
			continue
		}
		t := &tasksv1.Task{}
		if err := proto.Unmarshal(d, t); err != nil {
			return nil, err
		}
		s := t.GetStatus()
		switch {
		case domain.IsTerminal(s):
			sum.Terminal++
			recent = append(recent, t)
		default:
			sum.Active++
		}
		switch {
		case s == domain.Failed:
			sum.Failed++
		case s == domain.Lost:
			sum.Lost++
		case domain.IsWaiting(s):
			sum.Waiting++
		case s == domain.Blocked:
			sum.Blocked++
		}
		if len(out.Tasks) >= limit {
			out.Truncated = true
			continue
		}
		out.Tasks = append(out.Tasks, t)
		for _, e := range t.GetEdges() {
			edge := proto.Clone(e).(*tasksv1.Edge)
			edge.SourceTaskId = t.GetTaskId()
			out.TaskGraph = append(out.TaskGraph, edge)
		}
		if n := len(t.GetAttempts()); n > 0 {
			// The active or most recent attempt of each task.
			out.Attempts = append(out.Attempts, t.GetAttempts()[n-1])
		}
		if s == domain.Blocked || domain.IsWaiting(s) {
			out.BlockedTasks = append(out.BlockedTasks, &tasksv1.BlockedTask{TaskId: t.GetTaskId(), Blockers: domain.UnfinishedBlockers(t), StatusReason: t.GetStatusReason()})
		}
		d := t.GetProgress().GetDeliveryState()
		if d == tasksv1.DeliveryState_DELIVERY_STATE_UNSPECIFIED {
			// Nothing was reported: not inferred delivered. A task still
			// running may deliver later; an ended one never reported it.
			d = tasksv1.DeliveryState_DELIVERY_STATE_PENDING
			if domain.IsTerminal(s) && s != domain.Completed {
				d = tasksv1.DeliveryState_DELIVERY_STATE_NOT_APPLICABLE
			}
		}
		out.DeliveryState = append(out.DeliveryState, &tasksv1.TaskDelivery{TaskId: t.GetTaskId(), DeliveryState: d})
	}
	for i := len(recent) - 1; i >= 0 && len(sum.RecentTerminalTaskIds) < 10; i-- {
		sum.RecentTerminalTaskIds = append(sum.RecentTerminalTaskIds, recent[i].GetTaskId())
	}
	return out, nil
}
