// Package webhooktest is a webhook receiver for tests: an HTTP server that
// verifies each delivery's signature as the Standard Webhooks
// specification says (written from the specification, not with the
// runtime's signer), answers the first attempts of each delivery with a
// chosen failure, and records what it accepted, de-duplicated by
// webhook-id as a receiver should.
package webhooktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Delivery is one accepted delivery.
type Delivery struct {
	ID   string
	Type string
	// Data is the event (the spec's JSON).
	Data map[string]any
	// Attempts is how many requests carried this webhook-id, the failed
	// ones included.
	Attempts int
	// Accepted is how many of them were answered 2xx.
	Accepted int
}

// Receiver is a webhook endpoint.
type Receiver struct {
	URL string
	// FailFirst is how many attempts of each delivery are answered with
	// FailStatus (default 503) before one is accepted.
	FailFirst  int
	FailStatus int
	// OnAccept, when set before the first delivery, is called (under the
	// receiver's lock) with each delivery it accepts.
	OnAccept func(Delivery)

	mu       sync.Mutex
	secret   []byte
	byID     map[string]*Delivery
	order    []string
	rejected []string
}

// New starts a receiver that closes when the test ends.
func New(t testing.TB) *Receiver {
	r := &Receiver{FailStatus: http.StatusServiceUnavailable, byID: map[string]*Delivery{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hooks/agentruntime"
	return r
}

// SetFailFirst changes FailFirst while the receiver serves.
func (r *Receiver) SetFailFirst(n int) {
	r.mu.Lock()
	r.FailFirst = n
	r.mu.Unlock()
}

// SetSecret is the subscription's secret, "whsec_<base64>" as created.
func (r *Receiver) SetSecret(secret string) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.secret = key
	r.mu.Unlock()
	return nil
}

// verify is the specification's check: the signed content is
// "<webhook-id>.<webhook-timestamp>.<body>", its HMAC-SHA256 keyed by the
// secret's base64-decoded bytes (after the whsec_ prefix), base64 encoded;
// webhook-signature is a space-separated list of "v1,<signature>", any of
// which may match; a timestamp more than five minutes off is refused.
func verify(secret []byte, h http.Header, body []byte) string {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return "missing webhook-id, webhook-timestamp or webhook-signature"
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "webhook-timestamp is not unix seconds"
	}
	if math.Abs(float64(time.Now().Unix()-unix)) > 300 {
		return "webhook-timestamp is more than five minutes off"
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return ""
		}
	}
	return "no signature matches"
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secret == nil {
		// Not set up yet (its secret comes with the subscription it
		// receives for, and an A2A push config's first delivery can come
		// before the test has it): come back later.
		http.Error(w, "no secret yet", http.StatusServiceUnavailable)
		return
	}
	if why := verify(r.secret, req.Header, body); why != "" {
		r.rejected = append(r.rejected, why)
		http.Error(w, why, http.StatusUnauthorized)
		return
	}
	id := req.Header.Get("webhook-id")
	d, ok := r.byID[id]
	if !ok {
		var payload struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &payload); err != nil {
			r.rejected = append(r.rejected, "body: "+err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		d = &Delivery{ID: id, Type: payload.Type, Data: payload.Data}
		r.byID[id] = d
		r.order = append(r.order, id)
	}
	d.Attempts++
	if d.Attempts <= r.FailFirst {
		w.WriteHeader(r.FailStatus)
		return
	}
	d.Accepted++
	if r.OnAccept != nil {
		r.OnAccept(*d)
	}
	w.WriteHeader(http.StatusNoContent)
}

// Accepted are the deliveries accepted at least once, in order of first
// arrival (copies).
func (r *Receiver) Accepted() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Delivery
	for _, id := range r.order {
		if d := r.byID[id]; d.Accepted > 0 {
			out = append(out, *d)
		}
	}
	return out
}

// Each calls fn with every delivery that arrived (copies), accepted or
// not.
func (r *Receiver) Each(fn func(Delivery)) {
	r.mu.Lock()
	ds := make([]Delivery, 0, len(r.order))
	for _, id := range r.order {
		ds = append(ds, *r.byID[id])
	}
	r.mu.Unlock()
	for _, d := range ds {
		fn(d)
	}
}

// Rejected are the reasons requests were refused (a bad signature).
func (r *Receiver) Rejected() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.rejected...)
}
