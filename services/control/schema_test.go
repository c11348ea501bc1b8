package control_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// An action's response schema is the caller's text: it may not make the
// server read a file (its bytes would leak through the error), and a
// response of a few bytes of brackets may not hold the server for seconds.
func TestActionSchemasLoadNothingAndBoundTheirDepth(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))

	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"string","description":"TOPSECRET-42"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
		ActionType: "input", Decisions: []string{"a"}, JsonSchema: `{"$ref":"file://` + secret + `"}`})
	assertCode(t, err, codes.InvalidArgument, "json_schema")
	if strings.Contains(status.Convert(err).Message(), "TOPSECRET") {
		t.Fatalf("the refusal shows the file: %v", err)
	}

	deepSchema := strings.Repeat(`{"items":`, 20) + `{}` + strings.Repeat(`}`, 20)
	_, err = h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
		ActionType: "input", Decisions: []string{"a"}, JsonSchema: deepSchema})
	assertCode(t, err, codes.InvalidArgument, "json_schema")

	// Each level of the response tries both alternatives: 2^depth.
	branching := `{"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}}]}`
	ra, err := h.client.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
		ActionId: "act_deep", ActionType: "input", Decisions: []string{"a"}, JsonSchema: branching})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: ra.Action.ActionId, Decision: "a",
		PayloadJson: strings.Repeat("[", 30) + strings.Repeat("]", 30)})
	assertCode(t, err, codes.InvalidArgument, "payload_json")
	// A response within the bound is validated as before.
	if _, err := h.client.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: ra.Action.ActionId, Decision: "a",
		PayloadJson: "[[[]]]"}); err != nil {
		t.Fatal(err)
	}
}
