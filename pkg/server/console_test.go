package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWithConsoleRoutesPagesAndRPCs(t *testing.T) {
	tag := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Handler", name) })
	}
	h := withConsole(tag("console"), tag("api"))
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodGet, "/", "console"},
		{http.MethodGet, "/app.js", "console"},
		{http.MethodHead, "/style.css", "console"},
		{http.MethodGet, "/agentruntime.control.v1.ControlService/GetSession", "api"}, // Connect GET
		{http.MethodPost, "/agentruntime.control.v1.ControlService/SubmitTurn", "api"},
		{http.MethodPost, "/", "api"},
		{http.MethodOptions, "/agentruntime.tasks.v1.TasksService/ListTasks", "api"}, // CORS preflight
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if got := rec.Header().Get("X-Handler"); got != tc.want {
			t.Errorf("%s %s went to %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
	if withConsole(nil, tag("api")) == nil {
		t.Fatal("no console: the API handler alone")
	}
}
