package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/worker/mcp"
	"github.com/agentruntime/agentruntime/pkg/worker/tools"
)

// asker is an MCP server (the go-sdk's, over streamable HTTP: the real
// wire format) whose tools ask the client for input: ask elicits times
// times with message and answers the actions it got; hold stays in flight
// until released.
type asker struct {
	url     string
	session atomic.Pointer[sdk.ServerSession]
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

// free ends the calls of hold.
func (a *asker) free() { a.once.Do(func() { close(a.release) }) }

func startAsker(t *testing.T) *asker {
	a := &asker{held: make(chan struct{}, 8), release: make(chan struct{})}
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "test"}, nil)
	type askArgs struct {
		Times   int    `json:"times"`
		Message string `json:"message"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, args askArgs) (*sdk.CallToolResult, any, error) {
		a.session.Store(req.Session)
		var got []string
		for range args.Times {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: args.Message, RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}, "required": []string{"answer"}}})
			if err != nil {
				got = append(got, "error: "+err.Error())
				continue
			}
			entry := res.Action
			if res.Content != nil {
				raw, _ := json.Marshal(res.Content)
				entry += string(raw)
			}
			got = append(got, entry)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(got, ",")}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "hold"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		a.held <- struct{}{}
		select {
		case <-a.release:
		case <-ctx.Done():
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "released"}}}, nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	// hs.Close waits for the calls it serves: a held one ends first.
	t.Cleanup(a.free)
	a.url = hs.URL
	return a
}

// elicitations records what an Elicitor was asked; it answers accept with
// {"answer":"yes"} after wait.
type elicitations struct {
	mu   sync.Mutex
	got  []mcp.Elicitation
	wait time.Duration
}

func (e *elicitations) elicit(ctx context.Context, el mcp.Elicitation) (mcp.ElicitAnswer, error) {
	e.mu.Lock()
	e.got = append(e.got, el)
	e.mu.Unlock()
	select {
	case <-time.After(e.wait): // a person taking their time
	case <-ctx.Done():
		return mcp.ElicitAnswer{}, ctx.Err()
	}
	return mcp.ElicitAnswer{Action: mcp.ElicitAccept, Content: map[string]any{"answer": "yes"}}, nil
}

func (e *elicitations) asked() []mcp.Elicitation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]mcp.Elicitation(nil), e.got...)
}

func startAskerManager(t *testing.T, a *asker, opts mcp.Options) *mcp.Manager {
	opts.Dir = t.TempDir()
	m := mcp.Start(context.Background(), mcp.Config{Servers: map[string]mcp.ServerConfig{"asker": {Type: mcp.TypeHTTP, URL: a.url}}}, opts)
	t.Cleanup(m.Close)
	if st, _ := m.Status("asker"); st.State != mcp.StateRunning {
		t.Fatalf("status %+v", st)
	}
	return m
}

// A call's elicitations reach its Elicitor with the server, the tool, the
// message and the schema; a call asks at most MaxElicitations times (the
// rest are declined unasked); and the call's timeout does not run while a
// person is asked (the answer comes after CallTimeout), though it does
// otherwise.
func TestACallsElicitationsReachItsElicitorWithinTheBound(t *testing.T) {
	a := startAsker(t)
	m := startAskerManager(t, a, mcp.Options{MaxElicitations: 2, CallTimeout: 300 * time.Millisecond})
	e := &elicitations{wait: 600 * time.Millisecond}
	// No deadline of the test's: the call's own timeout applies.
	bg, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := mcp.WithElicitor(bg, e.elicit)
	res, err := tool(t, m, "mcp__asker__ask").Run(ctx, nil, json.RawMessage(`{"times":3,"message":"Which branch?"}`))
	if err != nil {
		t.Fatalf("ask = %v, want the answers (the call's timeout stopped while the person was asked)", err)
	}
	if want := `accept{"answer":"yes"},accept{"answer":"yes"},decline`; res.Output != want {
		t.Fatalf("the server got %q, want %q", res.Output, want)
	}
	got := e.asked()
	if len(got) != 2 {
		t.Fatalf("the elicitor was asked %d times, want 2", len(got))
	}
	for i, el := range got {
		if el.Server != "asker" || el.Tool != "mcp__asker__ask" || el.Message != "Which branch?" || el.Seq != i+1 ||
			el.Timeout != 10*time.Minute || !strings.Contains(string(el.Schema), `"answer"`) {
			t.Fatalf("elicitation %d = %+v", i, el)
		}
	}
	// Without a person asked, the call's timeout runs.
	if _, err := tool(t, m, "mcp__asker__hold").Run(ctx, nil, nil); category(err) != tools.TimedOut {
		t.Fatalf("hold past the call timeout: %v, want %s", err, tools.TimedOut)
	}
}

// Elicitations that cannot be tied to one call with a person to ask are
// declined without asking anyone: a call without an Elicitor; a message
// above the bound; an elicitation while two calls of the server are in
// flight (which asks cannot be told); one while no call is.
func TestAnElicitationNotTiedToOneCallIsDeclinedUnasked(t *testing.T) {
	a := startAsker(t)
	m := startAskerManager(t, a, mcp.Options{})
	e := &elicitations{}
	ctx := mcp.WithElicitor(testkit.Context(t), e.elicit)
	ask := tool(t, m, "mcp__asker__ask")

	if res, err := call(t, ask, `{"times":1,"message":"nobody to ask"}`); err != nil || res.Output != "decline" {
		t.Fatalf("ask without an elicitor = %+v, %v; want declined", res, err)
	}
	long, _ := json.Marshal(map[string]any{"times": 1, "message": strings.Repeat("x", mcp.MaxElicitationMessage+1)})
	if res, err := ask.Run(ctx, nil, long); err != nil || res.Output != "decline" {
		t.Fatalf("ask with a long message = %+v, %v; want declined", res, err)
	}

	held := make(chan error, 1)
	go func() {
		_, err := tool(t, m, "mcp__asker__hold").Run(ctx, nil, nil)
		held <- err
	}()
	<-a.held
	if res, err := ask.Run(ctx, nil, json.RawMessage(`{"times":1,"message":"which call am I?"}`)); err != nil || res.Output != "decline" {
		t.Fatalf("ask beside another call = %+v, %v; want declined", res, err)
	}
	a.free()
	if err := <-held; err != nil {
		t.Fatal(err)
	}

	// The server asks when no call is in flight.
	sess := a.session.Load()
	res, err := sess.Elicit(testkit.Context(t), &sdk.ElicitParams{Message: "between calls", RequestedSchema: map[string]any{"type": "object"}})
	if err != nil || res.Action != mcp.ElicitDecline {
		t.Fatalf("an elicitation between calls = %+v, %v; want declined", res, err)
	}
	if n := len(e.asked()); n != 0 {
		t.Fatalf("the elicitor was asked %d times, want never", n)
	}
}
