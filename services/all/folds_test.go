package all_test

import (
	"slices"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/kit"
)

// The static list of folds (what names a store's generation and what
// `agentruntime version` prints) is what each service runs: a projection
// added to a service without a fold version, or a version constant the
// projection does not answer, fails here.
func TestFoldsAreWhatTheServicesRun(t *testing.T) {
	log, err := eventlog.Open(t.Context(), natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range all.Names {
		s, err := all.New(name, kit.Deps{Log: log, Store: projection.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		p, ok := s.(kit.Projector)
		if !ok {
			t.Errorf("%s runs no projections (kit.Projector)", name)
			continue
		}
		var got []projection.Fold
		for _, pr := range p.Projections() {
			v, ok := pr.(interface{ FoldVersion() int })
			if !ok {
				t.Errorf("%s: projection %s declares no FoldVersion", name, pr.Name())
				continue
			}
			got = append(got, projection.Fold{Name: pr.Name(), Version: v.FoldVersion()})
		}
		if want := all.Folds[name]; !slices.Equal(got, want) {
			t.Errorf("%s runs %v, all.Folds says %v", name, got, want)
		}
		if g := all.Generation(name); !g.Covers(all.Folds[name][0].Name) || g.ID == "" {
			t.Errorf("%s: generation %v does not cover its folds", name, g)
		}
	}
}
