package evidence_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	routingv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	tasksv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
	"github.com/agentruntime/agentruntime/services/all/alltest"
)

// system runs the five real services in process, as `agentruntime dev`
// does: one JetStream, each service with its own in-memory store, one gRPC
// server with API-key auth for two tenants.
type system struct {
	log        *eventlog.Log
	control    controlv1.ControlServiceClient
	tasks      tasksv1.TasksServiceClient
	routing    routingv1.RoutingServiceClient
	permission permissionv1.PermissionServiceClient
	evidence   evidencev1.EvidenceServiceClient
}

const (
	keyAcme   = "k-acme-0123456789"
	keyGlobex = "k-globex-0123456789"
)

// One model only: every route is a single candidate.
const registry = `
providers:
  - {id: openai, credential_status: present, regions: [us]}
models:
  - id: gpt-5-4
    provider: openai
    capabilities: [tools, vision]
    context_window: 400000
    prices_usd_per_million: {input: 1.25, output: 10}
`

func startSystem(t testing.TB) *system {
	t.Helper()
	return startSystemWith(t, registry)
}

// startSystemWith starts the system with another model registry.
func startSystemWith(t testing.TB, models string) *system {
	t.Helper()
	st := alltest.Start(t, alltest.Options{Models: models, Keys: []auth.APIKeyConfig{
		{Name: "alice", Tenant: "acme", Role: "admin", Key: keyAcme},
		{Name: "gus", Tenant: "globex", Role: "admin", Key: keyGlobex},
	}})
	return &system{log: st.Log, control: st.Control, tasks: st.Tasks, routing: st.Routing, permission: st.Permission, evidence: st.Evidence}
}

func as(t testing.TB, key string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
