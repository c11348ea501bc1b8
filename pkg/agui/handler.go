// Package agui serves the AG-UI protocol (the event protocol agent front
// ends such as CopilotKit speak) on the API port: POST /ag-ui takes a
// RunAgentInput and answers with the turn as a stream of AG-UI events, in
// SSE or AG-UI's binary protobuf encoding. It drives the runtime only
// through the control API (SubmitTurn, GetThreadRead, RespondAction,
// SubscribeEvents) with the caller's own credentials, so a front end can do
// exactly what its credentials allow and nothing more (docs/ag-ui.md).
package agui

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Path is where the handler is mounted.
const Path = "/ag-ui"

// Handler serves POST /ag-ui.
type Handler struct {
	control controlv1.ControlServiceClient
	log     *slog.Logger
}

// New returns a handler that calls the runtime through control, a client
// whose calls are authenticated like any caller's (server.Server.Local).
func New(control controlv1.ControlServiceClient, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{control: control, log: log}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "invalid_argument", "method", "POST a RunAgentInput")
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_argument", "Content-Type", "want application/json (a RunAgentInput)")
		return
	}
	enc := negotiate(r.Header.Get("Accept"))
	in, err := parseRun(http.MaxBytesReader(w, r.Body, maxBody), r.Header.Get("Last-Event-ID"))
	if err != nil {
		var tooBig *http.MaxBytesError
		var bad *inputError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, "resource_exhausted", "body", "a RunAgentInput may have at most 4 MiB")
		case errors.As(err, &bad):
			writeError(w, http.StatusBadRequest, "invalid_argument", bad.field, bad.message)
		default:
			writeError(w, http.StatusBadRequest, "invalid_argument", "body", "unreadable: "+err.Error())
		}
		return
	}
	ctx := withCredentials(r.Context(), r)
	p, err := h.plan(ctx, in)
	if err != nil {
		writeStatus(w, err)
		return
	}
	sub, err := h.control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		SessionId: in.sessionID, ThreadId: in.threadID,
		Start: controlv1.StartFrom_START_FROM_SEQUENCE, FromSequence: p.from,
	})
	if err != nil {
		writeStatus(w, err)
		return
	}
	w.Header().Set("Content-Type", enc.contentType())
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &runStream{h: h, in: in, p: p, w: w, enc: enc, flush: http.NewResponseController(w), tr: newTranslator(), open: newTracker()}
	if err := s.serve(ctx, sub); err != nil && ctx.Err() == nil {
		h.log.Debug("ag-ui stream ended", "thread", in.threadID, "run", in.runID, "error", err)
	}
}

// withCredentials passes the caller's credentials on to the API calls the
// handler makes: the API authenticates and authorizes them as the caller's
// own (the tenant comes from them, never from the body).
func withCredentials(ctx context.Context, r *http.Request) context.Context {
	md := metadata.MD{}
	if v := r.Header.Values("Authorization"); len(v) > 0 {
		md["authorization"] = v
	}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := r.Header.Get(k); v != "" {
			md[k] = []string{v}
		}
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// negotiate picks the encoding the Accept header asks for: AG-UI's binary
// protobuf when it names it, SSE otherwise.
func negotiate(accept string) encoder {
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != protoMediaType {
			continue
		}
		if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q == 0 {
			continue // "not acceptable"
		}
		return protoEncoder{}
	}
	return sseEncoder{}
}
