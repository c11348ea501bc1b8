package agui

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/clienttool"
)

func TestParseRunNamesTheFieldOfEachMistake(t *testing.T) {
	user := `"messages":[{"id":"m1","role":"user","content":"hi"}]`
	cases := []struct{ body, field string }{
		{`[]`, "body"},
		{`{"threadId":7}`, "threadId"},
		{`{"runId":"r",` + user + `}`, "threadId"},
		{`{"threadId":"a b","runId":"r",` + user + `}`, "threadId"},
		{`{"threadId":"t","runId":"",` + user + `}`, "runId"},
		{`{"threadId":"t","runId":"r","messages":[]}`, "messages"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","content":"x"}]}`, "messages"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"","role":"user","content":"x"}]}`, "messages[0].id"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"  "}]}`, "messages[0].content"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":[{"type":"image","source":{}}]}]}`, "messages[0].content[0].type"},
		{`{"threadId":"t","runId":"r",` + user + `,"forwardedProps":{"sessionId":"no.dots"}}`, "forwardedProps.sessionId"},
		{`{"threadId":"t","runId":"r",` + user + `,"forwardedProps":{"agentruntime":{"cursor":"x"}}}`, "forwardedProps.agentruntime.cursor"},
		{`{"threadId":"t","runId":"r","resume":[{"interruptId":"a","status":"maybe"}]}`, "resume[0].status"},
		{`{"threadId":"t","runId":"r","resume":[{"interruptId":"a","status":"resolved"}]}`, "resume[0].payload"},
		{`{"threadId":"t","runId":"r","resume":[{"interruptId":"a","status":"resolved","payload":{"payload":{}}}]}`, "resume[0].payload.decision"},
		{`{"threadId":"t","runId":"r","resume":[{"interruptId":"","status":"cancelled"}]}`, "resume[0].interruptId"},
		{`{"threadId":"t","runId":"r",` + user + `,"tools":[{"name":"a b"}]}`, "tools[0].name"},
		{`{"threadId":"t","runId":"r",` + user + `,"tools":[{"name":"a"},{"name":"a"}]}`, "tools[1].name"},
		{`{"threadId":"t","runId":"r",` + user + `,"tools":[{"name":"a","parameters":[1]}]}`, "tools[0].parameters"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"t1","role":"tool","content":"x"}]}`, "messages[0].toolCallId"},
		{`{"threadId":"t","runId":"r","messages":[{"id":"t1","role":"tool","toolCallId":"c1","content":{"x":1}}]}`, "messages[0].content"},
	}
	for _, c := range cases {
		_, err := parseRun(strings.NewReader(c.body), "")
		var bad *inputError
		if !errors.As(err, &bad) || bad.field != c.field {
			t.Errorf("%s: got %v, want a mistake in %s", c.body, err, c.field)
		}
	}
	if _, err := parseRun(strings.NewReader(`{"threadId":"t","runId":"r"}`), "x.1.2"); err == nil || !strings.HasPrefix(err.Error(), "Last-Event-ID") {
		t.Errorf("a bad Last-Event-ID: %v", err)
	}
}

func TestParseRunTakesTheNewestUserMessage(t *testing.T) {
	r, err := parseRun(strings.NewReader(`{"threadId":"t","runId":"r","messages":[
		{"id":"m1","role":"user","content":"first"},
		{"id":"a1","role":"assistant","content":"answer"},
		{"id":"m2","role":"user","content":[{"type":"text","text":"second"},{"type":"text","text":"part"}]},
		{"id":"a2","role":"assistant"}],"forwardedProps":{"sessionId":"s1"},"tools":[{"name":"x","description":"y"}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if r.userMessageID != "m2" || r.userText != "second\npart" || r.sessionID != "s1" {
		t.Errorf("got %+v", r)
	}
	r, err = parseRun(strings.NewReader(`{"threadId":"t","runId":"r","messages":[{"id":"m1","role":"user","content":"x"}]}`), "")
	if err != nil || r.sessionID != DefaultSession {
		t.Errorf("default session: %+v %v", r, err)
	}
}

func TestParseRunReadsResumeAnswers(t *testing.T) {
	r, err := parseRun(strings.NewReader(`{"threadId":"t","runId":"r","resume":[
		{"interruptId":"a1","status":"resolved","payload":"allow_once"},
		{"interruptId":"a2","status":"resolved","payload":{"decision":"approve","payload":{"n":1}}},
		{"interruptId":"a3","status":"cancelled"}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []answer{{field: "resume[0]", idField: "resume[0].interruptId", actionID: "a1", decision: "allow_once"},
		{field: "resume[1]", idField: "resume[1].interruptId", actionID: "a2", decision: "approve", payloadJSON: `{"n":1}`},
		{field: "resume[2]", idField: "resume[2].interruptId", actionID: "a3", cancelled: true}}
	if len(r.resume) != len(want) {
		t.Fatalf("got %+v", r.resume)
	}
	for i := range want {
		if r.resume[i] != want[i] {
			t.Errorf("resume[%d] = %+v, want %+v", i, r.resume[i], want[i])
		}
	}
}

// Tool messages after the newest other message answer front-end tools'
// calls: each the payload of its call's action; the user message before
// them is not submitted again. The front end's tools ride with a new turn.
func TestParseRunReadsToolMessagesAsAnswers(t *testing.T) {
	r, err := parseRun(strings.NewReader(`{"threadId":"t","runId":"r","messages":[
		{"id":"m1","role":"user","content":"what time?"},
		{"id":"a1","role":"assistant","toolCalls":[{"id":"c1"},{"id":"c2"}]},
		{"id":"t1","role":"tool","toolCallId":"c1","content":"23:59"},
		{"id":"t2","role":"tool","toolCallId":"c2","content":"say \"hi\""}],
		"tools":[{"name":"browser_time","parameters":{"type":"object"}}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []answer{
		{field: "messages[2]", idField: "messages[2].toolCallId", actionID: clienttool.ActionID("c1"), decision: clienttool.Decision, payloadJSON: `"23:59"`},
		{field: "messages[3]", idField: "messages[3].toolCallId", actionID: clienttool.ActionID("c2"), decision: clienttool.Decision, payloadJSON: `"say \"hi\""`},
	}
	if !slices.Equal(r.resume, want) || r.userMessageID != "" {
		t.Fatalf("got %+v (user message %q), want answers %+v", r.resume, r.userMessageID, want)
	}
	r, err = parseRun(strings.NewReader(`{"threadId":"t","runId":"r","messages":[{"id":"m1","role":"user","content":"x"}],
		"tools":[{"name":"browser_time","description":"d","parameters":{"type":"object"}}]}`), "")
	if err != nil || len(r.tools) != 1 || r.tools[0].Name != "browser_time" || string(r.tools[0].Parameters) != `{"type":"object"}` || len(r.resume) != 0 {
		t.Fatalf("a new turn with tools: %+v %v", r, err)
	}
}

func TestCursorRoundTrips(t *testing.T) {
	c := cursor{turnID: "turn_1", from: 4, seq: 31, k: 2}
	got, err := parseCursor(c.String())
	if err != nil || *got != c {
		t.Fatalf("got %+v %v", got, err)
	}
	for _, bad := range []string{"", "turn_1.4.31", "turn 1.4.31.2", "turn_1.0.31.2", "turn_1.40.31.2", "turn_1.4.31.-1"} {
		if _, err := parseCursor(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestNegotiatePicksTheEncodingAcceptNames(t *testing.T) {
	for accept, want := range map[string]string{
		"":                                  "text/event-stream",
		"text/event-stream":                 "text/event-stream",
		"application/vnd.ag-ui.event+proto": protoMediaType,
		"text/event-stream, application/vnd.ag-ui.event+proto;q=0.5": protoMediaType,
		"application/vnd.ag-ui.event+proto;q=0":                      "text/event-stream",
		"application/vnd.ag-ui.event+proto;q=0.0":                    "text/event-stream",
	} {
		if got := negotiate(accept).contentType(); got != want {
			t.Errorf("Accept %q: %s, want %s", accept, got, want)
		}
	}
}
