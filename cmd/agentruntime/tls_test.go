package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentruntime/agentruntime/pkg/testkit/testcert"
)

// The TLS flags: both or neither, each file readable, the pair matching;
// each error names the flag to fix.
func TestTLSFlags(t *testing.T) {
	certs := testcert.New(t)
	other := testcert.New(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := loadServerTLS("", ""); cfg != nil || err != nil {
		t.Errorf("neither flag: %v, %v; want plaintext", cfg, err)
	}
	if cfg, err := loadServerTLS(certs.CertFile, certs.KeyFile); cfg == nil || err != nil {
		t.Errorf("both flags: %v, %v", cfg, err)
	}
	for _, c := range []struct{ cert, key, want string }{
		{certs.CertFile, "", "--tls-cert needs --tls-key"},
		{"", certs.KeyFile, "--tls-key needs --tls-cert"},
		{missing, certs.KeyFile, "--tls-cert: open " + missing},
		{certs.CertFile, missing, "--tls-key: open " + missing},
		{certs.CertFile, other.KeyFile, "--tls-cert " + certs.CertFile + ", --tls-key " + other.KeyFile},
		{notPEM, certs.KeyFile, "--tls-cert " + notPEM},
	} {
		_, err := loadServerTLS(c.cert, c.key)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("loadServerTLS(%q, %q) = %v, want an error with %q", c.cert, c.key, err, c.want)
		}
	}

	for _, c := range []struct {
		on      bool
		ca      string
		tls     bool
		wantErr string
	}{
		{false, "", false, ""},
		{true, "", true, ""},
		{false, certs.CAFile, true, ""},
		{false, missing, false, "--tls-ca: open " + missing},
		{true, notPEM, false, "--tls-ca " + notPEM + ": no PEM certificate"},
	} {
		cfg, err := clientTLS(c.on, c.ca)
		switch {
		case c.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("clientTLS(%v, %q) = %v, want an error with %q", c.on, c.ca, err, c.wantErr)
			}
		case err != nil || (cfg != nil) != c.tls:
			t.Errorf("clientTLS(%v, %q) = %v, %v; want TLS %v", c.on, c.ca, cfg, err, c.tls)
		case c.ca != "" && cfg.RootCAs == nil:
			t.Errorf("clientTLS with --tls-ca trusts the system roots")
		}
	}
}
