package conformance_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/spec/conformance"
)

// The profile's own fixtures must pass: a sanity check of the validator
// (schemas compiled, cross-host refs resolved, formats asserted).
func TestLimeProfileFixturesValidate(t *testing.T) {
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/lime-profile/*.json")
	if len(files) != 7 {
		t.Fatalf("want the 7 vendored fixtures, found %d", len(files))
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		switch {
		case strings.HasSuffix(name, "-event.json"):
			err = v.Event(doc, true)
		case name == "thread-read-snapshot.json":
			err = v.Snapshot(doc, true)
		default:
			continue // the trial pack has no published schema
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// And the validator must reject: a profile event without sessionId, a
// benchmark event without its benchmark object, a string sequence, a bad
// timestamp, a snapshot thread with an unknown status.
func TestValidatorRejects(t *testing.T) {
	v, err := conformance.New()
	if err != nil {
		t.Fatal(err)
	}
	base := `"eventId":"e1","timestamp":"2026-05-11T10:00:00Z","schemaVersion":"lime-profile-0.4.0","runtimeId":"r","sequence":1,"payload":{}`
	for name, doc := range map[string]string{
		"no session":       `{"type":"session.created",` + base + `}`,
		"no benchmark":     `{"type":"benchmark.comparison.completed","sessionId":"s",` + base + `,"comparison":{},"refs":{}}`,
		"tool without ids": `{"type":"tool.started","sessionId":"s","threadId":"t","turnId":"u",` + base + `}`,
	} {
		if err := v.Event([]byte(doc), true); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
	for name, doc := range map[string]string{
		"string sequence": `{"type":"session.created","eventId":"e","timestamp":"2026-05-11T10:00:00Z","sequence":"1"}`,
		"bad timestamp":   `{"type":"session.created","eventId":"e","timestamp":"yesterday"}`,
		"unknown type":    `{"type":"session.exploded","eventId":"e","timestamp":"2026-05-11T10:00:00Z"}`,
	} {
		if err := v.Event([]byte(doc), false); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
	if err := v.Snapshot([]byte(`{"schemaVersion":"x","sessionId":"s","threads":[{"threadId":"t","status":"exploded"}]}`), false); err == nil {
		t.Error("snapshot with an unknown thread status accepted")
	}
}
