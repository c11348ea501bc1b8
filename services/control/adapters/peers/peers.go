// Package peers is the control service's A2A client: it resolves a peer
// agent's card and talks to it (send, subscribe, get, cancel) through the
// A2A Go SDK's client (a2aclient), over the card's JSON-RPC or HTTP+JSON
// interface. Every URL it calls is checked against the operator's
// allowlist (--a2a-peers): the card's, and each interface the card names,
// since a card could point the runtime at any internal address. Each
// request carries the credential the operator configured for its own host
// (--a2a-peer-credentials, transport.go), none when there is none.
package peers

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/peerauth"
)

// Dialer connects to allowed peers.
type Dialer struct {
	// Hosts are the hosts a peer's card and interfaces may name; the zero
	// List allows none.
	Hosts hostallow.List
	// HTTP makes every call; it follows no redirect (a redirect would
	// reach a host nobody checked, and take a credential there). No
	// overall timeout: streams are long; each call is bounded by its
	// context. NewDialer's gives each request its host's credential.
	HTTP *http.Client
	// CardTimeout bounds reading a card; default 10 s.
	CardTimeout time.Duration
}

// NewDialer returns a Dialer restricted to hosts that sends creds (nil:
// none) to the hosts they are for.
func NewDialer(hosts hostallow.List, creds *peerauth.Set) *Dialer {
	return &Dialer{Hosts: hosts, CardTimeout: 10 * time.Second,
		HTTP: &http.Client{
			Transport:     &transport{base: http.DefaultTransport, creds: creds},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// ErrNotAllowed is a URL whose host the allowlist does not hold.
var ErrNotAllowed = errors.New("not allowed")

// Check says whether cardURL may be called: an http(s) URL whose host
// and port the allowlist holds.
func (d *Dialer) Check(cardURL string) error {
	host, port, err := hostallow.HostPort(cardURL)
	if err != nil {
		return err
	}
	if !d.Hosts.Allows(host, port) {
		return fmt.Errorf("host %s:%s is %w as an A2A peer (--a2a-peers, AR_A2A_PEERS; see docs/a2a.md)", host, port, ErrNotAllowed)
	}
	return nil
}

// Peer is a connected peer agent.
type Peer struct {
	Card *a2a.AgentCard
	c    *a2aclient.Client
}

// Dial reads the card at cardURL (a URL ending in .json is the card
// itself; otherwise its /.well-known/agent-card.json) and connects to the
// first of its JSON-RPC or HTTP+JSON interfaces the allowlist holds.
func (d *Dialer) Dial(ctx context.Context, cardURL string) (*Peer, error) {
	if err := d.Check(cardURL); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, d.CardTimeout)
	defer cancel()
	var opts []agentcard.ResolveOption
	if u, err := url.Parse(cardURL); err == nil && strings.HasSuffix(u.Path, ".json") {
		opts = append(opts, agentcard.WithPath(""))
	}
	card, err := (&agentcard.Resolver{Client: d.HTTP, CardParser: parseCard}).Resolve(cctx, cardURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("reading the card %s: %w", cardURL, err)
	}
	allowed := *card
	allowed.SupportedInterfaces = nil
	var refused []string
	for _, i := range card.SupportedInterfaces {
		if i == nil || (i.ProtocolBinding != a2a.TransportProtocolJSONRPC && i.ProtocolBinding != a2a.TransportProtocolHTTPJSON) {
			continue
		}
		if err := d.Check(i.URL); err != nil {
			refused = append(refused, i.URL)
			continue
		}
		allowed.SupportedInterfaces = append(allowed.SupportedInterfaces, i)
	}
	if len(allowed.SupportedInterfaces) == 0 {
		return nil, fmt.Errorf("the card %s names no JSON-RPC or HTTP+JSON interface on an allowed host (refused: %s)", cardURL, strings.Join(refused, ", "))
	}
	c, err := a2aclient.NewFromCard(ctx, &allowed, a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(d.HTTP), a2aclient.WithRESTTransport(d.HTTP))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cardURL, err)
	}
	return &Peer{Card: &allowed, c: c}, nil
}

// parseCard reads a card as a2aclient's parser does, after writing its
// security as that parser takes it, so that a card that declares
// security parses whoever wrote it:
//   - the A2A 1.0 JSON of a requirement is {"schemes": {"name": {"list":
//     [scopes]}}}, and a2a-go 2.3.1 reads only {"schemes": {"name":
//     [scopes]}};
//   - @a2a-js/sdk 1.3.0's card handler writes a scheme as its TypeScript
//     object, {"scheme": {"$case": "httpAuthSecurityScheme", "value":
//     {...}}}, where the A2A JSON is {"httpAuthSecurityScheme": {...}}
//     (examples/a2a/peer.mjs's card with a token is such a card).
func parseCard(body []byte) (*a2a.AgentCard, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	flattenScopes(raw)
	if schemes, ok := raw["securitySchemes"].(map[string]any); ok {
		for name, v := range schemes {
			m, ok := v.(map[string]any)
			if !ok || len(m) != 1 {
				continue
			}
			oneof, ok := m["scheme"].(map[string]any)
			if !ok {
				continue
			}
			if c, ok := oneof["$case"].(string); ok {
				schemes[name] = map[string]any{c: oneof["value"]}
			}
		}
	}
	if skills, ok := raw["skills"].([]any); ok {
		for _, sk := range skills {
			if m, ok := sk.(map[string]any); ok {
				flattenScopes(m)
			}
		}
	}
	fixed, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return agentcard.DefaultCardParser(fixed)
}

// flattenScopes rewrites m's securityRequirements' {"list": [...]} as
// [...].
func flattenScopes(m map[string]any) {
	reqs, ok := m["securityRequirements"].([]any)
	if !ok {
		return
	}
	for _, r := range reqs {
		req, ok := r.(map[string]any)
		if !ok {
			continue
		}
		schemes, ok := req["schemes"].(map[string]any)
		if !ok {
			continue
		}
		for name, v := range schemes {
			if l, ok := v.(map[string]any); ok && len(l) <= 1 {
				if list, ok := l["list"]; ok || len(l) == 0 {
					if list == nil {
						list = []any{}
					}
					schemes[name] = list
				}
			}
		}
	}
}

// Close releases the client.
func (p *Peer) Close() { _ = p.c.Destroy() }

// Send sends text as a user message (in taskID and contextID when set),
// streaming when the card says the peer streams (the SDK sends once
// otherwise): the events it answers with.
func (p *Peer) Send(ctx context.Context, messageID, taskID, contextID, text string) iter.Seq2[a2a.Event, error] {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	if messageID != "" {
		m.ID = messageID
	}
	m.TaskID, m.ContextID = a2a.TaskID(taskID), contextID
	return p.c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m})
}

// Streams says whether the peer streams.
func (p *Peer) Streams() bool { return p.Card.Capabilities.Streaming }

// Subscribe follows a task's events (SubscribeToTask).
func (p *Peer) Subscribe(ctx context.Context, taskID string) iter.Seq2[a2a.Event, error] {
	return p.c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(taskID)})
}

// Get reads a task (GetTask).
func (p *Peer) Get(ctx context.Context, taskID string) (*a2a.Task, error) {
	return p.c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
}

// Cancel cancels a task (CancelTask).
func (p *Peer) Cancel(ctx context.Context, taskID string) (*a2a.Task, error) {
	return p.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)})
}

// Artifact is an artifact's text.
type Artifact struct{ ID, Name, Text string }

// Update is what one event of the peer says, flattened: its task's ids,
// its state as a word ("" when it says none), the text of its message and
// its artifacts. Direct is a message answer with no task.
type Update struct {
	TaskID, ContextID string
	State             string
	Message           string
	Artifacts         []Artifact
	Direct            bool
}

// maxText bounds the text kept of one message or artifact, and
// MaxArtifacts the artifacts kept of one task: what a peer sends goes
// into the log, whatever its size.
const (
	maxText      = 16000
	MaxArtifacts = 16
)

// Clip cuts s to the text kept of a message.
func Clip(s string) string { return clip(s) }

// Flatten reads an event.
func Flatten(ev a2a.Event) Update {
	switch e := ev.(type) {
	case *a2a.Task:
		u := Update{TaskID: string(e.ID), ContextID: e.ContextID, State: StateWord(e.Status.State), Message: textOf(e.Status.Message)}
		for _, a := range e.Artifacts {
			if a == nil {
				continue
			}
			if len(u.Artifacts) == MaxArtifacts {
				break
			}
			u.Artifacts = append(u.Artifacts, artifact(a))
		}
		return u
	case *a2a.TaskStatusUpdateEvent:
		return Update{TaskID: string(e.TaskID), ContextID: e.ContextID, State: StateWord(e.Status.State), Message: textOf(e.Status.Message)}
	case *a2a.TaskArtifactUpdateEvent:
		u := Update{TaskID: string(e.TaskID), ContextID: e.ContextID}
		if e.Artifact != nil {
			u.Artifacts = []Artifact{artifact(e.Artifact)}
		}
		return u
	case *a2a.Message:
		return Update{TaskID: string(e.TaskID), ContextID: e.ContextID, Message: textOf(e), Direct: e.TaskID == ""}
	}
	return Update{}
}

// StateWord is an A2A task state as the runtime records it:
// TASK_STATE_INPUT_REQUIRED is "input_required".
func StateWord(s a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_"))
}

// Terminal says whether a state word ends the task.
func Terminal(word string) bool {
	switch word {
	case "completed", "failed", "canceled", "rejected":
		return true
	}
	return false
}

func artifact(a *a2a.Artifact) Artifact {
	return Artifact{ID: string(a.ID), Name: a.Name, Text: clip(partsText(a.Parts))}
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return clip(partsText(m.Parts))
}

// partsText is what a model reads of a peer's parts: text as it is,
// structured data as its JSON, on a line of its own; a file (by URL or
// inline bytes) as a line that names it, its content not read.
func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	own := false // the last part written had a line of its own
	line := func() {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		own = true
	}
	for _, p := range parts {
		switch {
		case p == nil:
		case p.Data() != nil:
			raw, err := json.Marshal(p.Data())
			if err != nil {
				raw = []byte(fmt.Sprintf("[data the runtime could not encode: %v]", err))
			}
			line()
			b.Write(raw)
		case p.URL() != "":
			line()
			fmt.Fprintf(&b, "[file %s: %s]", cmp.Or(p.Filename, p.MediaType, "from the peer"), p.URL())
		case p.Raw() != nil:
			line()
			fmt.Fprintf(&b, "[file %s: %d bytes, not read]", cmp.Or(p.Filename, p.MediaType, "from the peer"), len(p.Raw()))
		default:
			if own {
				b.WriteByte('\n')
				own = false
			}
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	s = s[:maxText]
	// Not in the middle of a character.
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
