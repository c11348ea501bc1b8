package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/agentruntime/agentruntime/pkg/events"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// A push notification's body is the task as its events fold it: the
// StreamResponse of the task, another turn's events ignored.
func TestPushBodyIsTheTaskAsItsEventsFoldIt(t *testing.T) {
	ts := timestamppb.Now()
	evs := []*eventsv1.RuntimeEvent{
		{Type: events.TypeTurnSubmitted, TurnId: "turn_1", Sequence: 1, Timestamp: ts},
		{Type: events.TypeTurnStarted, TurnId: "turn_1", Sequence: 2, Timestamp: ts},
		{Type: events.TypeTurnFailed, TurnId: "turn_2", Sequence: 3, Timestamp: ts},
		{Type: events.TypeTurnCompleted, TurnId: "turn_1", Sequence: 4, Timestamp: ts,
			Payload: &eventsv1.RuntimeEvent_TurnCompleted{TurnCompleted: &eventsv1.TurnCompleted{Summary: "done"}}},
	}
	for _, c := range []struct {
		n     int
		state string
	}{{1, StateSubmitted}, {2, StateWorking}, {3, StateWorking}, {4, StateCompleted}} {
		raw, err := PushBody("turn_1", "s1", "th1", evs[:c.n])
		if err != nil {
			t.Fatal(err)
		}
		var got StreamResponse
		if err := json.Unmarshal(raw, &got); err != nil || got.Task == nil || got.StatusUpdate != nil {
			t.Fatalf("%s: %v, want a StreamResponse holding a task", raw, err)
		}
		if got.Task.ID != "turn_1" || got.Task.ContextID != "s1/th1" || got.Task.Status.State != c.state {
			t.Errorf("after %d events: %s, want turn_1 of s1/th1 %s", c.n, raw, c.state)
		}
	}
}

// With --auth the card names the tenant of the credentials it is fetched
// with; without credentials, or with refused ones, none. A request naming
// another tenant than its credentials' is refused, naming the field.
func TestTheCardAndRequestsNameTheCallersTenant(t *testing.T) {
	tenantOf := func(_ context.Context, authz []string) (string, error) {
		if len(authz) == 1 && authz[0] == "Bearer k-acme" {
			return "acme", nil
		}
		return "", errors.New("unauthenticated")
	}
	h := New(nil, Config{Auth: true, Tenant: tenantOf}, nil)
	for _, c := range []struct {
		authz, tenant string
	}{{"Bearer k-acme", "acme"}, {"", ""}, {"Bearer k-wrong", ""}} {
		req := httptest.NewRequest(http.MethodGet, CardPath, nil)
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		rec := httptest.NewRecorder()
		h.Card().ServeHTTP(rec, req)
		var card AgentCard
		if err := json.Unmarshal(rec.Body.Bytes(), &card); err != nil {
			t.Fatal(err)
		}
		if !card.Capabilities.PushNotifications || len(card.SupportedInterfaces) != 3 {
			t.Fatalf("card %s", rec.Body)
		}
		for _, i := range card.SupportedInterfaces {
			if i.Tenant != c.tenant {
				t.Errorf("card fetched with %q: interface %+v, want tenant %q", c.authz, i, c.tenant)
			}
		}
	}

	req := httptest.NewRequest(http.MethodPost, JSONRPCPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"tenant":"globex","id":"turn_1"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer k-acme")
	rec := httptest.NewRecorder()
	h.JSONRPC().ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `"field":"params.tenant"`) {
		t.Errorf("acme's GetTask naming tenant globex: %s, want -32602 naming params.tenant", rec.Body)
	}
	req = httptest.NewRequest(http.MethodGet, RESTPath+"/globex/tasks/turn_1", nil)
	req.Header.Set("Authorization", "Bearer k-acme")
	rec = httptest.NewRecorder()
	h.REST().ServeHTTP(rec, req)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"tenant"`) {
		t.Errorf("acme's GET below /globex/: %d %s, want 400 naming tenant", rec.Code, rec.Body)
	}
}

func TestSplitTenant(t *testing.T) {
	for _, c := range []struct{ in, tenant, route string }{
		{"message:send", "", "message:send"},
		{"tasks/t1/pushNotificationConfigs", "", "tasks/t1/pushNotificationConfigs"},
		{"acme/message:stream", "acme", "message:stream"},
		{"acme/tasks", "acme", "tasks"},
		{"acme/tasks/t1:cancel", "acme", "tasks/t1:cancel"},
		{"acme/nowhere", "", "acme/nowhere"},
		{"nowhere", "", "nowhere"},
	} {
		if tenant, route := splitTenant(c.in); tenant != c.tenant || route != c.route {
			t.Errorf("splitTenant(%q) = %q, %q; want %q, %q", c.in, tenant, route, c.tenant, c.route)
		}
	}
}
