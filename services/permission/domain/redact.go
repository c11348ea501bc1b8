package domain

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret-looking value in safe previews.
const Redacted = "[redacted]"

var (
	secretKey   = regexp.MustCompile(`(?i)(secret|token|passw(or)?d|api[_-]?key|auth(orization)?|credential|private[_-]?key|cookie|session[_-]?key|^env$|environment)`)
	secretValue = regexp.MustCompile(`(?i)^(bearer\s+\S+|basic\s+\S+|sk-[a-z0-9_-]{16,}|gh[pousr]_[a-z0-9]{20,}|xox[abpr]-[a-z0-9-]{10,}|AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----.*|eyJ[a-z0-9_-]+\.[a-z0-9_-]+\.[a-z0-9_-]+)$`)
)

// SafeJSON returns a display-safe form of a tool input: values under
// secret-looking keys (token, password, env...) and values that look like
// credentials are replaced, and the result is cut to max bytes on a rune
// boundary. Input that is not JSON is not shown at all: its structure is
// unknown, so nothing in it can be called safe.
func SafeJSON(raw string, max int) string {
	if raw == "" {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return Redacted + " (input is not JSON)"
	}
	out, err := json.Marshal(redact(v, ""))
	if err != nil {
		return Redacted
	}
	return truncate(string(out), max)
}

// RedactJSON is SafeJSON without the cut, for hook inputs.
func RedactJSON(raw string) string { return SafeJSON(raw, 0) }

func redact(v any, key string) any {
	if key != "" && secretKey.MatchString(key) {
		return Redacted
	}
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = redact(val, k)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = redact(val, "")
		}
		return x
	case string:
		if secretValue.MatchString(strings.TrimSpace(x)) {
			return Redacted
		}
		return x
	}
	return v
}

func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// SafePreview cuts free text (a command line) to max bytes, with values
// that look like credentials replaced word by word.
func SafePreview(s string, max int) string {
	words := strings.Fields(s)
	for i, w := range words {
		if secretValue.MatchString(w) || strings.Contains(w, "=") && secretKey.MatchString(strings.SplitN(w, "=", 2)[0]) {
			words[i] = Redacted
		}
	}
	return truncate(strings.Join(words, " "), max)
}

// Cut shortens s to at most max bytes on a rune boundary, marking the cut.
func Cut(s string, max int) string { return truncate(s, max) }
