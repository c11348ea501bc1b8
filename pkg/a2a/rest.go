package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// RESTPath is where the HTTP+JSON binding is mounted: its paths are below
// it (/a2a/rest/message:send, /a2a/rest/tasks/{id}, ...).
const RESTPath = "/a2a/rest"

// The google.rpc types of an HTTP+JSON error's details.
const (
	errorInfoType  = "type.googleapis.com/google.rpc.ErrorInfo"
	badRequestType = "type.googleapis.com/google.rpc.BadRequest"
	errorDomain    = "a2a-protocol.org"
)

// restKinds are the HTTP status, the google.rpc code name and the A2A
// reason of each JSON-RPC error code.
var restKinds = map[int]struct {
	status       int
	code, reason string
}{
	codeTaskNotFound:        {http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"},
	codeTaskNotCancelable:   {http.StatusConflict, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"},
	codePushNotSupported:    {http.StatusBadRequest, "UNIMPLEMENTED", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
	codeUnsupported:         {http.StatusBadRequest, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"},
	-32005:                  {http.StatusUnsupportedMediaType, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
	codeExtendedCardMissing: {http.StatusBadRequest, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	codeVersionNotSupported: {http.StatusBadRequest, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"},
	codeInvalidParams:       {http.StatusBadRequest, "INVALID_ARGUMENT", ""},
	codeInvalidRequest:      {http.StatusBadRequest, "INVALID_ARGUMENT", ""},
	codeParseError:          {http.StatusBadRequest, "INVALID_ARGUMENT", ""},
	codeMethodNotFound:      {http.StatusNotFound, "NOT_FOUND", ""},
	codeInternal:            {http.StatusInternalServerError, "INTERNAL", ""},
}

// restError is e as an HTTP+JSON error body: a google.rpc.Status with the
// A2A reason in an ErrorInfo and the field in a BadRequest.
func restError(e *rpcError) map[string]any {
	k, ok := restKinds[e.Code]
	if !ok {
		k = restKinds[codeInternal]
	}
	status, code := k.status, k.code
	switch e.status {
	case http.StatusUnauthorized:
		status, code = e.status, "UNAUTHENTICATED"
	case http.StatusForbidden:
		status, code = e.status, "PERMISSION_DENIED"
	case http.StatusRequestEntityTooLarge:
		status, code = e.status, "RESOURCE_EXHAUSTED"
	}
	var details []any
	if k.reason != "" {
		meta := map[string]string{}
		for key, v := range e.Data {
			if s, ok := v.(string); ok {
				meta[key] = s
			}
		}
		details = append(details, map[string]any{"@type": errorInfoType, "reason": k.reason, "domain": errorDomain, "metadata": meta})
	}
	if f, ok := e.Data["field"].(string); ok {
		details = append(details, map[string]any{"@type": badRequestType, "fieldViolations": []any{map[string]any{"field": f, "description": e.Message}}})
	}
	return map[string]any{"error": map[string]any{"code": status, "status": code, "message": e.Message, "details": details}}
}

func writeREST(w http.ResponseWriter, e *rpcError) {
	body := restError(e)
	status := body["error"].(map[string]any)["code"].(int)
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// REST serves the HTTP+JSON binding below /a2a/rest/.
func (h *Handler) REST() http.Handler {
	return http.HandlerFunc(h.serveREST)
}

func (h *Handler) serveREST(w http.ResponseWriter, r *http.Request) {
	rest, _ := strings.CutPrefix(r.URL.Path, RESTPath+"/")
	if err := checkVersion(r); err != nil {
		writeREST(w, err)
		return
	}
	ctx := withCredentials(r.Context(), r)
	tenant, rest := splitTenant(rest)
	if err := h.checkTenant(ctx, "tenant", tenant); err != nil {
		writeREST(w, err)
		return
	}
	post := r.Method == http.MethodPost
	answer := func(v any, err *rpcError) {
		if err != nil {
			writeREST(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case rest == "message:send" && post:
		var p SendMessageRequest
		if err := readBody(w, r, &p); err != nil {
			writeREST(w, err)
			return
		}
		if err := h.checkTenant(ctx, "tenant", p.Tenant); err != nil {
			writeREST(w, err)
			return
		}
		task, err := h.sendMessage(ctx, &p)
		answer(map[string]any{"task": task}, err)
	case rest == "message:stream" && post:
		out := newRESTSSE(w)
		var p SendMessageRequest
		if err := readBody(w, r, &p); err != nil {
			out.fail(err)
			return
		}
		if err := h.checkTenant(ctx, "tenant", p.Tenant); err != nil {
			out.fail(err)
			return
		}
		h.sendStreaming(ctx, out, &p)
	case rest == "tasks" && r.Method == http.MethodGet:
		q := r.URL.Query()
		p := ListTasksRequest{ContextID: q.Get("contextId"), Status: q.Get("status"), PageToken: q.Get("pageToken"), IncludeArtifacts: q.Get("includeArtifacts") == "true"}
		if !pageSize(w, q, &p.PageSize) {
			return
		}
		res, err := h.listTasks(ctx, &p)
		answer(res, err)
	case rest == "extendedAgentCard":
		writeREST(w, &rpcError{Code: codeExtendedCardMissing, Message: "this agent has no extended card"})
	case strings.HasPrefix(rest, "tasks/"):
		h.serveRESTTask(w, r, strings.TrimPrefix(rest, "tasks/"), answer)
	default:
		writeREST(w, &rpcError{Code: codeMethodNotFound, Message: r.Method + " " + r.URL.Path + " is not a route of the HTTP+JSON binding"})
	}
}

// serveRESTTask serves tasks/{id}, tasks/{id}:cancel and
// tasks/{id}:subscribe.
func (h *Handler) serveRESTTask(w http.ResponseWriter, r *http.Request, rest string, answer func(any, *rpcError)) {
	ctx := withCredentials(r.Context(), r)
	if task, cfg, ok := strings.Cut(rest, "/pushNotificationConfigs"); ok {
		h.serveRESTPush(w, r, task, cfg, answer)
		return
	}
	id, verb, _ := strings.Cut(rest, ":")
	id, err := url.PathUnescape(id)
	if err != nil || strings.Contains(id, "/") {
		writeREST(w, invalidParams("id", "not a task id"))
		return
	}
	p := TaskIDRequest{ID: id}
	switch {
	case verb == "" && r.Method == http.MethodGet:
		task, err := h.getTask(ctx, &p)
		answer(task, err)
	case verb == "cancel" && r.Method == http.MethodPost:
		task, err := h.cancelTask(ctx, &p)
		answer(task, err)
	case verb == "subscribe" && (r.Method == http.MethodPost || r.Method == http.MethodGet):
		h.subscribe(ctx, newRESTSSE(w), r.Header.Get, &p)
	default:
		writeREST(w, &rpcError{Code: codeMethodNotFound, Message: r.Method + " " + r.URL.Path + " is not a route of the HTTP+JSON binding"})
	}
}

// serveRESTPush serves tasks/{id}/pushNotificationConfigs (POST: create,
// GET: list) and tasks/{id}/pushNotificationConfigs/{configId} (GET,
// DELETE).
func (h *Handler) serveRESTPush(w http.ResponseWriter, r *http.Request, task, rest string, answer func(any, *rpcError)) {
	ctx := withCredentials(r.Context(), r)
	task, err1 := url.PathUnescape(task)
	cfg, err2 := url.PathUnescape(strings.TrimPrefix(rest, "/"))
	if err1 != nil || err2 != nil || strings.Contains(task, "/") || strings.Contains(cfg, "/") || (rest != "" && !strings.HasPrefix(rest, "/")) {
		writeREST(w, &rpcError{Code: codeMethodNotFound, Message: r.Method + " " + r.URL.Path + " is not a route of the HTTP+JSON binding"})
		return
	}
	switch {
	case cfg == "" && r.Method == http.MethodPost:
		var p TaskPushNotificationConfig
		if err := readBody(w, r, &p); err != nil {
			writeREST(w, err)
			return
		}
		if p.TaskID != "" && p.TaskID != task {
			writeREST(w, invalidParams("taskId", "%q is not the path's task %s", p.TaskID, task))
			return
		}
		p.TaskID = task
		c, err := h.createPushConfig(ctx, "params", &p)
		answer(c, err)
	case cfg == "" && r.Method == http.MethodGet:
		q := r.URL.Query()
		p := ListPushConfigsRequest{TaskID: task, PageToken: q.Get("pageToken")}
		if !pageSize(w, q, &p.PageSize) {
			return
		}
		res, err := h.listPushConfigs(ctx, &p)
		answer(res, err)
	case cfg != "" && r.Method == http.MethodGet:
		c, err := h.getPushConfig(ctx, &PushConfigRequest{TaskID: task, ID: cfg})
		answer(c, err)
	case cfg != "" && r.Method == http.MethodDelete:
		err := h.deletePushConfig(ctx, &PushConfigRequest{TaskID: task, ID: cfg})
		answer(struct{}{}, err)
	default:
		writeREST(w, &rpcError{Code: codeMethodNotFound, Message: r.Method + " " + r.URL.Path + " is not a route of the HTTP+JSON binding"})
	}
}

// isRoute says whether rest is one of the binding's routes (below
// RESTPath, after a tenant prefix if any).
func isRoute(rest string) bool {
	switch rest {
	case "message:send", "message:stream", "tasks", "extendedAgentCard":
		return true
	}
	return strings.HasPrefix(rest, "tasks/")
}

// splitTenant takes the /{tenant} prefix A2A's HTTP+JSON paths may have
// (a client sends it when the card's interface names a tenant) off rest.
func splitTenant(rest string) (tenant, route string) {
	if isRoute(rest) {
		return "", rest
	}
	seg, after, ok := strings.Cut(rest, "/")
	if !ok || !isRoute(after) {
		return "", rest
	}
	t, err := url.PathUnescape(seg)
	if err != nil || t == "" {
		return "", rest
	}
	return t, after
}

// readBody reads a JSON request body into v, bounded like JSON-RPC's.
func readBody(w http.ResponseWriter, r *http.Request, v any) *rpcError {
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (ct != "application/json" && ct != "application/a2a+json") {
		return &rpcError{Code: -32005, Message: "Content-Type: want application/json", Data: map[string]any{"field": "Content-Type"}}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("body: a request may have at most %d bytes", maxBody), status: http.StatusRequestEntityTooLarge}
		}
		return invalidParams("body", "unreadable: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return invalidParams(typeErr.Field, "must be a JSON %s", typeErr.Type.Kind())
		}
		return invalidParams("body", "not a JSON object of this method: %v", err)
	}
	return nil
}

// pageSize reads a list's pageSize query parameter into n; false when it
// is not a number (the refusal is written).
func pageSize(w http.ResponseWriter, q url.Values, n *int) bool {
	s := q.Get("pageSize")
	if s == "" {
		return true
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		writeREST(w, invalidParams("pageSize", "must be a number"))
		return false
	}
	*n = v
	return true
}
