package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/pkg/fault"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// A benchmark run's definitions, its dataset version and its
// configurations, are immutable facts recorded once each: a runner that
// records the same facts again (a retry, a second trial of the run) appends
// nothing, and different facts under the same name are refused, because a
// comparison across trials is only valid if every trial ran the same
// dataset version and its named configuration (the Agent Runtime standard,
// Benchmark instrumentation, "Anti-patterns").

// Errors of definition commands.
var (
	ErrDatasetConflict       = errors.New("dataset version already recorded with other facts")
	ErrConfigurationConflict = errors.New("configuration already recorded with other facts")
)

// Definition is a decided definition fact: the event, the aggregate id it
// is recorded on (one per dataset version or configuration id, hashed
// because dataset versions need not be ids) and the conflict error a
// different fact under the same name is.
type Definition struct {
	Event       *eventsv1.RuntimeEvent
	AggregateID string
	Conflict    error
}

// DatasetResolved decides benchmark.dataset.resolved.
func DatasetResolved(tenant, session string, d *eventsv1.BenchmarkDatasetResolved) (*Definition, error) {
	switch {
	case d.GetDatasetId() == "":
		return nil, fault.Invalid("dataset.dataset_id", "required")
	case d.GetDatasetVersion() == "":
		return nil, fault.Invalid("dataset.dataset_version", "required: a dataset is resolved to a frozen version")
	}
	refs := map[string]string{}
	for k, v := range map[string]string{"datasetRef": d.GetDatasetRef(), "harborRegistryRef": d.GetHarborRegistryRef(), "harborLocalPath": d.GetHarborLocalPath()} {
		if v != "" {
			refs[k] = v
		}
	}
	ev := &eventsv1.RuntimeEvent{Type: events.TypeBenchmarkDatasetResolved, Refs: refs,
		Payload: &eventsv1.RuntimeEvent_BenchmarkDatasetResolved{BenchmarkDatasetResolved: proto.Clone(d).(*eventsv1.BenchmarkDatasetResolved)}}
	return definition(tenant, session, "ds", refused(ReasonDatasetConflict, "dataset.dataset_version", fmt.Errorf("%w: %s version %s", ErrDatasetConflict, d.GetDatasetId(), d.GetDatasetVersion())), ev, d, d.GetDatasetId(), d.GetDatasetVersion())
}

// ConfigurationResolved decides benchmark.configuration.resolved.
func ConfigurationResolved(tenant, session string, c *eventsv1.BenchmarkConfigurationResolved) (*Definition, error) {
	if c.GetConfigurationId() == "" {
		return nil, fault.Invalid("configuration.configuration_id", "required")
	}
	switch c.GetRole() {
	case "", "baseline", "candidate", "control":
	default:
		return nil, fault.Invalid("configuration.role", "must be baseline, candidate or control")
	}
	if c.GetBaselineConfigurationId() == c.GetConfigurationId() {
		return nil, fault.Invalid("configuration.baseline_configuration_id", "a configuration is not its own baseline")
	}
	ev := &eventsv1.RuntimeEvent{Type: events.TypeBenchmarkConfigurationResolved, Refs: map[string]string{},
		Payload: &eventsv1.RuntimeEvent_BenchmarkConfigurationResolved{BenchmarkConfigurationResolved: proto.Clone(c).(*eventsv1.BenchmarkConfigurationResolved)}}
	return definition(tenant, session, "cfg", refused(ReasonConfigurationConflict, "configuration.configuration_id", fmt.Errorf("%w: %s", ErrConfigurationConflict, c.GetConfigurationId())), ev, c, c.GetConfigurationId())
}

// definition names the fact's aggregate by its key and its event by its
// key and content: the same facts get the same event id (a retry is
// de-duplicated by the log), other facts another id, which the log refuses
// on an aggregate that already has its one event.
func definition(tenant, session, prefix string, conflict error, ev *eventsv1.RuntimeEvent, content proto.Message, key ...string) (*Definition, error) {
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("definition content: %w", err)
	}
	aggID := definitionAggregateID(prefix, key...)
	idHash := sha256.Sum256([]byte(tenant + "\x00" + session + "\x00" + aggID + "\x00" + string(body)))
	ev.EventId = "evt_" + hex.EncodeToString(idHash[:20])
	return &Definition{Event: ev, AggregateID: aggID, Conflict: conflict}, nil
}

// ConfigurationAggregateID is the aggregate a configuration's
// benchmark.configuration.resolved is recorded on, in the session it was
// recorded in.
func ConfigurationAggregateID(configurationID string) string {
	return definitionAggregateID("cfg", configurationID)
}

func definitionAggregateID(prefix string, key ...string) string {
	keyHash := sha256.New()
	for _, k := range key {
		keyHash.Write([]byte(k))
		keyHash.Write([]byte{0})
	}
	return prefix + "_" + hex.EncodeToString(keyHash.Sum(nil))[:32]
}
