package main

import (
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

// restA2A makes a call of the HTTP+JSON binding and decodes its answer.
func restA2A(t *testing.T, method, url string, headers map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(testkit.Context(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// Push notification configs: bad input names its field (a URL outside
// --hook-allow-hosts too), a config is its tenant's only (another
// tenant's task, and its configs, are not found), Get answers the token
// and never the credentials, the three bindings see the same configs,
// a request naming another tenant is refused, and the card names the
// caller's tenant.
func TestA2APushConfigsAreTheTenantsAndInsideTheAllowlist(t *testing.T) {
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, []byte(`api_keys:
  - {name: alice, tenant: acme, role: operator, key: k-acme}
  - {name: mallory, tenant: globex, role: operator, key: k-globex}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	dev := start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--auth", authFile, "--console=false", "--no-worker",
		"--hook-allow-hosts", "127.0.0.1:9")
	acme, globex := map[string]string{"Authorization": "Bearer k-acme"}, map[string]string{"Authorization": "Bearer k-globex"}

	// With no worker the task stays submitted.
	r := callA2A(t, dev.Addr, acme, "SendMessage", map[string]any{"message": a2aMessage("hello"), "configuration": map[string]any{"returnImmediately": true}})
	if r.Error != nil {
		t.Fatalf("acme's send: %+v", r.Error)
	}
	id := r.Result["task"].(map[string]any)["id"].(string)
	hook := "http://127.0.0.1:9/a2a-hook"

	for _, c := range []struct {
		params map[string]any
		field  string
	}{
		{map[string]any{"url": hook}, "params.taskId"},
		{map[string]any{"taskId": id}, "params.url"},
		{map[string]any{"taskId": id, "url": "http://169.254.169.254/latest/meta-data"}, "params.url"},
		{map[string]any{"taskId": id, "url": "http://127.0.0.1:10/elsewhere"}, "params.url"},
		{map[string]any{"taskId": id, "url": "ftp://127.0.0.1:9/x"}, "params.url"},
		{map[string]any{"taskId": id, "url": hook, "id": "no spaces"}, "params.id"},
		{map[string]any{"taskId": id, "url": hook, "authentication": map[string]any{"scheme": "", "credentials": "s3cret"}}, "params.authentication.scheme"},
	} {
		r := callA2A(t, dev.Addr, acme, "CreateTaskPushNotificationConfig", c.params)
		if r.Error == nil || r.Error.Code != -32602 || r.Error.Data["field"] != c.field {
			t.Errorf("CreateTaskPushNotificationConfig %v: %+v, want -32602 naming %s", c.params, r.Error, c.field)
		}
	}

	r = callA2A(t, dev.Addr, acme, "CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": hook, "id": "c1", "token": "tok-1",
		"authentication": map[string]any{"scheme": "Bearer", "credentials": "s3cret"}})
	if r.Error != nil || r.Result["id"] != "c1" || r.Result["taskId"] != id || r.Result["url"] != hook || r.Result["token"] != "tok-1" {
		t.Fatalf("acme's config: %+v %v", r.Error, r.Result)
	}
	if fmt.Sprint(r.Result["authentication"]) != "map[scheme:Bearer]" {
		t.Errorf("the config's authentication: %v, want the scheme and never the credentials", r.Result["authentication"])
	}

	// globex sees neither acme's task nor its configs, and cannot add one.
	for _, call := range []struct {
		method string
		params map[string]any
	}{
		{"CreateTaskPushNotificationConfig", map[string]any{"taskId": id, "url": hook}},
		{"GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}},
		{"ListTaskPushNotificationConfigs", map[string]any{"taskId": id}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}},
	} {
		if r := callA2A(t, dev.Addr, globex, call.method, call.params); r.Error == nil || r.Error.Code != -32001 {
			t.Errorf("globex's %s of acme's task: %+v, want -32001", call.method, r.Error)
		}
	}
	// A request that names another tenant than its credentials' is refused.
	if r := callA2A(t, dev.Addr, globex, "ListTaskPushNotificationConfigs", map[string]any{"taskId": id, "tenant": "acme"}); r.Error == nil || r.Error.Data["field"] != "params.tenant" {
		t.Errorf("globex naming tenant acme: %+v, want -32602 naming params.tenant", r.Error)
	}

	// acme's config, over the three bindings (HTTP+JSON with the tenant
	// prefix the card leads a client to send).
	if r := callA2A(t, dev.Addr, acme, "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}); r.Error != nil || r.Result["token"] != "tok-1" {
		t.Errorf("acme's GetTaskPushNotificationConfig: %+v %v", r.Error, r.Result)
	}
	base := "http://" + dev.Addr + "/a2a/rest/acme/tasks/" + id + "/pushNotificationConfigs"
	if code, out := restA2A(t, http.MethodGet, base, acme, ""); code != http.StatusOK || len(out["configs"].([]any)) != 1 {
		t.Errorf("GET %s: %d %v, want the one config", base, code, out)
	}
	if code, out := restA2A(t, http.MethodGet, strings.Replace(base, "/acme/", "/globex/", 1), acme, ""); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out), "field:tenant") {
		t.Errorf("acme's GET below /globex/: %d %v, want 400 naming tenant", code, out)
	}
	if code, out := restA2A(t, http.MethodPost, base, acme, `{"url":"http://10.0.0.1/x"}`); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out), "field:params.url") {
		t.Errorf("POST %s outside the allowlist: %d %v, want 400 naming params.url", base, code, out)
	}
	grpcClient := a2apb.NewA2AServiceClient(dial(t, dev.Addr))
	ctxAs := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(testkit.Context(t), "authorization", "Bearer "+key)
	}
	list, err := grpcClient.ListTaskPushNotificationConfigs(ctxAs("k-acme"), &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: id})
	if err != nil || len(list.GetConfigs()) != 1 || list.GetConfigs()[0].GetToken() != "tok-1" {
		t.Errorf("acme's gRPC list: %v %v", list, err)
	}
	if _, err := grpcClient.GetTaskPushNotificationConfig(ctxAs("k-globex"), &a2apb.GetTaskPushNotificationConfigRequest{TaskId: id, Id: "c1"}); status.Code(err) != codes.NotFound {
		t.Errorf("globex's gRPC get: %v, want NotFound", err)
	}
	_, err = grpcClient.CreateTaskPushNotificationConfig(ctxAs("k-acme"), &a2apb.TaskPushNotificationConfig{TaskId: id, Url: "http://metadata.google.internal/x"})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(fmt.Sprint(st.Details()), "params.url") {
		t.Errorf("gRPC create outside the allowlist: %v, want InvalidArgument naming params.url", err)
	}

	// Deleted, it is gone.
	if r := callA2A(t, dev.Addr, acme, "DeleteTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}); r.Error != nil {
		t.Errorf("acme's delete: %+v", r.Error)
	}
	if r := callA2A(t, dev.Addr, acme, "GetTaskPushNotificationConfig", map[string]any{"taskId": id, "id": "c1"}); r.Error == nil || r.Error.Code != -32001 {
		t.Errorf("a deleted config: %+v, want -32001", r.Error)
	}

	// The card: push notifications, and the caller's tenant in each
	// interface; fetched without credentials, no tenant.
	for _, who := range []struct {
		headers map[string]string
		tenant  any
	}{{acme, "acme"}, {globex, "globex"}, {nil, nil}} {
		code, card := restA2A(t, http.MethodGet, "http://"+dev.Addr+"/.well-known/agent-card.json", who.headers, "")
		ifaces, _ := card["supportedInterfaces"].([]any)
		if code != http.StatusOK || card["capabilities"].(map[string]any)["pushNotifications"] != true || len(ifaces) != 3 {
			t.Fatalf("card as %v: %d %v", who.headers, code, card)
		}
		for _, i := range ifaces {
			if i.(map[string]any)["tenant"] != who.tenant {
				t.Errorf("card as %v: interface %v, want tenant %v", who.headers, i, who.tenant)
			}
		}
	}
}
