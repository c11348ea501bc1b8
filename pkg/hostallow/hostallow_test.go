package hostallow

import "testing"

func TestAllows(t *testing.T) {
	l, err := Parse([]string{"hooks.internal", "*.example.com:443", "127.0.0.1", " ", "[::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host, port string
		want       bool
	}{
		{"hooks.internal", "80", true},
		{"HOOKS.internal.", "9", true},
		{"a.example.com", "443", true},
		{"a.example.com", "80", false},
		{"example.com", "443", false},
		{"evil-example.com", "443", false},
		{"127.0.0.1", "6379", true},
		{"::1", "8080", true},
		{"::1", "80", false},
		{"169.254.169.254", "80", false},
	} {
		if got := l.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	if (List{}).Allows("127.0.0.1", "80") {
		t.Error("the zero list allows a host")
	}
	for _, bad := range []string{"a/b", "*", "a.*.com", "h:port", "user@h"} {
		if _, err := Parse([]string{bad}); err == nil {
			t.Errorf("Parse(%q) took it", bad)
		}
	}
}

func TestHostPort(t *testing.T) {
	for _, c := range []struct{ url, host, port string }{
		{"http://h/x", "h", "80"},
		{"https://h/x", "h", "443"},
		{"https://h:8443/x", "h", "8443"},
		{"http://[::1]:9/x", "::1", "9"},
	} {
		if h, p, err := HostPort(c.url); err != nil || h != c.host || p != c.port {
			t.Errorf("HostPort(%s) = %s, %s, %v", c.url, h, p, err)
		}
	}
	for _, bad := range []string{"ftp://h/", "file:///etc/passwd", "http://u:p@h/", "http:///x", "::"} {
		if _, _, err := HostPort(bad); err == nil {
			t.Errorf("HostPort(%q) took it", bad)
		}
	}
}
