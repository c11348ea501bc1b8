// Package conformance validates JSON documents against the Agent Runtime
// spec's published schemas (embedded exact copies, see README.md): the core
// event and snapshot schemas and the Lime profile's stricter ones. Exports
// are checked with it in tests; it is usable at run time too.
package conformance

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schemas/*.json
var schemas embed.FS

// The schemas' $ids. The Lime profile schemas refer to the core ones
// relative to their own $id, which is on another host than the core's own
// $id, so the core documents are also registered under those URLs.
const (
	coreEvent       = "https://agentruntime.example/schemas/agentruntime-event.schema.json"
	coreSnapshot    = "https://agentruntime.example/schemas/agentruntime-snapshot.schema.json"
	limeBase        = "https://limecloud.github.io/agentruntime/schemas/"
	profileEvent    = limeBase + "agentruntime-lime-profile-event.schema.json"
	profileSnapshot = limeBase + "agentruntime-lime-profile-snapshot.schema.json"
)

// Validator holds the compiled schemas. Safe for concurrent use.
type Validator struct {
	event, snapshot               *jsonschema.Schema
	profileEvent, profileSnapshot *jsonschema.Schema
}

// New compiles the embedded schemas, asserting formats (date-time), which
// the 2020-12 draft otherwise treats as annotations only.
func New() (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	load := func(file string) (any, error) {
		b, err := schemas.ReadFile(path.Join("schemas", file))
		if err != nil {
			return nil, err
		}
		return jsonschema.UnmarshalJSON(bytes.NewReader(b))
	}
	for url, file := range map[string]string{
		coreEvent:    "agentruntime-event.schema.json",
		coreSnapshot: "agentruntime-snapshot.schema.json",
		limeBase + "agentruntime-event.schema.json":    "agentruntime-event.schema.json",
		limeBase + "agentruntime-snapshot.schema.json": "agentruntime-snapshot.schema.json",
		profileEvent:    "agentruntime-lime-profile-event.schema.json",
		profileSnapshot: "agentruntime-lime-profile-snapshot.schema.json",
	} {
		doc, err := load(file)
		if err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", file, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("conformance: %s: %w", file, err)
		}
	}
	v := &Validator{}
	for _, s := range []struct {
		url string
		to  **jsonschema.Schema
	}{{coreEvent, &v.event}, {coreSnapshot, &v.snapshot}, {profileEvent, &v.profileEvent}, {profileSnapshot, &v.profileSnapshot}} {
		sch, err := c.Compile(s.url)
		if err != nil {
			return nil, fmt.Errorf("conformance: compile %s: %w", s.url, err)
		}
		*s.to = sch
	}
	return v, nil
}

// Event validates a JSON event against the core schema and, with profile,
// the Lime profile event schema too.
func (v *Validator) Event(doc []byte, profile bool) error {
	return v.check(doc, v.event, profile, v.profileEvent)
}

// Snapshot validates a JSON snapshot likewise.
func (v *Validator) Snapshot(doc []byte, profile bool) error {
	return v.check(doc, v.snapshot, profile, v.profileSnapshot)
}

func (v *Validator) check(doc []byte, core *jsonschema.Schema, profile bool, lime *jsonschema.Schema) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("conformance: not JSON: %w", err)
	}
	if err := core.Validate(inst); err != nil {
		return fmt.Errorf("core schema: %w", err)
	}
	if profile {
		if err := lime.Validate(inst); err != nil {
			return fmt.Errorf("lime profile schema: %w", err)
		}
	}
	return nil
}

var coreTypes = sync.OnceValue(func() map[string]bool {
	b, err := schemas.ReadFile("schemas/agentruntime-event.schema.json")
	if err != nil {
		panic("conformance: embedded core event schema: " + err.Error())
	}
	var doc struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Properties.Type.Enum) == 0 {
		panic(fmt.Sprintf("conformance: embedded core event schema has no type enum: %v", err))
	}
	out := make(map[string]bool, len(doc.Properties.Type.Enum))
	for _, t := range doc.Properties.Type.Enum {
		out[t] = true
	}
	return out
})

// SchemaEventType says whether the published core event schema lists an
// event type. The spec's contract pages name a few classes its schema's
// closed enum does not (subagent.output, channel.peer_task.*): no document
// of those types can validate, whatever its content.
func SchemaEventType(typ string) bool { return coreTypes()[typ] }
