package auth_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentruntime/agentruntime/pkg/auth"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/routing/v1"
	_ "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/tasks/v1"
)

var update = flag.Bool("update", false, "rewrite the role matrix in docs/security.md from the protos")

const (
	securityDoc = "../../docs/security.md"
	matrixBegin = "<!-- role matrix: generated from the protos' (agentruntime.auth.v1.access) options by `go test ./pkg/auth -run TestSecurityDocMatrix -update`; do not edit -->\n"
	matrixEnd   = "<!-- end of role matrix -->\n"
)

// TestSecurityDocMatrix keeps the role matrix of docs/security.md equal to
// what the protos declare, so the two cannot drift.
func TestSecurityDocMatrix(t *testing.T) {
	var services []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if strings.HasPrefix(string(fd.Package()), "agentruntime.") {
			for i := range fd.Services().Len() {
				services = append(services, fd.Services().Get(i))
			}
		}
		return true
	})
	want := auth.Matrix(services)
	raw, err := os.ReadFile(securityDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, matrixBegin)
	_, after, ok2 := strings.Cut(rest, matrixEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the role matrix markers:\n%s%s", securityDoc, matrixBegin, matrixEnd)
	}
	fresh := before + matrixBegin + "\n" + want + "\n" + matrixEnd + after
	if fresh == doc {
		return
	}
	if *update {
		if err := os.WriteFile(securityDoc, []byte(fresh), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the role matrix in docs/security.md differs from the protos; run: go test ./pkg/auth -run TestSecurityDocMatrix -update")
}
