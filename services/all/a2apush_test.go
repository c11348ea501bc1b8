package all_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/services/all/alltest"
	"github.com/agentruntime/agentruntime/services/control/domain"
	"github.com/agentruntime/agentruntime/services/kit"
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
	var turn string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("received %+v", rx.got)
			l, err := st.Control.ListWebhooks(testkit.Context(t), &controlv1.ListWebhooksRequest{A2ATaskId: turn})
			t.Logf("webhooks %v %v", l, err)
		}
	})
	sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go on"}}}})
	if err != nil {
		t.Fatal(err)
	}
	turn = sub.GetTurn().GetTurnId()
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
		l, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: turn})
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
	list, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: turn})
	if err != nil || len(list.GetWebhooks()) != 1 {
		t.Fatalf("list: %v %v", list, err)
	}
	if a := list.GetWebhooks()[0].GetA2APush(); a.GetToken() != "tok/c1" || a.GetAuthCredentials() != "" || a.GetAuthScheme() != "Bearer" || a.GetTaskId() != turn {
		t.Errorf("listed a2a_push %v, want the token and scheme, no credentials", a)
	}
}

// A2A push notification configs are the task's, not the tenant's: a
// tenant has configs on as many tasks as it runs, past its 32 webhooks,
// and a task at most 10. A config is kept while its task runs and after
// it ends for the retention (here about a second), long enough for the
// task's last state to be delivered; then the runtime collects it, as a
// fact that says why. A running task's configs, as old, stay.
func TestA2APushConfigsAreTheTasksAndCollectedAfterItEnds(t *testing.T) {
	st := alltest.Start(t, alltest.Options{HookAllowHosts: []string{"127.0.0.1"}, WebhookKey: webhookKey,
		WebhookRetry: kit.WebhookRetry{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond,
			MaxAge: 500 * time.Millisecond, AttemptTimeout: 500 * time.Millisecond,
			A2APushRetention: time.Millisecond, A2APushCollectEvery: 20 * time.Millisecond}})
	ctx := testkit.Context(t)
	rx := newPushReceiver(t)
	var turns []string
	for i := range 4 {
		sub, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: fmt.Sprint("th", i),
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "go on"}}}})
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, sub.GetTurn().GetTurnId())
	}
	ids := map[string][]string{}
	var last uint64
	for i, turn := range turns {
		for c := range domain.MaxA2APushConfigsPerTask {
			wh, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: fmt.Sprintf("%s/t%d/c%d", rx.URL, i, c),
				A2APush: &controlv1.A2APush{TaskId: turn, ConfigId: fmt.Sprint("c", c)}})
			if err != nil {
				t.Fatalf("config %d of task %d (%d in all, past the tenant's %d webhooks): %v", c, i, len(ids)*10+c+1, domain.MaxWebhooksPerTenant, err)
			}
			ids[turn] = append(ids[turn], wh.GetWebhook().GetWebhookId())
			last = max(last, wh.GetSequence())
		}
	}
	_, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + "/one-too-many", A2APush: &controlv1.A2APush{TaskId: turns[0]}})
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "at most 10") {
		t.Errorf("an 11th config on a task: %v, want ResourceExhausted", err)
	}
	general, err := st.Control.CreateWebhook(ctx, &controlv1.CreateWebhookRequest{Url: rx.URL + "/pager"})
	if err != nil {
		t.Fatalf("a webhook beside 40 A2A configs: %v", err)
	}
	if l, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{MinSequence: general.GetSequence()}); err != nil ||
		len(l.GetWebhooks()) != 1 || l.GetWebhooks()[0].GetWebhookId() != general.GetWebhook().GetWebhookId() {
		t.Errorf("the tenant's webhooks: %v %v, want the one that is no A2A config", l, err)
	}

	// The first task ends (an interrupt: no worker holds it).
	if _, err := st.Control.InterruptTurn(ctx, &controlv1.InterruptTurnRequest{SessionId: "s1", ThreadId: "th0", TurnId: turns[0], Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the ended task's configs collected", func() bool {
		l, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: turns[0]})
		return err == nil && len(l.GetWebhooks()) == 0
	})
	// Each got the task's last state before it went.
	for c := range domain.MaxA2APushConfigsPerTask {
		got := rx.requests(fmt.Sprintf("/t0/c%d", c))
		if len(got) == 0 || got[len(got)-1].state != "TASK_STATE_CANCELED" {
			t.Errorf("config c%d of the ended task got %+v, want the canceled task last", c, got)
		}
	}
	for _, id := range ids[turns[0]] {
		var reason string
		if _, err := st.Log.ReadAggregate(ctx, eventlog.Aggregate{Tenant: "t1", Session: eventlog.NoSession, Kind: "webhook", ID: id}, 0, func(r *eventlog.Record) error {
			if r.Event.GetType() == events.TypeChannelDisconnected {
				reason = r.Event.GetChannelDisconnected().GetReason()
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(reason, "collected: its A2A task "+turns[0]+" ended at") {
			t.Errorf("config %s ended with %q, want collected because its task ended", id, reason)
		}
	}
	// The running tasks' configs, as old and looked at as often, stay.
	for _, turn := range turns[1:] {
		if l, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: turn, MinSequence: last}); err != nil || len(l.GetWebhooks()) != domain.MaxA2APushConfigsPerTask {
			t.Errorf("configs of running task %s: %d %v, want all %d", turn, len(l.GetWebhooks()), err, domain.MaxA2APushConfigsPerTask)
		}
	}
	// Another tenant's task is not found, and its configs not listed.
	if _, err := st.Control.ListWebhooks(ctx, &controlv1.ListWebhooksRequest{A2ATaskId: "turn_nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("configs of an unknown task: %v, want NotFound", err)
	}
}
