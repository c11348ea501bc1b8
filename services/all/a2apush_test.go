package all_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// pushRequest is one request an A2A push receiver got.
type pushRequest struct {
	path, id, token, authorization, contentType string
	state, task                                 string
	status                                      int
}

// pushReceiver records A2A push notifications; it answers 500 to the
// first request of each path in failFirst.
type pushReceiver struct {
	URL       string
	mu        sync.Mutex
	got       []pushRequest
	failFirst map[string]bool
}

func newPushReceiver(t testing.TB, failFirst ...string) *pushReceiver {
	r := &pushReceiver{failFirst: map[string]bool{}}
	for _, p := range failFirst {
		r.failFirst[p] = true
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		raw, _ := io.ReadAll(req.Body)
		var body struct {
			Task struct {
				ID     string `json:"id"`
				Status struct {
					State string `json:"state"`
				} `json:"status"`
			} `json:"task"`
		}
		_ = json.Unmarshal(raw, &body)
		p := pushRequest{path: req.URL.Path, id: req.Header.Get("webhook-id"), token: req.Header.Get("X-A2A-Notification-Token"),
			authorization: req.Header.Get("Authorization"), contentType: req.Header.Get("Content-Type"),
			state: body.Task.Status.State, task: body.Task.ID, status: http.StatusOK}
		r.mu.Lock()
		if r.failFirst[p.path] {
			delete(r.failFirst, p.path)
			p.status = http.StatusInternalServerError
		}
		r.got = append(r.got, p)
		r.mu.Unlock()
		w.WriteHeader(p.status)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *pushReceiver) requests(path string) []pushRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []pushRequest
	for _, p := range r.got {
		if p.path == path {
			out = append(out, p)
		}
	}
	return out
}

// An A2A push notification config (a webhook with a2a_push) delivers its
// task as A2A's StreamResponse, folded from the log when it is sent: at
// its creation, then at each change of the task's state (here, the
// action it waits for), with the token and the credentials, through a
// receiver's 5xx (retried, the same webhook-id). Deleted, it delivers
// nothing more; another turn's events are never its.
func TestA2APushDeliversTheTaskAsItIsWithTheToken(t *testing.T) {
	st := webhookStack(t)
	ctx := testkit.Context(t)
	rx := newPushReceiver(t, "/c1")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("received %+v", rx.got)
			l, err := st.Control.ListWebhooks(testkit.Context(t), &controlv1.ListWebhooksRequest{})
			t.Logf("webhooks %v %v", l, err)
		}
	})
	sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go on"}}}})
	if err != nil {
		t.Fatal(err)
	}
	turn := sub.GetTurn().GetTurnId()
	push := func(path string) *controlv1.CreateWebhookResponse {
		t.Helper()
		c, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + path,
			A2APush: &controlv1.A2APush{TaskId: turn, ConfigId: path[1:], Token: "tok" + path, AuthScheme: "Bearer", AuthCredentials: "cred" + path}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	push("/c1")
	gone := push("/c2")
	testkit.Eventually(t, "c2's creation delivered", func() bool { return len(rx.requests("/c2")) == 1 })
	if _, err := st.Control.DeleteWebhook(ctx, &controlv1.DeleteWebhookRequest{WebhookId: gone.GetWebhook().GetWebhookId()}); err != nil {
		t.Fatal(err)
	}
	// Another turn of the session: none of its events are c1's.
	if _, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "later"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Control.RequestAction(ctx, &controlv1.RequestActionRequest{SessionId: "s1", ThreadId: "th1", TurnId: turn,
		ActionId: "act_1", ActionType: "input", Prompt: "Which branch?", Decisions: []string{"main", "dev"}}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "c1's two deliveries recorded", func() bool {
		l, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{})
		return err == nil && len(l.GetWebhooks()) == 1 && l.GetWebhooks()[0].GetDelivered() == 2
	})
	got := rx.requests("/c1")
	// The creation's (500, then again, the same webhook-id), then
	// action.required's: the task as the log has it when each is sent.
	if len(got) != 3 || got[0].status != http.StatusInternalServerError || got[1].id != got[0].id || got[1].status != http.StatusOK ||
		got[2].id == got[0].id || got[2].state != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("c1's requests %+v, want the creation's delivery failed once and retried, then action.required's, input-required", got)
	}
	for _, p := range got {
		if p.token != "tok/c1" || p.authorization != "Bearer cred/c1" || p.contentType != "application/a2a+json" || p.task != turn ||
			(p.state != "TASK_STATE_SUBMITTED" && p.state != "TASK_STATE_INPUT_REQUIRED") {
			t.Errorf("c1's request %+v, want task %s submitted or input-required, with the token, the credentials and application/a2a+json", p, turn)
		}
	}
	if c2 := rx.requests("/c2"); len(c2) != 1 {
		t.Errorf("c2, deleted, got %+v, want its creation's delivery only", c2)
	}
	// The config's credentials are not read back; its token is.
	list, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{})
	if err != nil || len(list.GetWebhooks()) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if a := list.GetWebhooks()[0].GetA2APush(); a.GetToken() != "tok/c1" || a.GetAuthCredentials() != "" || a.GetAuthScheme() != "Bearer" || a.GetTaskId() != turn {
		t.Errorf("listed a2a_push %v, want the token and scheme, no credentials", a)
	}
}
