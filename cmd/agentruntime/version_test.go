package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/services/all"
)

// `agentruntime version --json` on the real binary says what an operator
// compares across an upgrade: the version, the API packages, the event
// schema and every projection's fold version with its store's generation;
// the text form says the same for people.
func TestVersionSaysWhatAnUpgradeChanges(t *testing.T) {
	out, err := exec.Command(binary, "version", "--json").Output()
	if err != nil {
		t.Fatalf("version --json: %v", err)
	}
	var got buildInfo
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("version --json is not one JSON object: %v\n%s", err, out)
	}
	if got.Version != releaseVersion {
		t.Errorf("version %q, want %q", got.Version, releaseVersion)
	}
	if got.EventSchema != events.SchemaVersion {
		t.Errorf("event schema %q, want %q", got.EventSchema, events.SchemaVersion)
	}
	for _, pkg := range []string{"agentruntime.control.v1", "agentruntime.events.v1", "agentruntime.tasks.v1"} {
		if !slices.Contains(got.API, pkg) {
			t.Errorf("api %v lacks %s", got.API, pkg)
		}
	}
	var want []readModelInfo
	for _, service := range all.Names {
		for _, f := range all.Folds[service] {
			want = append(want, readModelInfo{service, f.Name, f.Version, all.Generation(service).ID})
		}
	}
	if !slices.Equal(got.ReadModels, want) {
		t.Errorf("read models %v, want %v", got.ReadModels, want)
	}

	text, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	if !strings.HasPrefix(string(text), "agentruntime "+releaseVersion+"\n") {
		t.Errorf("version's first line: %q", strings.SplitN(string(text), "\n", 2)[0])
	}
	for _, rm := range want {
		if line := rm.Projection + "  "; !strings.Contains(string(text), line) || !strings.Contains(string(text), strconv.Itoa(rm.FoldVersion)+"  "+rm.Generation) {
			t.Errorf("version does not list %s at fold version %d (%s):\n%s", rm.Projection, rm.FoldVersion, rm.Generation, text)
		}
	}
	if out, err := exec.Command(binary, "version", "extra").CombinedOutput(); err == nil || !strings.Contains(string(out), `unexpected argument "extra"`) {
		t.Errorf("version extra: err=%v output:\n%s", err, out)
	}
}
