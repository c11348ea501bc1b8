package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A2A's JSON-RPC error codes (JSON-RPC's own, then A2A's).
const (
	codeParseError          = -32700
	codeInvalidRequest      = -32600
	codeMethodNotFound      = -32601
	codeInvalidParams       = -32602
	codeInternal            = -32603
	codeTaskNotFound        = -32001
	codeTaskNotCancelable   = -32002
	codePushNotSupported    = -32003
	codeUnsupported         = -32004
	codeExtendedCardMissing = -32007
	codeVersionNotSupported = -32009
	// codeAuth is the implementation-defined code of a refused credential;
	// the HTTP status (401 or 403) says which.
	codeAuth = -32000
)

// rpcError is a JSON-RPC error, with the HTTP status it is answered with
// (200 but for refused credentials).
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
	status  int
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d: %s", e.Code, e.Message) }

// invalidParams is a caller's mistake in a request, naming the field.
func invalidParams(field, format string, args ...any) *rpcError {
	msg := fmt.Sprintf(format, args...)
	return &rpcError{Code: codeInvalidParams, Message: field + ": " + msg, Data: map[string]any{"field": field}}
}

func taskNotFound(id string) *rpcError {
	return &rpcError{Code: codeTaskNotFound, Message: "task " + id + " not found", Data: map[string]any{"taskId": id}}
}

// fromStatus is an API error as a JSON-RPC error: NotFound of a task is
// TaskNotFound, a refused credential keeps its HTTP status, a field the
// API names stays named.
func fromStatus(err error, taskID string) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	st := status.Convert(err)
	data := map[string]any{"grpcCode": st.Code().String()}
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
			data["field"] = br.GetFieldViolations()[0].GetField()
		}
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			data["reason"] = ei.GetReason()
		}
	}
	e := &rpcError{Code: codeInternal, Message: st.Message(), Data: data}
	switch st.Code() {
	case codes.NotFound:
		if taskID != "" {
			e.Code, e.Message = codeTaskNotFound, "task "+taskID+" not found"
		} else {
			e.Code = codeInvalidParams
		}
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted, codes.ResourceExhausted:
		e.Code = codeInvalidParams
	case codes.Unauthenticated:
		e.Code, e.status = codeAuth, http.StatusUnauthorized
	case codes.PermissionDenied:
		e.Code, e.status = codeAuth, http.StatusForbidden
	case codes.Unimplemented:
		e.Code = codeUnsupported
	}
	return e
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// JSONRPC serves POST /a2a/jsonrpc.
func (h *Handler) JSONRPC() http.Handler {
	return http.HandlerFunc(h.serveJSONRPC)
}

func (h *Handler) serveJSONRPC(w http.ResponseWriter, r *http.Request) {
	null := json.RawMessage("null")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeRPC(w, http.StatusMethodNotAllowed, null, nil, &rpcError{Code: codeInvalidRequest, Message: "POST a JSON-RPC request"})
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		writeRPC(w, http.StatusUnsupportedMediaType, null, nil, &rpcError{Code: codeInvalidRequest, Message: "Content-Type: want application/json"})
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRPC(w, http.StatusRequestEntityTooLarge, null, nil, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("body: a request may have at most %d bytes", maxBody)})
			return
		}
		writeRPC(w, http.StatusBadRequest, null, nil, &rpcError{Code: codeParseError, Message: "body: unreadable: " + err.Error()})
		return
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		writeRPC(w, http.StatusOK, null, nil, &rpcError{Code: codeInvalidRequest, Message: "body: JSON-RPC batches are not supported; send one request per call"})
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeRPC(w, http.StatusOK, null, nil, &rpcError{Code: codeParseError, Message: "body: not a JSON-RPC request object: " + err.Error()})
		return
	}
	id := req.ID
	if len(id) == 0 {
		id = null
	}
	if req.JSONRPC != "2.0" || !validID(id) || req.Method == "" {
		writeRPC(w, http.StatusOK, null, nil, &rpcError{Code: codeInvalidRequest, Message: `a JSON-RPC 2.0 request has "jsonrpc": "2.0", a string or number id and a method`})
		return
	}
	if err := checkVersion(r); err != nil {
		writeRPC(w, http.StatusOK, id, nil, err)
		return
	}
	ctx := withCredentials(r.Context(), r)
	if err := h.checkTenant(ctx, "params.tenant", tenantOf(req.Params)); err != nil {
		writeRPC(w, http.StatusOK, id, nil, err)
		return
	}
	switch req.Method {
	case "SendStreamingMessage":
		out := newSSE(w, id)
		var p SendMessageRequest
		if err := decodeParams(req.Params, &p); err != nil {
			out.fail(err)
			return
		}
		h.sendStreaming(ctx, out, &p)
		return
	case "SubscribeToTask":
		out := newSSE(w, id)
		var p TaskIDRequest
		if err := decodeParams(req.Params, &p); err != nil {
			out.fail(err)
			return
		}
		h.subscribe(ctx, out, r.Header.Get, &p)
		return
	}
	result, rerr := h.call(ctx, req.Method, req.Params)
	if rerr != nil {
		status := rerr.status
		if status == 0 {
			status = http.StatusOK
		}
		writeRPC(w, status, id, nil, rerr)
		return
	}
	writeRPC(w, http.StatusOK, id, result, nil)
}

// call runs a method that answers once.
func (h *Handler) call(ctx context.Context, method string, params json.RawMessage) (any, *rpcError) {
	switch method {
	case "SendMessage":
		var p SendMessageRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		task, err := h.sendMessage(ctx, &p)
		if err != nil {
			return nil, err
		}
		return map[string]any{"task": task}, nil
	case "GetTask":
		var p TaskIDRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.getTask(ctx, &p)
	case "CancelTask":
		var p TaskIDRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.cancelTask(ctx, &p)
	case "ListTasks":
		var p ListTasksRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.listTasks(ctx, &p)
	case "CreateTaskPushNotificationConfig":
		var p TaskPushNotificationConfig
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.createPushConfig(ctx, "params", &p)
	case "GetTaskPushNotificationConfig":
		var p PushConfigRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.getPushConfig(ctx, &p)
	case "ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfig":
		var p ListPushConfigsRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		return h.listPushConfigs(ctx, &p)
	case "DeleteTaskPushNotificationConfig":
		var p PushConfigRequest
		if err := decodeParams(params, &p); err != nil {
			return nil, err
		}
		if err := h.deletePushConfig(ctx, &p); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	case "GetExtendedAgentCard":
		return nil, &rpcError{Code: codeExtendedCardMissing, Message: "this agent has no extended card"}
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "method " + method + " does not exist"}
}

// decodeParams reads params into v, naming the member of a wrong type.
func decodeParams(params json.RawMessage, v any) *rpcError {
	if len(params) == 0 || string(params) == "null" {
		return invalidParams("params", "required")
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return invalidParams("params."+typeErr.Field, "must be a JSON %s", typeErr.Type.Kind())
		}
		return invalidParams("params", "not an object of this method: %v", err)
	}
	return nil
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"', 'n':
		return true
	}
	var n json.Number
	return json.Unmarshal(id, &n) == nil
}

func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, result any, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(rpcResponse{JSONRPC: "2.0", ID: id, Result: result, Error: e})
}
