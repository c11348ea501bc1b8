package all_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/kit"
)

// TestEveryRegisteredMethodDeclaresARole registers the five services the
// binary runs and walks every method of every service descriptor they
// registered: each must declare the role it needs.
func TestEveryRegisteredMethodDeclaresARole(t *testing.T) {
	log, err := eventlog.Open(context.Background(), natstest.Connect(t, natstest.Server(t)), eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	for _, name := range all.Names {
		svc, err := all.New(name, kit.Deps{Log: log, Store: projection.NewMemory()})
		if err != nil {
			t.Fatal(err)
		}
		svc.Register(g)
	}
	n := 0
	for svc, info := range g.GetServiceInfo() {
		for _, m := range info.Methods {
			n++
			d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc + "." + m.Name))
			if err != nil {
				t.Errorf("%s/%s: no descriptor: %v", svc, m.Name, err)
				continue
			}
			if _, ok := auth.AccessOf(d.(protoreflect.MethodDescriptor)); !ok {
				t.Errorf("%s/%s declares no role: add option (agentruntime.auth.v1.access) to the rpc", svc, m.Name)
			}
		}
	}
	if n < 90 {
		t.Fatalf("the five services registered only %d methods", n)
	}
}
