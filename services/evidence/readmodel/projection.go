// Package readmodel holds the evidence service's read model: per-session
// summaries, trace, export and trial indexes, and trials, folded from the
// whole log; and the keys the app layer reads them by.
package readmodel

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
)

// Name keys the evidence projection's checkpoint.
const Name = "evidence.sessions"

// FoldVersion is the evidence projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md).
const FoldVersion = 1

// Keys of the evidence read model. Each event touches a handful of small
// documents, never a document that grows with the session, so the
// projection's cost per event does not grow with the log.
func SummaryKey(tenant, session string) string { return "evidence:sum:" + tenant + ":" + session }
func TracesIndex(tenant, session string) string {
	return "evidence:traces:" + tenant + ":" + session
}
func ExportsIndex(tenant, session string) string {
	return "evidence:exports:" + tenant + ":" + session
}
func TrialsIndex(tenant, session string) string { return "evidence:trials:" + tenant + ":" + session }
func TrialKey(tenant, session, trial string) string {
	return "evidence:trial:" + tenant + ":" + session + ":" + trial
}

// Summary is a session's evidence summary document.
type Summary struct {
	Count     uint64            `json:"count"`
	Counts    map[string]uint64 `json:"counts"`
	WithTrace uint64            `json:"withTrace"`
	First     uint64            `json:"first"`
	Last      uint64            `json:"last"`
}

// TrialDoc stores a trial's facts as the events that stated them; the read
// model is their fold (domain.ApplyTrial), so it cannot drift from the log.
type TrialDoc struct {
	Started []byte `json:"started"`
	Ended   []byte `json:"ended,omitempty"`
	Reward  []byte `json:"reward,omitempty"`
	Export  []byte `json:"export,omitempty"`
	Last    uint64 `json:"last"`
}

func (d *TrialDoc) Trial() (*domain.Trial, error) {
	var t *domain.Trial
	for _, b := range [][]byte{d.Started, d.Ended, d.Reward, d.Export} {
		if b == nil {
			continue
		}
		ev := &eventsv1.RuntimeEvent{}
		if err := proto.Unmarshal(b, ev); err != nil {
			return nil, err
		}
		t = domain.ApplyTrial(t, ev)
	}
	if t != nil {
		t.LastSequence = d.Last
	}
	return t, nil
}

// Projection is the evidence read model over the whole log: per tenant and
// session, event counts, trace ids, evidence exports and benchmark trials.
type Projection struct{}

// Name implements projector.Projection.
func (Projection) Name() string { return Name }

// FoldVersion is the projection's fold version (projection.Fold).
func (Projection) FoldVersion() int { return FoldVersion }

// Filters implements projector.Projection: the whole log.
func (Projection) Filters() []string { return nil }

// Project implements projector.Projection.
func (Projection) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	tenant, session := ev.GetTenantId(), ev.GetSessionId()
	if session == "" {
		session = eventlog.NoSession
	}
	var b projection.Batch
	sum := Summary{Counts: map[string]uint64{}}
	key := SummaryKey(tenant, session)
	raw, err := store.Get(ctx, key)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &sum); err != nil {
			return b, err
		}
	case !errors.Is(err, projection.ErrNotFound):
		return b, err
	}
	sum.Count++
	sum.Counts[ev.GetType()]++
	if sum.First == 0 {
		sum.First = ev.GetSequence()
	}
	sum.Last = ev.GetSequence()
	if t := ev.GetTraceId(); t != "" {
		sum.WithTrace++
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: TracesIndex(tenant, session), Member: t, Score: float64(ev.GetSequence())})
	}
	doc, err := json.Marshal(sum)
	if err != nil {
		return b, err
	}
	b.Puts = append(b.Puts, projection.KV{Key: key, Value: doc})

	trialID := ""
	switch p := ev.GetPayload().(type) {
	case *eventsv1.RuntimeEvent_EvidenceChanged:
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: ExportsIndex(tenant, session), Member: ev.GetEvidenceId(), Score: float64(ev.GetSequence())})
		if p.EvidenceChanged.GetKind() == "benchmark_trial" {
			trialID = p.EvidenceChanged.GetScopeId()
		}
	case *eventsv1.RuntimeEvent_BenchmarkTrialStarted:
		trialID = p.BenchmarkTrialStarted.GetBenchmark().GetTrialId()
	case *eventsv1.RuntimeEvent_BenchmarkTrialCompleted:
		trialID = p.BenchmarkTrialCompleted.GetBenchmark().GetTrialId()
	case *eventsv1.RuntimeEvent_BenchmarkTrialFailed:
		trialID = p.BenchmarkTrialFailed.GetBenchmark().GetTrialId()
	case *eventsv1.RuntimeEvent_BenchmarkRewardRecorded:
		trialID = p.BenchmarkRewardRecorded.GetBenchmark().GetTrialId()
	}
	if trialID == "" {
		return b, nil
	}
	tk := TrialKey(tenant, session, trialID)
	var td TrialDoc
	raw, err = store.Get(ctx, tk)
	switch {
	case err == nil:
		if err := json.Unmarshal(raw, &td); err != nil {
			return b, err
		}
	case !errors.Is(err, projection.ErrNotFound):
		return b, err
	}
	evBytes, err := proto.Marshal(ev)
	if err != nil {
		return b, err
	}
	switch {
	case ev.GetType() == events.TypeBenchmarkTrialStarted:
		td.Started = evBytes
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: TrialsIndex(tenant, session), Member: trialID, Score: float64(ev.GetSequence())})
	case strings.HasPrefix(ev.GetType(), "benchmark.trial."):
		td.Ended = evBytes
	case ev.GetType() == events.TypeBenchmarkRewardRecorded:
		td.Reward = evBytes
	default:
		td.Export = evBytes
	}
	td.Last = ev.GetSequence()
	doc, err = json.Marshal(td)
	if err != nil {
		return b, err
	}
	b.Puts = append(b.Puts, projection.KV{Key: tk, Value: doc})
	return b, nil
}
