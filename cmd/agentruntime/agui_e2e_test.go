package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// aguiEvent is one AG-UI event of an SSE stream, with its SSE id.
type aguiEvent struct {
	id     string
	fields map[string]any
}

func (e aguiEvent) typ() string { return e.str("type") }

func (e aguiEvent) str(k string) string { s, _ := e.fields[k].(string); return s }

func (e aguiEvent) cursor() string {
	meta, _ := e.fields["metadata"].(map[string]any)
	ar, _ := meta["agentruntime"].(map[string]any)
	c, _ := ar["cursor"].(string)
	return c
}

// key names an event by what it says, not by when it was sent.
func (e aguiEvent) key() string {
	return e.typ() + " " + e.str("messageId") + e.str("toolCallId") + e.str("stepName") + e.str("delta")
}

// postAGUI posts a RunAgentInput to /ag-ui.
func postAGUI(t *testing.T, addr string, headers map[string]string, body any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodPost, "http://"+addr+"/ag-ui", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
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

// readRun reads an SSE stream to its end (the server ends it after the
// run's last event) and checks what AG-UI's verifier checks of the order:
// RUN_STARTED first, nothing continued that this run did not open, nothing
// open at RUN_FINISHED, nothing after it.
func readRun(t *testing.T, resp *http.Response) []aguiEvent {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out []aguiEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var id string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "id: "); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			e := aguiEvent{id: id, fields: map[string]any{}}
			if err := json.Unmarshal([]byte(v), &e.fields); err != nil {
				t.Fatalf("event %q: %v", v, err)
			}
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for i, e := range out {
		if i == 0 && e.typ() != "RUN_STARTED" {
			t.Fatalf("first event %s, want RUN_STARTED", e.typ())
		}
		if i > 0 && (out[i-1].typ() == "RUN_FINISHED" || out[i-1].typ() == "RUN_ERROR") {
			t.Fatalf("%s after the run ended", e.typ())
		}
		name := e.str("messageId") + e.str("toolCallId") + e.str("stepName")
		if e.typ() == "REASONING_START" || e.typ() == "REASONING_END" {
			name = "span " + name
		}
		switch e.typ() {
		case "TEXT_MESSAGE_START", "TOOL_CALL_START", "STEP_STARTED", "REASONING_MESSAGE_START", "REASONING_START":
			if open[name] {
				t.Fatalf("event %d: %s of %s, already open", i, e.typ(), name)
			}
			open[name] = true
		case "TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "REASONING_MESSAGE_CONTENT":
			if !open[name] {
				t.Fatalf("event %d: %s of %s, which this run did not open", i, e.typ(), name)
			}
		case "TEXT_MESSAGE_END", "TOOL_CALL_END", "STEP_FINISHED", "REASONING_MESSAGE_END", "REASONING_END":
			if !open[name] {
				t.Fatalf("event %d: %s of %s, which this run did not open", i, e.typ(), name)
			}
			delete(open, name)
		case "RUN_FINISHED":
			if len(open) > 0 {
				t.Fatalf("RUN_FINISHED with %v open", open)
			}
		}
	}
	if len(out) == 0 || (out[len(out)-1].typ() != "RUN_FINISHED" && out[len(out)-1].typ() != "RUN_ERROR") {
		t.Fatalf("the stream ended without RUN_FINISHED or RUN_ERROR: %v", types(out))
	}
	return out
}

func types(evs []aguiEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.typ())
	}
	return out
}

// startDevWithWorkspace runs dev, its worker playing the demo in a
// workspace with a README.md.
func startDevWithWorkspace(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--workspace", ws, "--console=false"}
	return start(t, append(base, args...)...), ws
}

// POST /ag-ui is authenticated like the API: no credentials is 401, a
// viewer may not start a turn (403), bad input names its field (400), and
// an operator's run starts in the operator's tenant.
func TestAGUIIsAuthenticatedLikeTheAPI(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	p, _ := startDevWithWorkspace(t, "--auth", writeRoleAuth(t, secret))
	run := map[string]any{"threadId": "t1", "runId": "r1", "messages": []any{map[string]any{"id": "m1", "role": "user", "content": "hi"}}}
	errorOf := func(resp *http.Response) (code, field string) {
		var body struct{ Code, Field string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return body.Code, body.Field
	}
	resp := postAGUI(t, p.Addr, nil, run)
	if code, _ := errorOf(resp); resp.StatusCode != http.StatusUnauthorized || code != "unauthenticated" {
		t.Errorf("without credentials: %d %s, want 401 unauthenticated", resp.StatusCode, code)
	}
	resp = postAGUI(t, p.Addr, map[string]string{"Authorization": "Bearer k-wrong"}, run)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong key: %d, want 401", resp.StatusCode)
	}
	resp = postAGUI(t, p.Addr, map[string]string{"Authorization": "Bearer " + signAs(t, secret, "vic", "viewer")}, run)
	if code, _ := errorOf(resp); resp.StatusCode != http.StatusForbidden || code != "permission_denied" {
		t.Errorf("a viewer: %d %s, want 403 permission_denied", resp.StatusCode, code)
	}
	operator := map[string]string{"Authorization": "Bearer k-operator"}
	bad := map[string]any{"threadId": "not a thread", "runId": "r1", "messages": []any{}}
	resp = postAGUI(t, p.Addr, operator, bad)
	if code, field := errorOf(resp); resp.StatusCode != http.StatusBadRequest || code != "invalid_argument" || field != "threadId" {
		t.Errorf("a bad threadId: %d %s %q, want 400 invalid_argument threadId", resp.StatusCode, code, field)
	}
	resp = postAGUI(t, p.Addr, operator, run)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("an operator: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// No worker runs here: the run shows its start and the turn it
	// submitted, in the operator's tenant's thread.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var seen []string
	for sc.Scan() && len(seen) < 2 {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var e map[string]any
			if err := json.Unmarshal([]byte(v), &e); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, e["type"].(string))
			if e["type"] == "STATE_SNAPSHOT" {
				snap := e["snapshot"].(map[string]any)
				if snap["threadId"] != "t1" || snap["activeTurn"].(map[string]any)["input"] == nil {
					t.Errorf("snapshot %v", snap)
				}
			}
		}
	}
	if !slices.Equal(seen, []string{"RUN_STARTED", "STATE_SNAPSHOT"}) {
		t.Errorf("an operator's run began %v", seen)
	}
	// A tool message answering a call no front-end tool made names the call.
	answer := map[string]any{"threadId": "t1", "runId": "r2", "messages": []any{
		map[string]any{"id": "m2", "role": "tool", "toolCallId": "call_nobody", "content": "x"}}}
	resp = postAGUI(t, p.Addr, operator, answer)
	if code, field := errorOf(resp); resp.StatusCode != http.StatusBadRequest || code != "invalid_argument" || field != "messages[0].toolCallId" {
		t.Errorf("an answer to no call: %d %s %q, want 400 invalid_argument messages[0].toolCallId", resp.StatusCode, code, field)
	}
}

// A run's stream resumed from any event's cursor (forwardedProps or
// Last-Event-ID) misses nothing and repeats nothing: after the reopened
// items, the events are exactly those that followed that event, and the
// stream is a valid run on its own.
func TestAGUIReconnectByCursorMissesNothing(t *testing.T) {
	p, ws := startDevWithWorkspace(t)
	run := map[string]any{"threadId": "t1", "runId": "r1", "messages": []any{map[string]any{"id": "m1", "role": "user", "content": "notes please"}}}
	first := readRun(t, postAGUI(t, p.Addr, nil, run))
	last := first[len(first)-1]
	outcome, _ := last.fields["outcome"].(map[string]any)
	if last.typ() != "RUN_FINISHED" || outcome["type"] != "interrupt" {
		t.Fatalf("the first run ended with %v", last.fields)
	}
	for i := 2; i < len(first)-1; i++ {
		c := first[i].cursor()
		if c == "" || c != first[i].id {
			t.Fatalf("event %d (%s): cursor %q, SSE id %q", i, first[i].typ(), c, first[i].id)
		}
		var again []aguiEvent
		if i%2 == 0 {
			again = readRun(t, postAGUI(t, p.Addr, nil, map[string]any{"threadId": "t1", "runId": "r1b", "messages": []any{},
				"forwardedProps": map[string]any{"agentruntime": map[string]any{"cursor": c}}}))
		} else {
			again = readRun(t, postAGUI(t, p.Addr, map[string]string{"Last-Event-ID": c}, map[string]any{"threadId": "t1", "runId": "r1b", "messages": []any{}}))
		}
		// State events follow the read model, which has moved on; the
		// rest follows the log.
		var tail []string
		for _, e := range again[2:] {
			if e.cursor() == c || strings.HasPrefix(e.typ(), "STATE_") {
				continue // reopened, or state
			}
			tail = append(tail, e.key())
		}
		var want []string
		for _, e := range first[i+1:] {
			if !strings.HasPrefix(e.typ(), "STATE_") {
				want = append(want, e.key())
			}
		}
		if !slices.Equal(tail, want) {
			t.Fatalf("from event %d (%s): got\n%s\nwant\n%s", i, first[i].typ(), strings.Join(tail, "\n"), strings.Join(want, "\n"))
		}
	}
	// A cursor names its turn: another thread's is refused, naming it.
	other := map[string]any{"threadId": "t2", "runId": "r3", "messages": []any{map[string]any{"id": "m2", "role": "user", "content": "more notes"}}}
	otherRun := readRun(t, postAGUI(t, p.Addr, nil, other))
	resp := postAGUI(t, p.Addr, nil, map[string]any{"threadId": "t2", "runId": "r4", "messages": []any{},
		"forwardedProps": map[string]any{"agentruntime": map[string]any{"cursor": first[3].cursor()}}})
	var refused struct{ Code, Field string }
	if err := json.NewDecoder(resp.Body).Decode(&refused); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || refused.Field != "forwardedProps.agentruntime.cursor" {
		t.Errorf("another thread's cursor: %d %+v", resp.StatusCode, refused)
	}

	// The interrupt answered; a second answer changes nothing.
	interrupt := outcome["interrupts"].([]any)[0].(map[string]any)
	resume := map[string]any{"threadId": "t1", "runId": "r2", "messages": []any{},
		"resume": []any{map[string]any{"interruptId": interrupt["id"], "status": "resolved", "payload": "allow_once"}}}
	rest := readRun(t, postAGUI(t, p.Addr, nil, resume))
	if rest[len(rest)-1].typ() != "RUN_FINISHED" || !slices.Contains(types(rest), "TOOL_CALL_RESULT") {
		t.Fatalf("the resumed run: %v", types(rest))
	}
	if _, err := os.Stat(filepath.Join(ws, "NOTES.md")); err != nil {
		t.Fatalf("the approved write was not done: %v", err)
	}
	again := readRun(t, postAGUI(t, p.Addr, nil, resume))
	if again[len(again)-1].typ() != "RUN_FINISHED" {
		t.Fatalf("a repeated resume: %v", types(again))
	}

	// A resume answers only its own thread's interrupts: t2's, named in
	// t1, is refused and stays pending for t2's own resume.
	otherInterrupt := otherRun[len(otherRun)-1].fields["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)["id"]
	answer := func(thread string) map[string]any {
		return map[string]any{"threadId": thread, "runId": "r5", "messages": []any{},
			"resume": []any{map[string]any{"interruptId": otherInterrupt, "status": "resolved", "payload": "allow_once"}}}
	}
	resp = postAGUI(t, p.Addr, nil, answer("t1"))
	refused.Field = ""
	if err := json.NewDecoder(resp.Body).Decode(&refused); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || refused.Field != "resume[0].interruptId" {
		t.Errorf("another thread's interrupt: %d %+v", resp.StatusCode, refused)
	}
	otherRest := readRun(t, postAGUI(t, p.Addr, nil, answer("t2")))
	wrote := false
	for _, e := range otherRest {
		wrote = wrote || (e.typ() == "TOOL_CALL_RESULT" && strings.HasPrefix(e.str("content"), "wrote"))
	}
	if !wrote {
		t.Errorf("t2's approval, answered in t2: %v", types(otherRest))
	}
}

// Another tenant's front end gets nothing of a tenant's runs: a thread id
// is its own thread in its own tenant, another tenant's interrupt cannot be
// answered and its cursor cannot be followed; and a body past the bound is
// refused before credentials are looked at.
func TestAGUIKeepsTenantsApart(t *testing.T) {
	dev, acme, globex := startTwoTenants(t)

	first := readRun(t, postAGUI(t, dev.Addr, acme, map[string]any{"threadId": "t1", "runId": "r1",
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "notes please"}}}))
	interrupt := first[len(first)-1].fields["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
	secret := interrupt["id"].(string)
	resume := map[string]any{"threadId": "t1", "runId": "r2", "messages": []any{},
		"resume": []any{map[string]any{"interruptId": secret, "status": "resolved", "payload": "allow_once"}}}
	resp := postAGUI(t, dev.Addr, globex, resume)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's resume: %d, want 404", resp.StatusCode)
	}
	resp = postAGUI(t, dev.Addr, globex, map[string]any{"threadId": "t1", "runId": "r3", "messages": []any{},
		"forwardedProps": map[string]any{"agentruntime": map[string]any{"cursor": first[3].cursor()}}})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another tenant's cursor: %d, want 404", resp.StatusCode)
	}
	// The same thread id is globex's own thread: its state shows none of
	// acme's turn or approval.
	resp = postAGUI(t, dev.Addr, globex, map[string]any{"threadId": "t1", "runId": "r4",
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "notes please"}}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("globex's own run: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(v, "STATE_SNAPSHOT") {
			if strings.Contains(v, secret) || strings.Contains(v, first[0].fields["metadata"].(map[string]any)["agentruntime"].(map[string]any)["turnId"].(string)) {
				t.Errorf("globex's state shows acme's: %s", v)
			}
			break
		}
	}
	resp.Body.Close()

	// acme's approval is still acme's to give.
	rest := readRun(t, postAGUI(t, dev.Addr, acme, resume))
	if !slices.Contains(types(rest), "TOOL_CALL_RESULT") || rest[len(rest)-1].typ() != "RUN_FINISHED" {
		t.Errorf("acme's resume: %v", types(rest))
	}

	// A body past 4 MiB (just past: the client writes all of it) is refused
	// before anything else, credentials or not.
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodPost, "http://"+dev.Addr+"/ag-ui",
		strings.NewReader(`{"threadId":"t1","runId":"r","messages":[{"id":"m","role":"user","content":"`+strings.Repeat("x", 4<<20)+`"}]}`))
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
		t.Errorf("a body over 4 MiB: %d, want 413", big.StatusCode)
	}
}

// startTwoTenants runs `agentruntime dev` with authentication (tenant acme's
// operator and worker keys, tenant globex's operator key) and acme's worker
// as its own process, and answers the two operators' headers: the setting
// of the tests that one tenant's front end gets nothing of another's.
func startTwoTenants(t *testing.T) (dev *proc, acme, globex map[string]string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# A project\nIt says hello.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	authFile := filepath.Join(t.TempDir(), "auth.yaml")
	if err := os.WriteFile(authFile, []byte(`api_keys:
  - {name: alice, tenant: acme, role: operator, key: k-acme}
  - {name: bot-1, tenant: acme, role: worker, key: k-worker}
  - {name: mallory, tenant: globex, role: operator, key: k-globex}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	dev = start(t, "dev", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--auth", authFile, "--console=false")
	worker := exec.Command(binary, "worker", "--addr", dev.Addr, "--api-key", "k-worker", "--workspace", ws, "--worker-id", "w1")
	var wout bytes.Buffer // written by the process's copier, read after Wait
	worker.Stdout, worker.Stderr = &wout, &wout
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker output:\n%s", wout.String())
		}
	})
	return dev, map[string]string{"Authorization": "Bearer k-acme"}, map[string]string{"Authorization": "Bearer k-globex"}
}
