package webhooks

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
)

func TestSealedSecretsOpenOnlyForTheirSubscriptionAndKey(t *testing.T) {
	s, err := NewSealer(bytes.Repeat([]byte{1}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewSealer(bytes.Repeat([]byte{2}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("the secret bytes")
	sealed, err := s.Seal("acme", "wh_1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("the sealed form holds the secret")
	}
	if got, err := s.Open("acme", "wh_1", s.KeyID(), sealed); err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("open: %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"another tenant":       func() ([]byte, error) { return s.Open("globex", "wh_1", s.KeyID(), sealed) },
		"another subscription": func() ([]byte, error) { return s.Open("acme", "wh_2", s.KeyID(), sealed) },
		"another key":          func() ([]byte, error) { return other.Open("acme", "wh_1", s.KeyID(), sealed) },
		"another key's id":     func() ([]byte, error) { return other.Open("acme", "wh_1", other.KeyID(), sealed) },
		"truncated":            func() ([]byte, error) { return s.Open("acme", "wh_1", s.KeyID(), sealed[:5]) },
	} {
		if got, err := open(); !errors.Is(err, ErrKey) {
			t.Errorf("%s: %q, %v; want ErrKey", name, got, err)
		}
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Fatal("a short key was taken")
	}
}

func TestKeysParseAndDevMakesItsOwnOnce(t *testing.T) {
	key := bytes.Repeat([]byte{0xab}, KeySize)
	for _, text := range []string{base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key) + "\n", "abababababababababababababababababababababababababababababababab"} {
		if got, err := ParseKey(text); err != nil || !bytes.Equal(got, key) {
			t.Errorf("ParseKey(%q) = %x, %v", text, got, err)
		}
	}
	if _, err := ParseKey(base64.StdEncoding.EncodeToString(key[:16])); err == nil {
		t.Error("a 16-byte key was taken")
	}
	path := filepath.Join(t.TempDir(), "webhook.key")
	first, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v, %v; want mode 0600", fi.Mode(), err)
	}
	again, err := LoadOrCreateKey(path)
	if err != nil || !bytes.Equal(first, again) || len(first) != KeySize {
		t.Fatalf("the key changed across starts: %x then %x (%v)", first, again, err)
	}
}

func TestSenderSignsFollowsNoRedirectAndChecksTheHostAgain(t *testing.T) {
	var hits atomic.Int32
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://169.254.169.254/", http.StatusFound)
			return
		}
		got = r.Header.Clone()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	allowed, err := hostallow.Parse([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSender(&allowed)
	d := Delivery{URL: srv.URL + "/in", DeliveryID: "msg_1", Secret: []byte("k"), Body: []byte(`{}`), At: time.Unix(1700000000, 0)}
	if a := s.Send(context.Background(), d); a.StatusCode != 200 || a.Err != "" {
		t.Fatalf("send: %+v", a)
	}
	if got.Get("webhook-id") != "msg_1" || got.Get("webhook-timestamp") != "1700000000" || got.Get("webhook-signature") == "" || got.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", got)
	}
	d.URL = srv.URL + "/moved"
	if a := s.Send(context.Background(), d); a.StatusCode != http.StatusFound || a.Retryable() {
		t.Fatalf("a redirect: %+v, want its 302 as a final failure", a)
	}
	before := hits.Load()
	none, _ := hostallow.Parse(nil)
	s.Hosts = &none
	d.URL = srv.URL + "/in"
	if a := s.Send(context.Background(), d); a.StatusCode != http.StatusForbidden || a.Retryable() || hits.Load() != before {
		t.Fatalf("a host no longer allowed: %+v (%d requests made), want 403 and no request", a, hits.Load()-before)
	}
}
