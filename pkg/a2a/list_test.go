package a2a_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/a2a"
	"github.com/agentruntime/agentruntime/pkg/auth"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/all/alltest"
)

const (
	acmeOperator   = "k-acme-operator-0123456789"
	acmeViewer     = "k-acme-viewer-01234567890"
	globexOperator = "k-globex-operator-0123456"
)

type listed struct {
	Tasks []struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
	} `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

// listTasks calls ListTasks over JSON-RPC with the key's credentials.
func listTasks(t *testing.T, url, key string, params map[string]any) (*listed, *rpcError) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result *listed   `json:"result"`
		Error  *rpcError `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Result, out.Error
}

// ListTasks without a contextId lists the tenant's tasks across its
// contexts and the partitions of the log they are in, newest first, each
// in the state its events fold to: paged with nothing missed or repeated;
// under a status filter each call examines a bounded number of turns
// (here 2) and the token resumes after the last one examined, so pages
// may be short, even empty, and still lead to every match; another
// tenant's tasks and tokens are never the caller's.
func TestListTasksWithoutAContextListsTheTenantsTasks(t *testing.T) {
	st := alltest.Start(t, alltest.Options{Partitions: 2, Keys: []auth.APIKeyConfig{
		{Name: "olive", Tenant: "acme", Role: "operator", Key: acmeOperator},
		{Name: "vera", Tenant: "acme", Role: "viewer", Key: acmeViewer},
		{Name: "gus", Tenant: "globex", Role: "operator", Key: globexOperator},
	}})
	base, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	submit := func(key, session string) *controlv1.Turn {
		t.Helper()
		resp, err := st.Control.SubmitTurn(as(key), &controlv1.SubmitTurnRequest{SessionId: session, ThreadId: session,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
		if err != nil {
			t.Fatal(err)
		}
		settle(t, st, as(key), session, resp.GetSequence())
		return resp.GetTurn()
	}

	parts := map[int]bool{}
	var turns []*controlv1.Turn
	for i := range 6 {
		s := "ctx-" + string(rune('a'+i))
		parts[st.Log.Subjects.PartitionOf("acme", s)] = true
		turns = append(turns, submit(acmeOperator, s))
	}
	if len(parts) != 2 {
		t.Fatalf("acme's sessions are in partitions %v, want both", parts)
	}
	theirs := []string{submit(globexOperator, "ctx-a").GetTurnId(), submit(globexOperator, "ctx-z").GetTurnId()}
	// Two tasks wait for an action (input-required: the turn was never
	// started, the fold says so); one is canceled; the rest submitted.
	want := map[string]string{}
	for i, tu := range turns {
		want[tu.GetTurnId()] = "TASK_STATE_SUBMITTED"
		switch i {
		case 1, 4:
			r, err := st.Control.RequestAction(as(acmeOperator), &controlv1.RequestActionRequest{SessionId: tu.GetSessionId(), ThreadId: tu.GetThreadId(),
				TurnId: tu.GetTurnId(), ActionId: "act_" + tu.GetSessionId(), ActionType: "input", Prompt: "Which?", Decisions: []string{"a", "b"}})
			if err != nil {
				t.Fatal(err)
			}
			settle(t, st, as(acmeOperator), tu.GetSessionId(), r.GetSequence())
			want[tu.GetTurnId()] = "TASK_STATE_INPUT_REQUIRED"
		case 2:
			r, err := st.Control.InterruptTurn(as(acmeOperator), &controlv1.InterruptTurnRequest{SessionId: tu.GetSessionId(), ThreadId: tu.GetThreadId(), TurnId: tu.GetTurnId()})
			if err != nil || !r.GetAccepted() {
				t.Fatalf("interrupt: %v %v", r, err)
			}
			settle(t, st, as(acmeOperator), tu.GetSessionId(), r.GetSequence())
			want[tu.GetTurnId()] = "TASK_STATE_CANCELED"
		}
	}
	// Newest first: by submission time in milliseconds, then id.
	slices.SortFunc(turns, func(a, b *controlv1.Turn) int {
		return cmp.Or(-cmp.Compare(a.GetSubmittedAt().AsTime().UnixMilli(), b.GetSubmittedAt().AsTime().UnixMilli()), -cmp.Compare(a.GetTurnId(), b.GetTurnId()))
	})
	newestFirst := func(state string) []string {
		var ids []string
		for _, tu := range turns {
			if state == "" || want[tu.GetTurnId()] == state {
				ids = append(ids, tu.GetTurnId())
			}
		}
		return ids
	}

	h := a2a.New(st.Control, a2a.Config{}, nil)
	a2a.SetListExamine(h, 2)
	srv := httptest.NewServer(h.JSONRPC())
	t.Cleanup(srv.Close)

	// pages lists every page of a listing; it fails past 20 calls.
	pages := func(key string, params map[string]any) (ids []string, calls []*listed) {
		t.Helper()
		for token := ""; ; {
			p := map[string]any{"pageToken": token}
			for k, v := range params {
				p[k] = v
			}
			res, err := listTasks(t, srv.URL, key, p)
			if err != nil {
				t.Fatalf("ListTasks %v: %+v", p, err)
			}
			calls = append(calls, res)
			for _, task := range res.Tasks {
				ids = append(ids, task.ID)
				state := params["status"]
				if s, _ := state.(string); s != "" && task.Status.State != s {
					t.Fatalf("task %s is %s under the filter %s", task.ID, task.Status.State, s)
				}
				if w, ok := want[task.ID]; ok && task.Status.State != w {
					t.Errorf("task %s is %s, want %s", task.ID, task.Status.State, w)
				}
			}
			if token = res.NextPageToken; token == "" || len(calls) > 20 {
				return ids, calls
			}
		}
	}

	// Every task, by pages of 4 and of 1, as a viewer.
	for _, size := range []int{4, 1, 100} {
		ids, calls := pages(acmeViewer, map[string]any{"pageSize": size})
		if !slices.Equal(ids, newestFirst("")) {
			t.Fatalf("pages of %d: %v, want %v", size, ids, newestFirst(""))
		}
		for _, c := range calls {
			if c.TotalSize != 6 || c.PageSize != size || len(c.Tasks) > size {
				t.Errorf("a page of %d: %d tasks, pageSize %d, totalSize %d, want totalSize 6", size, len(c.Tasks), c.PageSize, c.TotalSize)
			}
		}
	}
	// Under a filter: 2 turns examined a call, so 3 calls for 6 turns
	// however large the page; the last page's totalSize is exact.
	for _, state := range []string{"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED", "TASK_STATE_SUBMITTED", "TASK_STATE_COMPLETED"} {
		ids, calls := pages(acmeOperator, map[string]any{"status": state, "pageSize": 100})
		if !slices.Equal(ids, newestFirst(state)) || len(calls) != 3 {
			t.Fatalf("%s: %v in %d calls, want %v in 3", state, ids, len(calls), newestFirst(state))
		}
		if last := calls[len(calls)-1]; last.TotalSize != len(ids) {
			t.Errorf("%s: the last page's totalSize %d, want %d", state, last.TotalSize, len(ids))
		}
		for _, c := range calls {
			if c.TotalSize < len(ids) {
				t.Errorf("%s: a page's totalSize %d is below the %d there are", state, c.TotalSize, len(ids))
			}
		}
	}
	// A full page stops inside what it examined: the next resumes there.
	ids, _ := pages(acmeOperator, map[string]any{"status": "TASK_STATE_SUBMITTED", "pageSize": 1})
	if !slices.Equal(ids, newestFirst("TASK_STATE_SUBMITTED")) {
		t.Fatalf("submitted by pages of 1: %v, want %v", ids, newestFirst("TASK_STATE_SUBMITTED"))
	}

	// globex lists its own two, never acme's; acme's token is not its.
	ids, _ = pages(globexOperator, nil)
	slices.Sort(ids)
	slices.Sort(theirs)
	if !slices.Equal(ids, theirs) {
		t.Fatalf("globex lists %v, want its %v", ids, theirs)
	}
	first, rerr := listTasks(t, srv.URL, acmeOperator, map[string]any{"pageSize": 1})
	if rerr != nil || first.NextPageToken == "" {
		t.Fatalf("acme's first page: %+v %+v", first, rerr)
	}
	for _, bad := range []struct {
		key    string
		params map[string]any
		field  string
	}{
		{globexOperator, map[string]any{"pageToken": first.NextPageToken}, "params.pageToken"},
		{acmeOperator, map[string]any{"pageToken": "all.0.0.turn_nope"}, "params.pageToken"},
		{acmeOperator, map[string]any{"pageToken": "3"}, "params.pageToken"},
		{acmeOperator, map[string]any{"pageSize": 101}, "params.pageSize"},
		{acmeOperator, map[string]any{"pageSize": -1}, "params.pageSize"},
		{acmeOperator, map[string]any{"status": "TASK_STATE_BORED"}, "params.status"},
	} {
		res, err := listTasks(t, srv.URL, bad.key, bad.params)
		if err == nil || err.Code != -32602 || err.Data["field"] != bad.field {
			t.Errorf("ListTasks %v: %+v %+v, want -32602 naming %s", bad.params, res, err, bad.field)
		}
	}
}

// settle waits until control's read model has applied seq, in the
// session's partition.
func settle(t *testing.T, st *alltest.Stack, ctx context.Context, session string, seq uint64) {
	t.Helper()
	if _, err := st.Control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: session, ThreadId: session, MinSequence: seq}); err != nil {
		t.Fatal(err)
	}
}

// A page of 100 tasks, each of its own context (100 threads to fold),
// without a filter; and under a filter none matches, which examines 500
// turns (the call's bound) of 600. The building block is GetTask of one
// of those tasks over the same binding (one thread folded), measured in
// the same run: each sub-benchmark reports its time per task examined as
// a ratio to it.
func BenchmarkListTasksWithoutAContext(b *testing.B) {
	st := alltest.Start(b, alltest.Options{Partitions: 2})
	ctx := context.Background()
	var oneTask string
	for i := range 600 {
		s := "ctx-" + strconv.Itoa(i)
		r, err := st.Control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: s, ThreadId: s,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Control.GetThreadRead(ctx, &controlv1.GetThreadReadRequest{SessionId: s, ThreadId: s, MinSequence: r.GetSequence()}); err != nil {
			b.Fatal(err)
		}
		oneTask = r.GetTurn().GetTurnId()
	}
	srv := httptest.NewServer(a2a.New(st.Control, a2a.Config{}, nil).JSONRPC())
	b.Cleanup(srv.Close)
	rpc := func(method string, params map[string]any, result any) {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		resp, err := http.Post(srv.URL, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		out := struct {
			Result any `json:"result"`
		}{Result: result}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			b.Fatalf("%s: %v", method, err)
		}
	}
	call := func(params map[string]any) *listed {
		var out *listed
		rpc("ListTasks", params, &out)
		if out == nil {
			b.Fatalf("ListTasks %v: no result", params)
		}
		return out
	}
	// GetTask's median over 50 calls.
	var times []time.Duration
	for range 50 {
		var task struct {
			ID string `json:"id"`
		}
		began := time.Now()
		rpc("GetTask", map[string]any{"id": oneTask}, &task)
		times = append(times, time.Since(began))
		if task.ID != oneTask {
			b.Fatalf("GetTask %s: %+v", oneTask, task)
		}
	}
	slices.Sort(times)
	getTask := times[len(times)/2]
	perTask := func(b *testing.B, tasks int) {
		ms := float64(b.Elapsed()) / float64(b.N) / float64(tasks) / 1e6
		b.ReportMetric(ms, "ms/task")
		b.ReportMetric(float64(getTask)/1e6, "gettask-p50-ms")
		b.ReportMetric(ms/(float64(getTask)/1e6), "ratio-task/gettask")
	}
	b.Run("page of 100", func(b *testing.B) {
		for b.Loop() {
			if r := call(map[string]any{"pageSize": 100}); len(r.Tasks) != 100 {
				b.Fatalf("%d tasks", len(r.Tasks))
			}
		}
		perTask(b, 100)
	})
	b.Run("filter examining 500", func(b *testing.B) {
		for b.Loop() {
			if r := call(map[string]any{"status": "TASK_STATE_COMPLETED"}); len(r.Tasks) != 0 || r.NextPageToken == "" {
				b.Fatalf("%d tasks, next %q", len(r.Tasks), r.NextPageToken)
			}
		}
		perTask(b, 500)
	})
}
