// Package a2a serves the runtime as an A2A 1.0 agent on the API port: the
// agent card at /.well-known/agent-card.json, the JSON-RPC binding at
// /a2a/jsonrpc and the HTTP+JSON binding below /a2a/rest. A message becomes a turn, the task is the turn (its id the
// turn id), the context is the session and thread. It drives the runtime
// only through the control API (SubmitTurn, SubscribeEvents, RespondAction,
// InterruptTurn, GetThreadRead, GetTurnAttempts) with the caller's own
// credentials, so an A2A client can do exactly what its credentials allow
// and nothing more (docs/a2a.md).
package a2a

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"google.golang.org/grpc/metadata"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// Paths where the handlers are mounted.
const (
	CardPath    = "/.well-known/agent-card.json"
	JSONRPCPath = "/a2a/jsonrpc"
)

// ProtocolVersion is the A2A version this server speaks.
const ProtocolVersion = "1.0"

// CursorExtension is the URI of the extension that resumes a stream after
// the item that carried a cursor (docs/a2a.md, "The cursor extension").
const CursorExtension = "https://github.com/agentruntime/agentruntime/blob/main/docs/a2a.md#the-cursor-extension"

// CursorHeader is the request header SubscribeToTask reads a cursor from
// (Last-Event-ID is the other spelling).
const CursorHeader = "A2A-Agentruntime-Cursor"

// maxBody bounds a request: a message is a turn's input, which the API
// bounds (64 parts) well below this.
const maxBody = 1 << 20

// Config is what the agent card says.
type Config struct {
	Name        string
	Description string
	Version     string
	Skills      []AgentSkill
	// Auth says bearer credentials are required (--auth).
	Auth bool
	// Tenant authenticates credentials (the Authorization header's values)
	// as the API does and answers their tenant: the card's interfaces
	// name the caller's tenant with it, and a request that names a tenant
	// is checked against it. Nil: neither.
	Tenant func(ctx context.Context, authorization []string) (string, error)
}

// Handler serves the agent card and the JSON-RPC binding.
type Handler struct {
	control controlv1.ControlServiceClient
	log     *slog.Logger
	cfg     Config
	// examine bounds the turns a filtered ListTasks call without a
	// contextId examines (listExamine).
	examine int64
}

// New returns a handler that calls the runtime through control, a client
// whose calls are authenticated like any caller's (server.Server.Local).
func New(control controlv1.ControlServiceClient, cfg Config, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Name == "" {
		cfg.Name = "agentruntime"
	}
	if cfg.Description == "" {
		cfg.Description = "An Agent Runtime: each message is a turn of a durable agent thread, with tools, approvals and subagents."
	}
	if len(cfg.Skills) == 0 {
		cfg.Skills = []AgentSkill{{ID: "turn", Name: "Agent turn",
			Description: "Runs a turn of the runtime's agent on the message: it may use tools and ask for approvals (input-required).",
			Tags:        []string{"agent", "tools"}}}
	}
	return &Handler{control: control, log: log, cfg: cfg, examine: listExamine}
}

// Card serves GET /.well-known/agent-card.json.
func (h *Handler) Card() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "GET the agent card", http.StatusMethodNotAllowed)
			return
		}
		c := h.card(baseURL(r))
		if t := h.cardTenant(r); t != "" {
			for i := range c.SupportedInterfaces {
				c.SupportedInterfaces[i].Tenant = t
			}
		}
		w.Header().Set("Content-Type", "application/json")
		// The card depends on the credentials it was fetched with.
		w.Header().Set("Vary", "Authorization")
		_ = json.NewEncoder(w).Encode(c)
	})
}

// cardTenant is the tenant the card names in its interfaces: with --auth,
// the tenant of the request's credentials. A card fetched without
// credentials, or with credentials the API refuses, names none (it is
// public, and says nothing of any tenant): a client that fetched it so
// sends no tenant, and the server takes the tenant from the credentials
// of each call. Without --auth there is one tenant, never named.
func (h *Handler) cardTenant(r *http.Request) string {
	authz := r.Header.Values("Authorization")
	if !h.cfg.Auth || h.cfg.Tenant == nil || len(authz) == 0 {
		return ""
	}
	t, err := h.cfg.Tenant(r.Context(), authz)
	if err != nil {
		return ""
	}
	return t
}

// checkTenant refuses a request that names a tenant (A2A's tenant field,
// or the HTTP+JSON path's /{tenant} prefix) other than its credentials':
// the tenant always comes from the credentials, and a request meant for
// another must not run as this one's. None named is the credentials'.
func (h *Handler) checkTenant(ctx context.Context, field, tenant string) *rpcError {
	if tenant == "" || h.cfg.Tenant == nil {
		return nil
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	got, err := h.cfg.Tenant(ctx, md.Get("authorization"))
	if err != nil {
		// The API refuses the credentials on the call itself.
		return nil
	}
	if got != tenant {
		return invalidParams(field, "%q is not the tenant of these credentials", tenant)
	}
	return nil
}

// tenantOf is the tenant member of a request's params, if any.
func tenantOf(params []byte) string {
	var p struct {
		Tenant string `json:"tenant"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Tenant
}

func (h *Handler) card(base string) AgentCard {
	c := AgentCard{
		Name: h.cfg.Name, Description: h.cfg.Description, Version: h.cfg.Version,
		SupportedInterfaces: []AgentInterface{
			{URL: base + JSONRPCPath, ProtocolBinding: "JSONRPC", ProtocolVersion: ProtocolVersion},
			{URL: base + RESTPath, ProtocolBinding: "HTTP+JSON", ProtocolVersion: ProtocolVersion},
			// gRPC is on the same port: its URL is the bare host:port.
			{URL: strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://"), ProtocolBinding: "GRPC", ProtocolVersion: ProtocolVersion},
		},
		Capabilities: AgentCapabilities{Streaming: true, PushNotifications: true, Extensions: []AgentExtension{{
			URI:         CursorExtension,
			Description: "Every streamed item carries the runtime's cursor in metadata.agentruntime.cursor (and as the SSE id); SubscribeToTask with that cursor in the " + CursorHeader + " or Last-Event-ID header resumes after it with nothing missed and nothing repeated, and a finished task's subscription replays it to its end.",
		}}},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             h.cfg.Skills,
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if h.cfg.Auth {
		c.SecuritySchemes = map[string]any{"bearer": map[string]any{
			"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": "An API key or token of the runtime (docs/security.md)"}}}
		c.SecurityRequirements = []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	}
	return c
}

// hostPattern is a host name or an IP literal, with an optional port.
var hostPattern = regexp.MustCompile(`^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// baseURL is the scheme and host the request came to, for the card's
// interface URLs.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	host := r.Host
	if !hostPattern.MatchString(host) {
		// A Host no client would send (the card is public: it does not
		// echo what a request made up).
		host = "localhost"
	}
	return scheme + "://" + host
}

// checkVersion refuses a request for an A2A version this server does not
// speak (the A2A-Version header; none means 1.0 here).
func checkVersion(r *http.Request) *rpcError { return checkVersionOf(r.Header.Get) }

func checkVersionOf(header func(string) string) *rpcError {
	v := strings.TrimSpace(header("A2A-Version"))
	if v == "" || v == ProtocolVersion || strings.HasPrefix(v, "1.") {
		return nil
	}
	return &rpcError{Code: codeVersionNotSupported, Message: "A2A-Version " + v + " is not supported: this agent speaks A2A " + ProtocolVersion,
		Data: map[string]any{"field": "A2A-Version"}}
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
