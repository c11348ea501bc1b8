package control_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/control/readmodel"
)

func snapshotSchemas(t *testing.T) (core, lime *jsonschema.Schema) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat() // date-time is checked, not just annotated
	for _, f := range []string{"agentruntime-snapshot.schema.json", "agentruntime-lime-profile-snapshot.schema.json"} {
		raw, err := os.ReadFile("readmodel/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		// The Lime schema refers to the core one relatively.
		if err := c.AddResource("https://limecloud.github.io/agentruntime/schemas/"+f, doc); err != nil {
			t.Fatal(err)
		}
		if f == "agentruntime-snapshot.schema.json" {
			if err := c.AddResource("https://agentruntime.example/schemas/"+f, doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	core, err := c.Compile("https://agentruntime.example/schemas/agentruntime-snapshot.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	lime, err = c.Compile("https://limecloud.github.io/agentruntime/schemas/agentruntime-lime-profile-snapshot.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return core, lime
}

func validate(t *testing.T, s *jsonschema.Schema, v map[string]any) error {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(doc)
}

// The session snapshot, from a real run with every thread status the read
// model has, validates against the public snapshot schema and the Lime
// profile's; the profile's own fixture validates too (a check of the
// validator).
func TestSessionSnapshotConformsToTheSchemas(t *testing.T) {
	core, lime := snapshotSchemas(t)
	fixture, err := os.ReadFile("readmodel/testdata/thread-read-snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx map[string]any
	if err := json.Unmarshal(fixture, &fx); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, lime, fx); err != nil {
		t.Fatalf("the Lime fixture does not validate: %v", err)
	}

	h := newHarness(t)
	ctx := acme(t)
	busy := h.submit(ctx, "s1", "busy").Turn
	h.submit(ctx, "s1", "busy") // queued
	h.report(ctx, started(busy.TurnId))
	waiting := h.submit(ctx, "s1", "waiting").Turn
	if _, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "waiting", TurnId: waiting.TurnId, ActionType: "permission", Decisions: []string{"allow_once", "deny"}}); err != nil {
		t.Fatal(err)
	}
	done := h.submit(ctx, "s1", "done").Turn
	routed := &eventsv1.RuntimeEvent{Type: "routing.single_candidate", SessionId: "s1", ThreadId: "done", TurnId: done.TurnId,
		Payload: &eventsv1.RuntimeEvent_RoutingSingleCandidate{RoutingSingleCandidate: &eventsv1.RoutingSingleCandidate{Decision: &eventsv1.RoutingDecision{
			SelectedProviderId: "openai", SelectedModelId: "gpt-5.4", CandidateCount: 1}}}}
	if _, err := h.log.Append(ctx, eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "routing", ID: done.TurnId}, eventlog.Any, routed); err != nil {
		t.Fatal(err)
	}
	last := h.report(ctx, started(done.TurnId), completed(done.TurnId))

	sess, err := h.client.GetSession(ctx, &controlv1.GetSessionRequest{SessionId: "s1", MinSequence: last.Sequence, HistoryLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]bool{}
	for _, th := range sess.Threads {
		statuses[readmodel.SnapshotStatus(th.Status)] = true
	}
	if !statuses["running"] || !statuses["blocked"] || !statuses["idle"] {
		t.Fatalf("the run did not produce the statuses it should: %v", statuses)
	}
	for _, profile := range []bool{false, true} {
		snap := readmodel.SessionSnapshotJSON("rt_test", sess.Session, sess.Threads, sess.History, profile)
		if err := validate(t, core, snap); err != nil {
			t.Errorf("core schema (lime=%v): %v", profile, err)
		}
		if profile {
			if err := validate(t, lime, snap); err != nil {
				t.Errorf("Lime profile schema: %v", err)
			}
			if rl := snap["routingLimitSummary"].(map[string]any); rl["selectedModel"] != "gpt-5.4" || rl["singleCandidate"] != true {
				t.Errorf("routingLimitSummary %v", rl)
			}
		}
	}
	// The validator has teeth: a status outside the spec's is refused.
	bad := readmodel.SessionSnapshotJSON("rt_test", sess.Session, sess.Threads, sess.History, true)
	bad["threads"].([]any)[0].(map[string]any)["status"] = "waiting_permission"
	if validate(t, lime, bad) == nil {
		t.Fatal("a snapshot with a non-spec status validated")
	}
}
