package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeCard(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "card.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The card's name, description and skills come from the file; what a
// mistake names is the key.
func TestLoadCard(t *testing.T) {
	cfg, err := LoadCard(writeCard(t, `name: notes-agent
description: Takes notes on a repository.
skills:
  - {id: notes, name: Notes, description: Writes NOTES.md, tags: [docs], examples: ["take notes on the README"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	card := New(nil, cfg, nil).card("http://h")
	if card.Name != "notes-agent" || card.Description != "Takes notes on a repository." || len(card.Skills) != 1 || card.Skills[0].Examples[0] != "take notes on the README" {
		t.Errorf("card %+v", card)
	}
	for body, want := range map[string]string{
		"skills:\n  - {id: a, name: A}\n": "skills[0].description: required",
		"skills:\n  - {id: a, name: A, description: d}\n  - {id: a, name: B, description: d}\n": `skills[1].id: "a" is given twice`,
		"nmae: x\n": "field nmae not found",
	} {
		if _, err := LoadCard(writeCard(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	// An empty file is the defaults.
	cfg, err = LoadCard(writeCard(t, ""))
	if err != nil || New(nil, cfg, nil).card("http://h").Skills[0].ID != "turn" {
		t.Errorf("empty file: %+v %v", cfg, err)
	}
}

// The card's URLs are the request's host, when it is one.
func TestCardHost(t *testing.T) {
	h := New(nil, Config{}, nil).Card()
	for host, want := range map[string]string{
		"127.0.0.1:7070":     "http://127.0.0.1:7070/a2a/jsonrpc",
		"[::1]:7070":         "http://[::1]:7070/a2a/jsonrpc",
		"agents.example.com": "http://agents.example.com/a2a/jsonrpc",
		"evil.com/x?":        "http://localhost/a2a/jsonrpc",
		"a\"b":               "http://localhost/a2a/jsonrpc",
		"user@evil.com:80":   "http://localhost/a2a/jsonrpc",
	} {
		req := httptest.NewRequest(http.MethodGet, CardPath, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var card AgentCard
		if err := json.Unmarshal(rec.Body.Bytes(), &card); err != nil {
			t.Fatal(err)
		}
		if card.SupportedInterfaces[0].URL != want || !card.Capabilities.Streaming || card.SupportedInterfaces[2].ProtocolBinding != "GRPC" {
			t.Errorf("Host %q: %+v, want %s", host, card.SupportedInterfaces, want)
		}
	}
}
