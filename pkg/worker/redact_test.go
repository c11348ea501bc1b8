package worker

import (
	"strings"
	"testing"
)

func TestDefaultRedactionRules(t *testing.T) {
	for _, c := range []struct{ in, rule string }{
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private_key"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----", "private_key"},
		{"aws AKIAIOSFODNN7EXAMPLE", "aws_access_key_id"},
		{"token ghp_" + strings.Repeat("a", 36), "github_token"},
		{"OPENAI_API_KEY is sk-proj-abcdefghijklmnopqrstuv", "api_key"},
		{"Authorization: Bearer abcdefghijklmnop.qrstuv", "bearer_token"},
		{"password = hunter2hunter2", "secret_assignment"},
		{`api_key: "0123456789abcdef"`, "secret_assignment"},
	} {
		out, hits := redact(DefaultRedactionRules, c.in)
		if hits[c.rule] != 1 || !strings.Contains(out, "[REDACTED:"+c.rule+"]") {
			t.Errorf("%q: %q %v, want rule %s", c.in, out, hits, c.rule)
		}
	}
	// Ordinary output is left alone.
	for _, in := range []string{
		"PASS ok github.com/x/y 0.1s", "the password field is required", "sk-1", "Bearer token required",
		"func secret() string { return s }", "AKIA is a prefix",
	} {
		if out, hits := redact(DefaultRedactionRules, in); out != in || hits != nil {
			t.Errorf("%q redacted to %q (%v)", in, out, hits)
		}
	}
}

func TestHeadAndTailKeepRunesWhole(t *testing.T) {
	s := "ééééé" // 2 bytes each
	if h := head(s, 3); h != "é" {
		t.Errorf("head = %q", h)
	}
	if tl := tail(s, 3); tl != "é" {
		t.Errorf("tail = %q", tl)
	}
	if head(s, 100) != s || tail(s, 100) != s {
		t.Error("short strings are whole")
	}
}
