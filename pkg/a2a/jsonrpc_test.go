package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Requests that are not JSON-RPC, or not ours, are refused with the
// JSON-RPC error that says why, before the runtime is called (the handler
// here has no runtime: a call would panic).
func TestJSONRPCFraming(t *testing.T) {
	h := New(nil, Config{}, nil).JSONRPC()
	for _, c := range []struct {
		name, method, ctype, body string
		headers                   map[string]string
		status, code              int
		says                      string
	}{
		{"GET", http.MethodGet, "", "", nil, http.StatusMethodNotAllowed, codeInvalidRequest, "POST"},
		{"text/plain", http.MethodPost, "text/plain", `{}`, nil, http.StatusUnsupportedMediaType, codeInvalidRequest, "Content-Type"},
		{"not JSON", http.MethodPost, "application/json", `{"jsonrpc":`, nil, http.StatusOK, codeParseError, "body"},
		{"a batch", http.MethodPost, "application/json", `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, nil, http.StatusOK, codeInvalidRequest, "batches"},
		{"no version", http.MethodPost, "application/json", `{"id":1,"method":"GetTask"}`, nil, http.StatusOK, codeInvalidRequest, "2.0"},
		{"an object id", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, nil, http.StatusOK, codeInvalidRequest, "id"},
		{"unknown method", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil, http.StatusOK, codeMethodNotFound, "message/send"},
		{"a push config without a task", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"url":"http://x/"}}`, nil, http.StatusOK, codeInvalidParams, "params.taskId"},
		{"a push config without a url", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t1"}}`, nil, http.StatusOK, codeInvalidParams, "params.url"},
		{"a bad push config id", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t1","url":"http://x/","id":"a b"}}`, nil, http.StatusOK, codeInvalidParams, "params.id"},
		{"a push config's get without id", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"taskId":"t1"}}`, nil, http.StatusOK, codeInvalidParams, "params.id"},
		{"a push config list without task", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"ListTaskPushNotificationConfigs","params":{}}`, nil, http.StatusOK, codeInvalidParams, "params.taskId"},
		{"a send's push config without url", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},"configuration":{"taskPushNotificationConfig":{"token":"t"}}}}`, nil, http.StatusOK, codeInvalidParams, "params.configuration.taskPushNotificationConfig.url"},
		{"no params", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, nil, http.StatusOK, codeInvalidParams, "params"},
		{"a number id", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":7}}`, nil, http.StatusOK, codeInvalidParams, "params.id"},
		{"a bad task id", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"../x"}}`, nil, http.StatusOK, codeTaskNotFound, "../x"},
		{"no message", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, nil, http.StatusOK, codeInvalidParams, "params.message"},
		{"an agent's message", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]}}}`, nil, http.StatusOK, codeInvalidParams, "params.message.role"},
		{"A2A 0.3", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`, map[string]string{"A2A-Version": "0.3"}, http.StatusOK, codeVersionNotSupported, "A2A-Version"},
		{"too big", http.MethodPost, "application/json", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("x", maxBody) + `"}]}}}`, nil, http.StatusRequestEntityTooLarge, codeInvalidRequest, "at most"},
	} {
		req := httptest.NewRequest(c.method, JSONRPCPath, strings.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var resp struct {
			JSONRPC string
			ID      json.RawMessage
			Error   *rpcError
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, rec.Body)
		}
		if rec.Code != c.status || resp.JSONRPC != "2.0" || resp.Error == nil || resp.Error.Code != c.code || !strings.Contains(resp.Error.Message, c.says) {
			t.Errorf("%s: %d %s, want %d, code %d, saying %q", c.name, rec.Code, rec.Body, c.status, c.code, c.says)
		}
	}
}

// The HTTP+JSON binding's refusals are google.rpc.Status bodies with the
// A2A reason and the field.
func TestRESTErrors(t *testing.T) {
	h := New(nil, Config{}, nil).REST()
	for _, c := range []struct {
		method, path, body string
		status             int
		reason, field      string
	}{
		{http.MethodGet, "/a2a/rest/nowhere", "", http.StatusNotFound, "", ""},
		{http.MethodGet, "/a2a/rest/tasks/..%2Fx", "", http.StatusBadRequest, "", "id"},
		{http.MethodGet, "/a2a/rest/tasks/bad%20id", "", http.StatusNotFound, "TASK_NOT_FOUND", ""},
		{http.MethodPost, "/a2a/rest/tasks/t1/pushNotificationConfigs", "{}", http.StatusBadRequest, "", "params.url"},
		{http.MethodPost, "/a2a/rest/tasks/t1/pushNotificationConfigs", `{"taskId":"t2","url":"http://x/"}`, http.StatusBadRequest, "", "taskId"},
		{http.MethodGet, "/a2a/rest/tasks/t1/pushNotificationConfigs/a/b", "", http.StatusNotFound, "", ""},
		{http.MethodPut, "/a2a/rest/tasks/t1/pushNotificationConfigs/c1", "", http.StatusNotFound, "", ""},
		{http.MethodPost, "/a2a/rest/message:send", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"AAAA"}]}}`, http.StatusUnsupportedMediaType, "CONTENT_TYPE_NOT_SUPPORTED", "params.message.parts[0]"},
		{http.MethodGet, "/a2a/rest/tasks?pageSize=x", "", http.StatusBadRequest, "", "pageSize"},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != c.status || !strings.Contains(body, `"status"`) ||
			(c.reason != "" && !strings.Contains(body, `"reason":"`+c.reason+`"`)) ||
			(c.field != "" && !strings.Contains(body, `"field":"`+c.field+`"`)) {
			t.Errorf("%s %s: %d %s, want %d %s %s", c.method, c.path, rec.Code, body, c.status, c.reason, c.field)
		}
	}
}
