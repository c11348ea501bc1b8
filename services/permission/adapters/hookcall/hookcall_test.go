package hookcall_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	permissionv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/permission/v1"
	"github.com/agentruntime/agentruntime/services/permission/adapters/hookcall"
)

// A hook's host was checked at registration; a redirect would send the
// call somewhere unchecked, so the caller does not follow it: the call
// fails and the redirect's target is never asked.
func TestHTTPHookRedirectsAreNotFollowed(t *testing.T) {
	var reached atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte(`{}`))
	}))
	defer internal.Close()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/latest/meta-data", http.StatusTemporaryRedirect)
	}))
	defer hook.Close()
	c := hookcall.New()
	defer c.Close()
	_, err := c.Call(context.Background(), &eventsv1.Hook{HookId: "h", Handler: &eventsv1.Hook_HttpUrl{HttpUrl: hook.URL}},
		&permissionv1.HandleHookRequest{Point: eventsv1.HookPoint_HOOK_POINT_PRE_TOOL_USE})
	if err == nil || !strings.Contains(err.Error(), "307") {
		t.Fatalf("a redirecting hook: %v, want the call to fail with HTTP 307", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect's target was called %d times", n)
	}
}
