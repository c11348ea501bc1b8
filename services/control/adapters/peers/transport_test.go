package peers

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/pkg/peerauth"
)

// echo is an A2A agent that answers a message with a message.
type echo struct{}

func (echo) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("heard")), nil)
	}
}

func (echo) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// seen records the Authorization and X-API-Key headers each request to a
// server carried.
type seen struct {
	mu  sync.Mutex
	got []string
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.URL.Path+" "+r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

// startAgent serves an echo agent's JSON-RPC binding; card, when set,
// serves a card naming it at /.well-known/agent-card.json of another
// server.
func startAgent(t *testing.T) (*httptest.Server, *seen) {
	s := &seen{}
	srv := httptest.NewServer(s.wrap(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echo{}))))
	t.Cleanup(srv.Close)
	return srv, s
}

func startCard(t *testing.T, iface string) (*httptest.Server, *seen) {
	s := &seen{}
	srv := httptest.NewServer(s.wrap(a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "echo", Description: "d", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(iface, a2a.TransportProtocolJSONRPC)},
		Capabilities:        a2a.AgentCapabilities{Streaming: false}, DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}})))
	t.Cleanup(srv.Close)
	return srv, s
}

func credentials(t *testing.T, yaml string) *peerauth.Set {
	t.Helper()
	path := filepath.Join(t.TempDir(), "creds.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := peerauth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func loopback(t *testing.T) hostallow.List {
	hosts, err := hostallow.Parse([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return hosts
}

func talk(t *testing.T, d *Dialer, card string) error {
	t.Helper()
	p, err := d.Dial(context.Background(), card)
	if err != nil {
		return err
	}
	defer p.Close()
	for _, err := range p.Send(context.Background(), "m1", "", "", "hello") {
		if err != nil {
			return err
		}
	}
	return nil
}

// A credential goes only to the host and port its entry names: the card
// fetch to the card's host carries the card host's, the calls to an
// interface the card names on another port carry that port's own (none
// when none is configured), never the card host's.
func TestACredentialGoesOnlyToItsHost(t *testing.T) {
	agent, agentSaw := startAgent(t)
	card, cardSaw := startCard(t, agent.URL)
	cardHost, agentHost := strings.TrimPrefix(card.URL, "http://"), strings.TrimPrefix(agent.URL, "http://")
	t.Setenv("AGENT_KEY", "key-of-the-agent")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("token-of-the-card\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	only := credentials(t, fmt.Sprintf("peers:\n  - {host: %q, scheme: bearer, secret_file: %q}\n", cardHost, tokenFile))
	if err := talk(t, NewDialer(loopback(t), only), card.URL+"/.well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	}
	if got := cardSaw.all(); len(got) != 1 || got[0] != "/.well-known/agent-card.json Bearer token-of-the-card|" {
		t.Fatalf("the card's host saw %q", got)
	}
	for _, r := range agentSaw.all() {
		if strings.Contains(r, "token") || strings.Contains(r, "Bearer") {
			t.Fatalf("the interface on another port was sent the card host's credential: %q", r)
		}
	}
	if len(agentSaw.all()) == 0 {
		t.Fatal("the agent got no call")
	}

	both := credentials(t, fmt.Sprintf("peers:\n  - {host: %q, scheme: api_key, header: X-API-Key, secret_env: AGENT_KEY}\n  - {host: %q, scheme: bearer, secret_file: %q}\n",
		agentHost, cardHost, tokenFile))
	agentSaw.got = nil
	if err := talk(t, NewDialer(loopback(t), both), card.URL+"/.well-known/agent-card.json"); err != nil {
		t.Fatal(err)
	}
	for _, r := range agentSaw.all() {
		if r != "/ |key-of-the-agent" {
			t.Fatalf("the agent saw %q, want its own key alone", r)
		}
	}
}

// A redirect is not followed, so a credential never crosses one: the host
// redirected to gets no request.
func TestACredentialDoesNotFollowARedirect(t *testing.T) {
	elsewhere := &seen{}
	other := httptest.NewServer(elsewhere.wrap(http.NotFoundHandler()))
	t.Cleanup(other.Close)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(redirect.Close)
	// Both servers are on the allowlist and the credential's pattern:
	// only the rule on redirects keeps the other from being called.
	t.Setenv("TOKEN", "t0")
	creds := credentials(t, "peers:\n  - {host: \"127.0.0.1\", scheme: bearer, secret_env: TOKEN}\n")
	err := talk(t, NewDialer(loopback(t), creds), redirect.URL+"/.well-known/agent-card.json")
	if err == nil || Transient(err) {
		t.Fatalf("a redirected card: %v, want a failure not worth another try", err)
	}
	if got := elsewhere.all(); len(got) != 0 {
		t.Fatalf("the host redirected to got %q", got)
	}
}

// A peer's 401 or 403 is a refusal naming the host that refused and the
// flag that configures a credential; 5xx, 429, 408 and a peer not
// listening are worth another try; a 404, a host not allowed and a card
// with no usable interface are not.
func TestPeerErrorsAreToldApart(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.Header.Get("Authorization"), "secret-value") {
				w.Header().Set("X-Echo", r.Header.Get("Authorization"))
			}
			http.Error(w, "no", code)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/.well-known/agent-card.json"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/.well-known/agent-card.json"
	l.Close()
	noInterface, _ := startCard(t, "http://10.0.0.1/rpc")
	d := NewDialer(loopback(t), nil)
	for name, c := range map[string]struct {
		card      string
		transient bool
	}{
		"503":          {status(http.StatusServiceUnavailable), true},
		"500":          {status(http.StatusInternalServerError), true},
		"429":          {status(http.StatusTooManyRequests), true},
		"408":          {status(http.StatusRequestTimeout), true},
		"down":         {down, true},
		"404":          {status(http.StatusNotFound), false},
		"400":          {status(http.StatusBadRequest), false},
		"401":          {status(http.StatusUnauthorized), false},
		"not allowed":  {"http://10.0.0.1/.well-known/agent-card.json", false},
		"no interface": {noInterface.URL + "/.well-known/agent-card.json", false},
	} {
		err := talk(t, d, c.card)
		if err == nil || Transient(err) != c.transient {
			t.Errorf("%s: %v, transient %v, want %v", name, err, Transient(err), c.transient)
		}
	}
	if Transient(context.Canceled) || !Transient(fmt.Errorf("x: %w", context.DeadlineExceeded)) {
		t.Error("a cancelled call is worth another try, or a timed out one is not")
	}

	card := status(http.StatusUnauthorized)
	host := strings.TrimSuffix(strings.TrimPrefix(card, "http://"), "/.well-known/agent-card.json")
	err = talk(t, d, card)
	refused := Refused(err)
	if refused == nil || refused.Host != host || refused.CredentialSent || !strings.Contains(refused.Error(), host) || !strings.Contains(refused.Error(), "--a2a-peer-credentials") {
		t.Fatalf("a 401 without a credential: %v", err)
	}
	t.Setenv("TOKEN", "secret-value")
	withCreds := NewDialer(loopback(t), credentials(t, "peers:\n  - {host: \"127.0.0.1\", scheme: bearer, secret_env: TOKEN}\n"))
	err = talk(t, withCreds, status(http.StatusForbidden))
	if refused := Refused(err); refused == nil || !refused.CredentialSent || !strings.Contains(err.Error(), "--a2a-peer-credentials") {
		t.Fatalf("a 403 to a credential: %v", err)
	}
	if strings.Contains(err.Error(), "secret-value") {
		t.Fatalf("the error holds the secret: %v", err)
	}
	if errors.Is(err, ErrNotAllowed) {
		t.Fatal("a refusal is not the allowlist's")
	}
}

// roundTripFunc is the network beyond this machine, which a test cannot
// reach: it records the requests and answers 401.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A credential crosses a network over https only: plain http to another
// machine goes without it, and the refusal says why.
func TestACredentialIsNotSentInClearText(t *testing.T) {
	t.Setenv("PAINTER_KEY", "secret-of-the-painter")
	set := credentials(t, "peers:\n  - {host: \"painter.example\", scheme: bearer, secret_env: PAINTER_KEY}\n")
	var got []string
	tr := &transport{creds: set, base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.URL.Scheme+" "+r.Header.Get("Authorization"))
		return &http.Response{StatusCode: http.StatusUnauthorized, Status: "401 Unauthorized", Body: http.NoBody, Request: r}, nil
	})}
	for _, u := range []string{"http://painter.example/.well-known/agent-card.json", "https://painter.example/.well-known/agent-card.json"} {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tr.RoundTrip(req)
		if refused := Refused(err); refused == nil {
			t.Fatalf("%s: %v, want a refusal", u, err)
		} else if strings.HasPrefix(u, "http:") && (!refused.CredentialWithheld || !strings.Contains(refused.Error(), "https only")) {
			t.Errorf("%s: %v, want the credential said withheld", u, refused)
		} else if strings.HasPrefix(u, "https:") && !refused.CredentialSent {
			t.Errorf("%s: %v, want the credential said sent", u, refused)
		}
	}
	if want := []string{"http ", "https Bearer secret-of-the-painter"}; !slices.Equal(got, want) {
		t.Errorf("the network saw %q, want %q", got, want)
	}
}

// A card larger than a peer may send is refused, not read whole.
func TestAHugeCardIsRefused(t *testing.T) {
	var served int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(`{"name": "` + strings.Repeat("x", 1<<16))
		for served < 64<<20 {
			n, err := w.Write(chunk)
			served += int64(n)
			if err != nil {
				return
			}
			chunk = []byte(strings.Repeat("x", 1<<16))
		}
	}))
	t.Cleanup(srv.Close)
	_, err := NewDialer(loopback(t), nil).Dial(context.Background(), srv.URL+"/.well-known/agent-card.json")
	if !errors.Is(err, ErrTooLarge) || Transient(err) {
		t.Fatalf("a 64 MiB card: %v, want ErrTooLarge, not worth another try", err)
	}
}
