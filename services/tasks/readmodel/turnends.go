package readmodel

import (
	"context"
	"errors"
	"strings"

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
// folds (docs/upgrading.md).
const TurnEndsFoldVersion = 1

// TurnEnds records how the turns that run tasks ended: the half of the
// rendezvous between a turn's end (a control fact) and the delegation of
// the run it carries (a task fact) that the tasks service keeps, so that
// whichever of the two comes second settles the run (app.settleCarried).
// A turn submitted with the metadata task_run_id (a task run's turn) is
// noted at turn.submitted; its turn.completed or turn.failed is then
// stored whole under TurnEndKey. Other turns cost one skipped event.
type TurnEnds struct{ Subjects eventlog.Subjects }

func (TurnEnds) Name() string { return TurnEndsName }

// FoldVersion is the projection's fold version (projection.Fold).
func (TurnEnds) FoldVersion() int { return TurnEndsFoldVersion }

// Filters: every thread aggregate of every tenant (the control service's
// turn lifecycle facts).
func (p TurnEnds) Filters() []string { return []string{p.Subjects.Kind("*", "thread")} }

// TaskTurnKey notes a task run's turn until it ends: its value is
// "<task_id>/<run_id>" from the turn's metadata.
func TaskTurnKey(tenant, turn string) string { return "tasks:" + tenant + ":taskturn:" + turn }

// TurnEndKey holds the turn.completed or turn.failed of a task run's turn,
// its envelope's task_id and run_id set from the turn's metadata.
func TurnEndKey(tenant, turn string) string { return "tasks:" + tenant + ":turnend:" + turn }

func (TurnEnds) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	var b projection.Batch
	tenant, turn := ev.GetTenantId(), ev.GetTurnId()
	if turn == "" {
		return b, nil
	}
	switch ev.GetType() {
	case events.TypeTurnSubmitted:
		md := ev.GetTurnSubmitted().GetMetadata()
		if run := md["task_run_id"]; run != "" && md["task_id"] != "" {
			b.Puts = append(b.Puts, projection.KV{Key: TaskTurnKey(tenant, turn), Value: []byte(md["task_id"] + "/" + run)})
		}
	case events.TypeTurnCompleted, events.TypeTurnFailed:
		v, err := store.Get(ctx, TaskTurnKey(tenant, turn))
		if errors.Is(err, projection.ErrNotFound) {
			return b, nil
		} else if err != nil {
			return b, err
		}
		// The end keeps the task run its turn was submitted for in its
		// envelope (task_id, run_id).
		end := proto.Clone(ev).(*eventsv1.RuntimeEvent)
		end.TaskId, end.RunId, _ = strings.Cut(string(v), "/")
		data, err := proto.Marshal(end)
		if err != nil {
			return b, err
		}
		b.Deletes = append(b.Deletes, TaskTurnKey(tenant, turn))
		b.Puts = append(b.Puts, projection.KV{Key: TurnEndKey(tenant, turn), Value: data})
	}
	return b, nil
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
