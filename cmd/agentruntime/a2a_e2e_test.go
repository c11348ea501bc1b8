package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	a2apb "github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// a2aReply is a JSON-RPC response of the A2A endpoint.
type a2aReply struct {
	status int
	header http.Header
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// postA2A posts a JSON-RPC request to /a2a/jsonrpc.
func postA2A(t *testing.T, addr string, headers map[string]string, method string, params any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodPost, "http://"+addr+"/a2a/jsonrpc", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// callA2A makes a call that answers once.
func callA2A(t *testing.T, addr string, headers map[string]string, method string, params any) a2aReply {
	t.Helper()
	resp := postA2A(t, addr, headers, method, params)
	r := a2aReply{status: resp.StatusCode, header: resp.Header}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// streamA2A makes a streaming call and reads it to its end: each item's
// result, or the error that answered the call.
func streamA2A(t *testing.T, addr string, headers map[string]string, method string, params any) ([]map[string]any, a2aReply) {
	t.Helper()
	resp := postA2A(t, addr, headers, method, params)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		r := a2aReply{status: resp.StatusCode, header: resp.Header}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
		return nil, r
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var r a2aReply
			if err := json.Unmarshal([]byte(v), &r); err != nil {
				t.Fatal(err)
			}
			if r.Error != nil {
				t.Fatalf("%s: an error in the stream: %+v", method, r.Error)
			}
			out = append(out, r.Result)
		}
	}
	return out, a2aReply{status: resp.StatusCode}
}

func a2aMessage(text string, ids ...string) map[string]any {
	m := map[string]any{"messageId": "m-" + text + strings.Join(ids, "-"), "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}
	if len(ids) > 0 {
		m["contextId"] = ids[0]
	}
	if len(ids) > 1 {
		m["taskId"] = ids[1]
	}
	return m
}

func lastState(items []map[string]any) string {
	for i := len(items) - 1; i >= 0; i-- {
		if u, ok := items[i]["statusUpdate"].(map[string]any); ok {
			return u["status"].(map[string]any)["state"].(string)
		}
	}
	return ""
}

// The A2A endpoint is authenticated like the API: the card declares bearer
// auth, no credentials is 401 with a Bearer challenge, a viewer may not
// send (403), bad input names its field, and an operator's message is a
// turn of the operator's tenant.
func TestA2AIsAuthenticatedLikeTheAPI(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	cardFile := filepath.Join(t.TempDir(), "card.yaml")
	if err := os.WriteFile(cardFile, []byte("name: notes-agent\nskills:\n  - {id: notes, name: Notes, description: Writes NOTES.md}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, _ := startDevWithWorkspace(t, "--auth", writeRoleAuth(t, secret), "--a2a-card", cardFile)

	resp, err := http.Get("http://" + p.Addr + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		Name                string           `json:"name"`
		Skills              []map[string]any `json:"skills"`
		SecuritySchemes     map[string]any   `json:"securitySchemes"`
		SupportedInterfaces []map[string]any `json:"supportedInterfaces"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if card.Name != "notes-agent" || len(card.Skills) != 1 || card.Skills[0]["id"] != "notes" || card.SecuritySchemes["bearer"] == nil || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0]["url"] != "http://"+p.Addr+"/a2a/jsonrpc" {
		t.Errorf("card: %+v", card)
	}

	send := map[string]any{"message": a2aMessage("hello"), "configuration": map[string]any{"returnImmediately": true}}
	r := callA2A(t, p.Addr, nil, "SendMessage", send)
	if r.status != http.StatusUnauthorized || r.Error == nil || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("without credentials: %d %+v, want 401 with a Bearer challenge", r.status, r.Error)
	}
	_, r = streamA2A(t, p.Addr, map[string]string{"Authorization": "Bearer k-wrong"}, "SendStreamingMessage", send)
	if r.status != http.StatusUnauthorized {
		t.Errorf("a wrong key, streaming: %d, want 401", r.status)
	}
	r = callA2A(t, p.Addr, map[string]string{"Authorization": "Bearer " + signAs(t, secret, "vic", "viewer")}, "SendMessage", send)
	if r.status != http.StatusForbidden || r.Error == nil {
		t.Errorf("a viewer: %d %+v, want 403", r.status, r.Error)
	}
	operator := map[string]string{"Authorization": "Bearer k-operator"}
	bad := map[string]any{"message": a2aMessage("hello", "not a context")}
	r = callA2A(t, p.Addr, operator, "SendMessage", bad)
	if r.Error == nil || r.Error.Code != -32602 || r.Error.Data["field"] != "params.message.contextId" {
		t.Errorf("a bad contextId: %+v, want -32602 naming params.message.contextId", r.Error)
	}
	r = callA2A(t, p.Addr, operator, "SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"url": "file:///etc/passwd"}}}})
	if r.Error == nil || r.Error.Data["field"] != "params.message.parts[0]" {
		t.Errorf("a file part: %+v, want an error naming params.message.parts[0]", r.Error)
	}
	r = callA2A(t, p.Addr, map[string]string{"Authorization": "Bearer k-operator", "A2A-Version": "0.3"}, "SendMessage", send)
	if r.Error == nil || r.Error.Code != -32009 {
		t.Errorf("A2A-Version 0.3: %+v, want -32009", r.Error)
	}
	r = callA2A(t, p.Addr, operator, "NoSuchMethod", map[string]any{})
	if r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("an unknown method: %+v, want -32601", r.Error)
	}
	// No worker runs here: the operator's task is submitted, and stays so.
	r = callA2A(t, p.Addr, operator, "SendMessage", send)
	task, _ := r.Result["task"].(map[string]any)
	if r.Error != nil || task["status"].(map[string]any)["state"] != "TASK_STATE_SUBMITTED" {
		t.Fatalf("an operator's send: %+v %v", r.Error, r.Result)
	}
	got := callA2A(t, p.Addr, operator, "GetTask", map[string]any{"id": task["id"]})
	if got.Error != nil || got.Result["contextId"] != task["contextId"] {
		t.Errorf("GetTask: %+v %v", got.Error, got.Result)
	}

	// A message with the task's id steers it (the same task); one more
	// without waits in the queue behind it.
	ctx := task["contextId"].(string)
	steer := callA2A(t, p.Addr, operator, "SendMessage", map[string]any{"message": a2aMessage("and also this", ctx, task["id"].(string)),
		"configuration": map[string]any{"returnImmediately": true}})
	if steer.Error != nil || steer.Result["task"].(map[string]any)["id"] != task["id"] {
		t.Errorf("a steer: %+v %v", steer.Error, steer.Result)
	}
	queued := callA2A(t, p.Addr, operator, "SendMessage", map[string]any{"message": a2aMessage("later", ctx), "configuration": map[string]any{"returnImmediately": true}})
	if queued.Error != nil {
		t.Fatalf("a queued send: %+v", queued.Error)
	}
	later := queued.Result["task"].(map[string]any)
	// Cancel: the queued task leaves the queue, the unstarted one ends;
	// both are canceled, and an ended task is not cancelable.
	for _, id := range []any{later["id"], task["id"]} {
		c := callA2A(t, p.Addr, operator, "CancelTask", map[string]any{"id": id})
		if c.Error != nil || c.Result["status"].(map[string]any)["state"] != "TASK_STATE_CANCELED" {
			t.Errorf("CancelTask %v: %+v %v", id, c.Error, c.Result)
		}
		g := callA2A(t, p.Addr, operator, "GetTask", map[string]any{"id": id})
		if g.Error != nil || g.Result["status"].(map[string]any)["state"] != "TASK_STATE_CANCELED" {
			t.Errorf("GetTask %v after cancel: %+v %v", id, g.Error, g.Result)
		}
		if c := callA2A(t, p.Addr, operator, "CancelTask", map[string]any{"id": id}); c.Error == nil || c.Error.Code != -32002 {
			t.Errorf("CancelTask %v again: %+v, want -32002", id, c.Error)
		}
	}
	// An ended task takes no more messages.
	if r := callA2A(t, p.Addr, operator, "SendMessage", map[string]any{"message": a2aMessage("more", ctx, task["id"].(string))}); r.Error == nil || r.Error.Code != -32004 {
		t.Errorf("a message to an ended task: %+v, want -32004", r.Error)
	}
}

// Tenants are apart: another tenant's task is not found to read, answer,
// subscribe to or cancel, and stays its owner's to answer; a body over the
// bound is refused before anything else.
func TestA2AKeepsTenantsApart(t *testing.T) {
	dev, acme, globex := startTwoTenants(t)

	items, r := streamA2A(t, dev.Addr, acme, "SendStreamingMessage", map[string]any{"message": a2aMessage("notes please", "ctx1")})
	if r.status != http.StatusOK || lastState(items) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("acme's stream: %d %v", r.status, items)
	}
	task := items[0]["task"].(map[string]any)
	id := task["id"].(string)
	if task["contextId"] != "ctx1" {
		t.Errorf("contextId %v, want ctx1", task["contextId"])
	}
	for _, call := range []struct {
		method string
		params any
	}{
		{"GetTask", map[string]any{"id": id}},
		{"CancelTask", map[string]any{"id": id}},
		{"SendMessage", map[string]any{"message": a2aMessage("yes", "", id)}},
	} {
		r := callA2A(t, dev.Addr, globex, call.method, call.params)
		if r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("globex's %s of acme's task: %+v, want -32001 task not found", call.method, r.Error)
		}
	}
	if _, r := streamA2A(t, dev.Addr, globex, "SubscribeToTask", map[string]any{"id": id}); r.Error == nil || r.Error.Code != -32001 {
		t.Errorf("globex's SubscribeToTask of acme's task: %+v, want -32001", r.Error)
	}

	// acme's context lists acme's task; to globex it is empty.
	for _, who := range []struct {
		headers map[string]string
		n       int
	}{{acme, 1}, {globex, 0}} {
		r := callA2A(t, dev.Addr, who.headers, "ListTasks", map[string]any{"contextId": "ctx1"})
		tasks, _ := r.Result["tasks"].([]any)
		if r.Error != nil || len(tasks) != who.n || (who.n == 1 && tasks[0].(map[string]any)["id"] != id) {
			t.Errorf("ListTasks ctx1 as %v: %+v %v, want %d task(s)", who.headers, r.Error, r.Result, who.n)
		}
		// Without a contextId: the tenant's tasks, never another's.
		r = callA2A(t, dev.Addr, who.headers, "ListTasks", map[string]any{})
		tasks, _ = r.Result["tasks"].([]any)
		if r.Error != nil || len(tasks) != who.n || r.Result["totalSize"] != float64(who.n) || (who.n == 1 && tasks[0].(map[string]any)["id"] != id) {
			t.Errorf("ListTasks as %v: %+v %v, want %d task(s)", who.headers, r.Error, r.Result, who.n)
		}
	}

	// The same over HTTP+JSON: 404 with the A2A reason.
	for _, who := range []struct {
		headers map[string]string
		status  int
	}{{globex, http.StatusNotFound}, {nil, http.StatusUnauthorized}, {acme, http.StatusOK}} {
		req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodGet, "http://"+dev.Addr+"/a2a/rest/tasks/"+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range who.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != who.status || (who.status == http.StatusNotFound && !strings.Contains(string(body), `"reason":"TASK_NOT_FOUND"`)) {
			t.Errorf("GET /a2a/rest/tasks/{acme's task} as %v: %d %s, want %d", who.headers, resp.StatusCode, body, who.status)
		}
	}

	// The same over gRPC on the API port: NotFound with the A2A reason,
	// Unauthenticated without credentials, and acme's own task is there.
	grpcClient := a2apb.NewA2AServiceClient(dial(t, dev.Addr))
	as := func(key string) context.Context {
		ctx := testkit.Context(t)
		if key == "" {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	_, err := grpcClient.GetTask(as("k-globex"), &a2apb.GetTaskRequest{Id: id})
	if st := status.Convert(err); st.Code() != codes.NotFound || !strings.Contains(fmt.Sprint(st.Details()), "TASK_NOT_FOUND") {
		t.Errorf("globex's gRPC GetTask of acme's task: %v, want NotFound TASK_NOT_FOUND", err)
	}
	if _, err := grpcClient.GetTask(as(""), &a2apb.GetTaskRequest{Id: id}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("gRPC GetTask without credentials: %v, want Unauthenticated", err)
	}
	if got, err := grpcClient.GetTask(as("k-acme"), &a2apb.GetTaskRequest{Id: id}); err != nil || got.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
		t.Errorf("acme's gRPC GetTask: %v %v", got, err)
	}
	_, err = grpcClient.GetTask(metadata.AppendToOutgoingContext(as("k-acme"), "a2a-version", "0.3"), &a2apb.GetTaskRequest{Id: id})
	if st := status.Convert(err); st.Code() != codes.FailedPrecondition || !strings.Contains(fmt.Sprint(st.Details()), "VERSION_NOT_SUPPORTED") {
		t.Errorf("gRPC GetTask with A2A-Version 0.3: %v, want FailedPrecondition VERSION_NOT_SUPPORTED", err)
	}

	// acme's approval is still acme's to give.
	r = callA2A(t, dev.Addr, acme, "SendMessage", map[string]any{"message": a2aMessage("allow_once", "ctx1", id)})
	if r.Error != nil {
		t.Fatalf("acme's answer: %+v", r.Error)
	}
	done := r.Result["task"].(map[string]any)
	if done["id"] != id || done["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Errorf("acme's answer: %v", done)
	}

	// A body past 1 MiB is refused before anything else, credentials or
	// not.
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodPost, "http://"+dev.Addr+"/a2a/jsonrpc",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"`+strings.Repeat("x", 1<<20)+`"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	big, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	big.Body.Close()
	if big.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d, want 413", big.StatusCode)
	}
}
