package domain_test

import (
	"errors"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/evidence/domain"
)

func TestDatasetResolved(t *testing.T) {
	base := func() *eventsv1.BenchmarkDatasetResolved {
		return &eventsv1.BenchmarkDatasetResolved{DatasetId: "ds", DatasetVersion: "2026-05-frozen", DatasetRef: "benchmarks/ds", TaskIds: []string{"a"}}
	}
	first, err := domain.DatasetResolved("acme", "s1", base())
	if err != nil {
		t.Fatal(err)
	}
	if first.Event.GetType() != "benchmark.dataset.resolved" || first.Event.GetRefs()["datasetRef"] != "benchmarks/ds" || !errors.Is(first.Conflict, domain.ErrDatasetConflict) {
		t.Fatalf("decided %v", first)
	}
	same, _ := domain.DatasetResolved("acme", "s1", base())
	other := base()
	other.TaskIds = []string{"a", "b"}
	changed, _ := domain.DatasetResolved("acme", "s1", other)
	version := base()
	version.DatasetVersion = "2026-06-frozen"
	next, _ := domain.DatasetResolved("acme", "s1", version)
	elsewhere, _ := domain.DatasetResolved("globex", "s1", base())
	switch {
	case same.Event.GetEventId() != first.Event.GetEventId() || same.AggregateID != first.AggregateID:
		t.Error("the same facts must decide the same event on the same aggregate (a retry is deduplicated)")
	case changed.AggregateID != first.AggregateID || changed.Event.GetEventId() == first.Event.GetEventId():
		t.Error("other facts for the same version must target the same aggregate with another event (a conflict)")
	case next.AggregateID == first.AggregateID:
		t.Error("another version is another fact")
	case elsewhere.Event.GetEventId() == first.Event.GetEventId():
		t.Error("event ids must differ across tenants (the log de-duplicates stream-wide)")
	}
	for _, c := range []struct {
		d     *eventsv1.BenchmarkDatasetResolved
		field string
	}{
		{&eventsv1.BenchmarkDatasetResolved{DatasetVersion: "v"}, "dataset.dataset_id"},
		{&eventsv1.BenchmarkDatasetResolved{DatasetId: "ds"}, "dataset.dataset_version"},
	} {
		_, err := domain.DatasetResolved("acme", "s1", c.d)
		var inv *fault.Error
		if !errors.As(err, &inv) || inv.Field() != c.field {
			t.Errorf("%v: %v, want invalid %s", c.d, err, c.field)
		}
	}
}

func TestConfigurationResolved(t *testing.T) {
	for _, c := range []struct {
		cfg   *eventsv1.BenchmarkConfigurationResolved
		field string
	}{
		{&eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "cand", Role: "candidate", BaselineConfigurationId: "base"}, ""},
		{&eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "base", Role: "baseline"}, ""},
		{&eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "ctl"}, ""},
		{&eventsv1.BenchmarkConfigurationResolved{Role: "baseline"}, "configuration.configuration_id"},
		{&eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "x", Role: "champion"}, "configuration.role"},
		{&eventsv1.BenchmarkConfigurationResolved{ConfigurationId: "x", BaselineConfigurationId: "x"}, "configuration.baseline_configuration_id"},
	} {
		d, err := domain.ConfigurationResolved("acme", "s1", c.cfg)
		var inv *fault.Error
		switch {
		case c.field == "" && (err != nil || d.Event.GetType() != "benchmark.configuration.resolved" || !errors.Is(d.Conflict, domain.ErrConfigurationConflict)):
			t.Errorf("%v: %v %v", c.cfg, d, err)
		case c.field != "" && (!errors.As(err, &inv) || inv.Field() != c.field):
			t.Errorf("%v: %v, want invalid %s", c.cfg, err, c.field)
		}
	}
}
