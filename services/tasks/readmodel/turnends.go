package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
)

// TurnEndsName keys the turn-ends projection's checkpoint.
const TurnEndsName = "tasks.turn-ends"

// TurnEndsFoldVersion is the turn-ends projection's fold version
// (projection.Fold): bump it with any change to what it stores or how it
// folds (docs/upgrading.md). 2: a task run's turn keeps its last activity
// and its open waits (TaskTurn).
const TurnEndsFoldVersion = 2

// TurnEnds records, for the turns that run tasks, how they ended and how
// they are doing meanwhile. How they ended: the half of the rendezvous
// between a turn's end (a control fact) and the delegation of the run it
// carries (a task fact) that the tasks service keeps, so that whichever
// of the two comes second settles the run (app.settleCarried). A turn
// submitted with the metadata task_run_id (a task run's turn) is noted at
// turn.submitted under TaskTurnKey; its turn.completed or turn.failed is
// then stored whole under TurnEndKey, and the note removed. Meanwhile the
// note follows the turn's activity and waits (TaskTurn), which the
// sweeper reads for a run's inactivity_timeout (app.SweepOnce): a carried
// run's inactivity follows its turn.
//
// Other turns cost a skipped event: the types the note follows
// (activity) cost one Get that finds nothing, the others a type check.
// The note is keyed by the turn and written only from the turn's thread
// events, so from one partition (the turn's session's).
type TurnEnds struct{ Subjects eventlog.Subjects }

func (TurnEnds) Name() string { return TurnEndsName }

// FoldVersion is the projection's fold version (projection.Fold).
func (TurnEnds) FoldVersion() int { return TurnEndsFoldVersion }

// Filters: every thread aggregate of every tenant (the control service's
// turn lifecycle facts).
func (p TurnEnds) Filters() []string { return []string{p.Subjects.Kind("*", "thread")} }

// TaskTurnKey notes a task run's turn until it ends: its value is a
// TaskTurn (JSON).
func TaskTurnKey(tenant, turn string) string { return "tasks:" + tenant + ":taskturn:" + turn }

// TurnEndKey holds the turn.completed or turn.failed of a task run's turn,
// its envelope's task_id and run_id set from the turn's metadata.
func TurnEndKey(tenant, turn string) string { return "tasks:" + tenant + ":turnend:" + turn }

// TaskTurn is what the projection keeps of a task run's turn until it
// ends: the task run from its metadata, when it last showed activity and
// what it waits for now.
type TaskTurn struct {
	TaskID string `json:"task_id"`
	RunID  string `json:"run_id"`
	// LastActivity is the time (Unix ns, from the event) of the turn's
	// last activity: a run of it starting (turn.started), a step boundary
	// (model.completed, tool.result), the answer to a wait
	// (action.resolved, run.status "resumed"). Zero: none since it was
	// submitted.
	LastActivity int64 `json:"last_activity,omitempty"`
	// Actions are the ids of the turn's actions not resolved yet
	// (action.required without its action.resolved): it waits for a
	// person in place. Several may be open at once.
	Actions []string `json:"actions,omitempty"`
	// Parked: the turn was handed back to wait for a person (run.status
	// "parked", reason other than "drain") and not resumed since.
	Parked bool `json:"parked,omitempty"`
}

// Waiting says whether the turn waits for a person now.
func (t *TaskTurn) Waiting() bool { return len(t.Actions) > 0 || t.Parked }

// LastActivityAt is LastActivity as a time; zero when there was none.
func (t *TaskTurn) LastActivityAt() time.Time {
	if t.LastActivity == 0 {
		return time.Time{}
	}
	return time.Unix(0, t.LastActivity)
}

// followed says whether the note of a task run's turn follows an event of
// the turn (activity or waits): the cheap check before a Get.
func followed(ev *eventsv1.RuntimeEvent) bool {
	switch ev.GetType() {
	case events.TypeTurnStarted, events.TypeModelCompleted, events.TypeToolResult,
		events.TypeActionRequired, events.TypeActionResolved:
		return true
	case events.TypeRunStatus:
		p := ev.GetRunStatus().GetPhase()
		return p == phaseParked || p == phaseResumed
	}
	return false
}

// The run.status phases the note follows (control's domain.PhaseParked,
// PhaseResumed; services/control/domain/attempts.go), and the park reason
// that is not a wait for a person (a worker stopping: the turn is
// claimable at once).
const (
	phaseParked  = "parked"
	phaseResumed = "resumed"
	parkDrain    = "drain"
)

// follow folds one followed event into the note.
func (t *TaskTurn) follow(ev *eventsv1.RuntimeEvent) {
	at := ev.GetTimestamp().AsTime().UnixNano()
	active := func() { t.LastActivity = max(t.LastActivity, at) }
	switch ev.GetType() {
	case events.TypeTurnStarted, events.TypeModelCompleted, events.TypeToolResult:
		active()
	case events.TypeActionRequired:
		if id := ev.GetActionId(); !slices.Contains(t.Actions, id) {
			t.Actions = append(t.Actions, id)
		}
	case events.TypeActionResolved:
		t.Actions = slices.DeleteFunc(t.Actions, func(id string) bool { return id == ev.GetActionId() })
		active()
	case events.TypeRunStatus:
		switch p := ev.GetRunStatus(); p.GetPhase() {
		case phaseParked:
			t.Parked = p.GetMetadata()["reason"] != parkDrain
		case phaseResumed:
			t.Parked = false
			active()
		}
	}
}

func (TurnEnds) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	var b projection.Batch
	tenant, turn := ev.GetTenantId(), ev.GetTurnId()
	if turn == "" {
		return b, nil
	}
	switch typ := ev.GetType(); {
	case typ == events.TypeTurnSubmitted:
		md := ev.GetTurnSubmitted().GetMetadata()
		if run := md["task_run_id"]; run != "" && md["task_id"] != "" {
			data, err := json.Marshal(&TaskTurn{TaskID: md["task_id"], RunID: run})
			if err != nil {
				return b, err
			}
			b.Puts = append(b.Puts, projection.KV{Key: TaskTurnKey(tenant, turn), Value: data})
		}
	case typ == events.TypeTurnCompleted, typ == events.TypeTurnFailed:
		tt, err := LoadTaskTurn(ctx, store, tenant, turn)
		if err != nil || tt == nil {
			return b, err
		}
		// The end keeps the task run its turn was submitted for in its
		// envelope (task_id, run_id).
		end := proto.Clone(ev).(*eventsv1.RuntimeEvent)
		end.TaskId, end.RunId = tt.TaskID, tt.RunID
		data, err := proto.Marshal(end)
		if err != nil {
			return b, err
		}
		b.Deletes = append(b.Deletes, TaskTurnKey(tenant, turn))
		b.Puts = append(b.Puts, projection.KV{Key: TurnEndKey(tenant, turn), Value: data})
	case followed(ev):
		tt, err := LoadTaskTurn(ctx, store, tenant, turn)
		if err != nil || tt == nil {
			return b, err
		}
		tt.follow(ev)
		data, err := json.Marshal(tt)
		if err != nil {
			return b, err
		}
		b.Puts = append(b.Puts, projection.KV{Key: TaskTurnKey(tenant, turn), Value: data})
	}
	return b, nil
}

// LoadTaskTurn reads the note of a task run's turn; nil when the turn is
// not a task run's or has ended (its end is stored: LoadTurnEnd).
func LoadTaskTurn(ctx context.Context, store projection.Store, tenant, turn string) (*TaskTurn, error) {
	data, err := store.Get(ctx, TaskTurnKey(tenant, turn))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tt := &TaskTurn{}
	return tt, json.Unmarshal(data, tt)
}

// LoadTurnEnd reads the stored end of a task run's turn; nil when it has
// not ended (or is not a task run's turn).
func LoadTurnEnd(ctx context.Context, store projection.Store, tenant, turn string) (*eventsv1.RuntimeEvent, error) {
	data, err := store.Get(ctx, TurnEndKey(tenant, turn))
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ev := &eventsv1.RuntimeEvent{}
	return ev, proto.Unmarshal(data, ev)
}
