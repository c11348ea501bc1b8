package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
)

const (
	hsSecret = "0123456789abcdef0123456789abcdef-test-secret"
	ciKey    = "ar_ci_key_7f3a9c"
	devKey   = "ar_dev_key_plain"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func incoming(authorization ...string) context.Context {
	md := metadata.MD{}
	for _, v := range authorization {
		md.Append("authorization", v)
	}
	return metadata.NewIncomingContext(context.Background(), md)
}

func requireUnauthenticated(t *testing.T, err error, msgContains string) {
	t.Helper()
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok, "want a gRPC status, got %v", err)
	assert.Equal(t, codes.Unauthenticated, st.Code())
	assert.Contains(t, st.Message(), msgContains)
}

func TestAPIKeys(t *testing.T) {
	a, err := auth.New(&auth.Config{APIKeys: []auth.APIKeyConfig{
		{Name: "ci-bot", Tenant: "acme", Role: auth.RoleAdmin, KeySHA256: sha256Hex(ciKey)},
		{Name: "dev", Tenant: "globex_2", Role: auth.RoleViewer, Key: devKey},
	}})
	require.NoError(t, err)

	tests := []struct {
		name    string
		ctx     context.Context
		want    auth.Principal
		wantErr string
	}{
		{name: "hashed key", ctx: incoming("Bearer " + ciKey),
			want: auth.Principal{Tenant: "acme", Subject: "ci-bot", Role: "admin", Method: "api_key"}},
		{name: "plaintext key", ctx: incoming("Bearer " + devKey),
			want: auth.Principal{Tenant: "globex_2", Subject: "dev", Role: "viewer", Method: "api_key"}},
		{name: "scheme is case-insensitive", ctx: incoming("bearer " + ciKey),
			want: auth.Principal{Tenant: "acme", Subject: "ci-bot", Role: "admin", Method: "api_key"}},
		{name: "wrong key", ctx: incoming("Bearer " + ciKey + "x"), wantErr: "invalid API key"},
		{name: "hash presented as key", ctx: incoming("Bearer " + sha256Hex(ciKey)), wantErr: "invalid API key"},
		{name: "no metadata", ctx: context.Background(), wantErr: "missing credentials"},
		{name: "no authorization header", ctx: metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-other", "1")), wantErr: "missing credentials"},
		{name: "basic scheme", ctx: incoming("Basic " + ciKey), wantErr: "malformed authorization"},
		{name: "no scheme", ctx: incoming(ciKey), wantErr: "malformed authorization"},
		{name: "empty token", ctx: incoming("Bearer "), wantErr: "malformed authorization"},
		{name: "two headers", ctx: incoming("Bearer "+ciKey, "Bearer "+devKey), wantErr: "more than one"},
		{name: "jwt shaped but jwt not configured", ctx: incoming("Bearer a.b.c"), wantErr: "JWT bearer tokens are not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Authenticate(tt.ctx)
			if tt.wantErr != "" {
				requireUnauthenticated(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

type jwtFixture struct {
	dir        string
	hsFile     string
	rsaKey     *rsa.PrivateKey
	rsaPubFile string
	rsaPubPEM  []byte
}

func newJWTFixture(t *testing.T) jwtFixture {
	t.Helper()
	dir := t.TempDir()
	f := jwtFixture{dir: dir, hsFile: filepath.Join(dir, "hs256.secret"), rsaPubFile: filepath.Join(dir, "rs256.pem")}
	// The trailing newline is what `echo secret > file` leaves behind.
	require.NoError(t, os.WriteFile(f.hsFile, []byte(hsSecret+"\n"), 0o600))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	f.rsaKey = key
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	f.rsaPubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	require.NoError(t, os.WriteFile(f.rsaPubFile, f.rsaPubPEM, 0o600))
	return f
}

func validClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"sub":    "alice",
		"tenant": "acme",
		"role":   "operator",
		"iss":    "https://issuer.example",
		"aud":    "agentruntime",
		"exp":    time.Now().Add(time.Hour).Unix(),
	}
}

func with(c jwt.MapClaims, changes map[string]any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return s
}

func TestJWT(t *testing.T) {
	f := newJWTFixture(t)
	both, err := auth.New(&auth.Config{JWT: &auth.JWTConfig{
		Issuer: "https://issuer.example", Audience: "agentruntime",
		HS256SecretFile: f.hsFile, RS256PublicKeyFile: f.rsaPubFile,
	}})
	require.NoError(t, err)
	rsOnly, err := auth.New(&auth.Config{JWT: &auth.JWTConfig{RS256PublicKeyFile: f.rsaPubFile}})
	require.NoError(t, err)
	customClaims, err := auth.New(&auth.Config{JWT: &auth.JWTConfig{
		HS256SecretFile: f.hsFile, TenantClaim: "https://agentruntime/tenant", RoleClaim: "https://agentruntime/role",
	}})
	require.NoError(t, err)

	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	alice := auth.Principal{Tenant: "acme", Subject: "alice", Role: "operator", Method: "jwt"}

	tests := []struct {
		name    string
		a       auth.Authenticator
		token   string
		want    auth.Principal
		wantErr string
	}{
		{name: "HS256", a: both, token: sign(t, jwt.SigningMethodHS256, []byte(hsSecret), validClaims()), want: alice},
		{name: "RS256", a: both, token: sign(t, jwt.SigningMethodRS256, f.rsaKey, validClaims()), want: alice},
		{name: "RS256 only config", a: rsOnly, token: sign(t, jwt.SigningMethodRS256, f.rsaKey, validClaims()), want: alice},
		{name: "no role claim means viewer", a: both,
			token: sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"role": nil})),
			want:  auth.Principal{Tenant: "acme", Subject: "alice", Role: "viewer", Method: "jwt"}},
		{name: "custom claim names", a: customClaims,
			token: sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{
				"tenant": nil, "role": nil, "https://agentruntime/tenant": "acme", "https://agentruntime/role": "operator"})),
			want: alice},
		{name: "HS256 wrong secret", a: both,
			token: sign(t, jwt.SigningMethodHS256, []byte(hsSecret+"-wrong"), validClaims()), wantErr: "invalid token signature"},
		{name: "RS256 wrong key", a: both,
			token: sign(t, jwt.SigningMethodRS256, otherKey, validClaims()), wantErr: "invalid token signature"},
		{name: "tampered payload", a: both,
			token: tamper(t, sign(t, jwt.SigningMethodHS256, []byte(hsSecret), validClaims())), wantErr: "invalid token signature"},
		{name: "expired", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})),
			wantErr: "expired"},
		{name: "no exp", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"exp": nil})),
			wantErr: "missing a required claim"},
		{name: "not valid yet", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"nbf": time.Now().Add(time.Hour).Unix()})),
			wantErr: "not valid yet"},
		{name: "wrong issuer", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"iss": "https://evil.example"})),
			wantErr: "issuer"},
		{name: "wrong audience", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"aud": "someone-else"})),
			wantErr: "audience"},
		{name: "alg none", a: both,
			token: sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, validClaims()), wantErr: `signing method "none" is not accepted`},
		{name: "HS256 signed with RS256 public key, RS256-only config", a: rsOnly,
			token: sign(t, jwt.SigningMethodHS256, f.rsaPubPEM, validClaims()), wantErr: `signing method "HS256" is not accepted`},
		{name: "HS256 signed with RS256 public key, both configured", a: both,
			token: sign(t, jwt.SigningMethodHS256, f.rsaPubPEM, validClaims()), wantErr: "invalid token signature"},
		{name: "HS512 not configured", a: both,
			token: sign(t, jwt.SigningMethodHS512, []byte(hsSecret), validClaims()), wantErr: `signing method "HS512" is not accepted`},
		{name: "missing sub claim", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"sub": nil})),
			wantErr: `no "sub" claim`},
		{name: "empty sub claim", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"sub": ""})),
			wantErr: `no "sub" claim`},
		{name: "missing tenant claim", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"tenant": nil})),
			wantErr: `no "tenant" claim`},
		{name: "tenant claim not a string", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"tenant": 42})),
			wantErr: `no "tenant" claim`},
		{name: "tenant not subject-safe", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"tenant": "acme.>"})),
			wantErr: "tenant"},
		{name: "unknown role", a: both,
			token:   sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"role": "root"})),
			wantErr: "role"},
		{name: "garbage in three parts", a: both, token: "a.b.c", wantErr: "malformed token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.a.Authenticate(incoming("Bearer " + tt.token))
			if tt.wantErr != "" {
				requireUnauthenticated(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// tamper changes the tenant in the payload and keeps the old signature.
func tamper(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	forged := strings.Replace(string(payload), `"acme"`, `"evil"`, 1)
	require.NotEqual(t, string(payload), forged)
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(forged))
	return strings.Join(parts, ".")
}

func TestJWTAndAPIKeysTogether(t *testing.T) {
	f := newJWTFixture(t)
	a, err := auth.New(&auth.Config{
		APIKeys: []auth.APIKeyConfig{{Name: "ci-bot", Tenant: "acme", Role: "worker", Key: ciKey}},
		JWT:     &auth.JWTConfig{HS256SecretFile: f.hsFile},
	})
	require.NoError(t, err)

	p, err := a.Authenticate(incoming("Bearer " + ciKey))
	require.NoError(t, err)
	assert.Equal(t, "api_key", p.Method)

	p, err = a.Authenticate(incoming("Bearer " + sign(t, jwt.SigningMethodHS256, []byte(hsSecret), validClaims())))
	require.NoError(t, err)
	assert.Equal(t, "jwt", p.Method)
}

func TestNewRejectsWeakKeys(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("too-short\n"), 0o600))
	_, err := auth.New(&auth.Config{JWT: &auth.JWTConfig{HS256SecretFile: short}})
	require.ErrorContains(t, err, "at least 32")

	small, err := rsa.GenerateKey(rand.Reader, 1024)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&small.PublicKey)
	require.NoError(t, err)
	smallFile := filepath.Join(dir, "small.pem")
	require.NoError(t, os.WriteFile(smallFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600))
	_, err = auth.New(&auth.Config{JWT: &auth.JWTConfig{RS256PublicKeyFile: smallFile}})
	require.ErrorContains(t, err, "at least 2048")

	_, err = auth.New(&auth.Config{JWT: &auth.JWTConfig{RS256PublicKeyFile: filepath.Join(dir, "missing.pem")}})
	require.ErrorContains(t, err, "rs256_public_key_file")
}

func TestAnonymous(t *testing.T) {
	p, err := auth.Anonymous("dev").Authenticate(context.Background())
	require.NoError(t, err)
	assert.Equal(t, auth.Principal{Tenant: "dev", Subject: "anonymous", Role: "admin", Method: "anonymous"}, p)
	assert.Panics(t, func() { auth.Anonymous("bad.tenant") })
}

func TestContext(t *testing.T) {
	_, ok := auth.FromContext(context.Background())
	assert.False(t, ok)
	want := auth.Principal{Tenant: "acme", Subject: "s", Role: "viewer", Method: "api_key"}
	got, ok := auth.FromContext(auth.NewContext(context.Background(), want))
	assert.True(t, ok)
	assert.Equal(t, want, got)
}

func TestValidateTenant(t *testing.T) {
	for _, ok := range []string{"a", "acme", "Acme-2_x", "0", strings.Repeat("a", 64)} {
		assert.NoError(t, auth.ValidateTenant(ok), ok)
	}
	for _, bad := range []string{"", "-acme", "_acme", "ac.me", "ac*", "a>", "a b", "ténant", strings.Repeat("a", 65)} {
		assert.Error(t, auth.ValidateTenant(bad), bad)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "auth.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestLoadConfig(t *testing.T) {
	path := writeConfig(t, `
api_keys:
  - name: ci-bot
    tenant: acme
    role: admin
    key_sha256: `+sha256Hex(ciKey)+`
  - name: dev
    tenant: acme
    role: viewer
    key: `+devKey+`
jwt:
  issuer: https://issuer.example
  audience: agentruntime
  hs256_secret_file: hs256.secret
  tenant_claim: org
`)
	require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(path), "hs256.secret"), []byte(hsSecret), 0o600))

	cfg, err := auth.LoadConfig(path)
	require.NoError(t, err)
	require.Len(t, cfg.APIKeys, 2)
	assert.Equal(t, "ci-bot", cfg.APIKeys[0].Name)
	// Relative key files are resolved against the config's directory.
	assert.Equal(t, filepath.Join(filepath.Dir(path), "hs256.secret"), cfg.JWT.HS256SecretFile)

	assert.Empty(t, cfg.Tenants)

	a, err := auth.New(cfg)
	require.NoError(t, err)
	token := sign(t, jwt.SigningMethodHS256, []byte(hsSecret), with(validClaims(), map[string]any{"tenant": nil, "org": "initech"}))
	p, err := a.Authenticate(incoming("Bearer " + token))
	require.NoError(t, err)
	assert.Equal(t, "initech", p.Tenant)
}

// A tenant's own append limits: a field left out keeps the default (nil),
// 0 lifts the limit.
func TestLoadConfigTenantLimits(t *testing.T) {
	cfg, err := auth.LoadConfig(writeConfig(t, "api_keys:\n  - {name: a, tenant: acme, role: admin, key: "+ciKey+"}\n"+
		"tenants:\n  - {tenant: acme, append_events_per_second: 50, max_streams: 3}\n  - {tenant: globex, append_events_per_second: 0, append_bytes_per_second: 1048576}\n"))
	require.NoError(t, err)
	require.Len(t, cfg.Tenants, 2)
	assert.Equal(t, "acme", cfg.Tenants[0].Tenant)
	assert.Equal(t, 50.0, *cfg.Tenants[0].AppendEventsPerSecond)
	assert.Nil(t, cfg.Tenants[0].AppendBytesPerSecond)
	assert.Equal(t, 3, *cfg.Tenants[0].MaxStreams)
	assert.Nil(t, cfg.Tenants[1].MaxStreams)
	assert.Equal(t, 0.0, *cfg.Tenants[1].AppendEventsPerSecond)
	assert.Equal(t, 1048576.0, *cfg.Tenants[1].AppendBytesPerSecond)
}

func TestLoadConfigErrors(t *testing.T) {
	key := func(extra string) string {
		return "api_keys:\n  - name: ci-bot\n    tenant: acme\n    role: admin\n    key: " + ciKey + "\n" + extra
	}
	tests := []struct {
		name    string
		body    string
		wantErr []string
	}{
		{name: "unknown top-level field", body: key("apikeys: []\n"), wantErr: []string{"apikeys"}},
		{name: "unknown key field", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n    key: k\n    tenat: x\n", wantErr: []string{"tenat"}},
		{name: "unknown jwt field", body: "jwt:\n  hs256_secret: x\n", wantErr: []string{"hs256_secret"}},
		{name: "bad tenant", body: "api_keys:\n  - name: a\n    tenant: acme.prod\n    role: admin\n    key: k\n", wantErr: []string{"api_keys[0] (a)", `tenant "acme.prod" is invalid`}},
		{name: "bad role", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: root\n    key: k\n", wantErr: []string{`role "root" is invalid`}},
		{name: "missing role", body: "api_keys:\n  - name: a\n    tenant: acme\n    key: k\n", wantErr: []string{`role "" is invalid`}},
		{name: "missing name", body: "api_keys:\n  - tenant: acme\n    role: admin\n    key: k\n", wantErr: []string{"name is required"}},
		{name: "no key", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n", wantErr: []string{"key_sha256 (or key) is required"}},
		{name: "both keys", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n    key: k\n    key_sha256: " + sha256Hex("k") + "\n", wantErr: []string{"not both"}},
		{name: "bad hash", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n    key_sha256: abc\n", wantErr: []string{"64 hex"}},
		{name: "jwt-shaped key", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n    key: a.b.c\n", wantErr: []string{"JWT"}},
		{name: "duplicate key", body: "api_keys:\n  - name: a\n    tenant: acme\n    role: admin\n    key: k\n  - name: b\n    tenant: other\n    role: admin\n    key_sha256: " + sha256Hex("k") + "\n", wantErr: []string{"same key as api_keys[0]"}},
		{name: "no keys and no jwt", body: "api_keys: []\n", wantErr: []string{"no api_keys and no jwt"}},
		{name: "empty file", body: "", wantErr: []string{"no api_keys and no jwt"}},
		{name: "jwt without key files", body: "jwt:\n  issuer: x\n", wantErr: []string{"hs256_secret_file and/or rs256_public_key_file"}},
		{name: "jwt claims collide", body: "jwt:\n  hs256_secret_file: s\n  tenant_claim: role\n", wantErr: []string{"must differ"}},
		{name: "tenant limits of a bad tenant", body: key("tenants:\n  - {tenant: a.b, append_events_per_second: 5}\n"), wantErr: []string{"tenants[0]", `tenant "a.b" is invalid`}},
		{name: "tenant listed twice", body: key("tenants:\n  - {tenant: acme}\n  - {tenant: acme}\n"), wantErr: []string{"tenants[1]: tenant acme is listed twice"}},
		{name: "negative tenant rate", body: key("tenants:\n  - {tenant: acme, append_bytes_per_second: -1}\n"), wantErr: []string{"tenants[0].append_bytes_per_second: -1 is not a rate"}},
		{name: "negative tenant streams", body: key("tenants:\n  - {tenant: acme, max_streams: -2}\n"), wantErr: []string{"tenants[0].max_streams: -2 is not a bound"}},
		{name: "negative tenant parked turns", body: key("tenants:\n  - {tenant: acme, max_parked_turns: -1}\n"), wantErr: []string{"tenants[0].max_parked_turns: -1 is not a bound"}},
		{name: "unknown tenant field", body: key("tenants:\n  - {tenant: acme, events_per_second: 1}\n"), wantErr: []string{"events_per_second"}},
		{name: "several errors at once", body: "api_keys:\n  - name: a\n    tenant: a.b\n    role: root\n    key: k\n", wantErr: []string{"tenant", "role"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := auth.LoadConfig(writeConfig(t, tt.body))
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
		})
	}

	_, err := auth.LoadConfig(filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
}

func TestSelfApproval(t *testing.T) {
	type Principal = auth.Principal
	const (
		RoleWorker, RoleOperator, RoleAdmin = auth.RoleWorker, auth.RoleOperator, auth.RoleAdmin
	)
	cases := []struct {
		name               string
		requester, reqRole string
		responder          Principal
		refused            bool
	}{
		{"an operator answers a worker's request", "bot-1", RoleWorker, Principal{Subject: "alice", Role: RoleOperator}, false},
		{"an admin answers a worker's request", "bot-1", RoleWorker, Principal{Subject: "root", Role: RoleAdmin}, false},
		{"a worker principal answers anything", "alice", RoleOperator, Principal{Subject: "bot-2", Role: RoleWorker}, true},
		{"the requesting worker under the operator role", "bot-1", RoleWorker, Principal{Subject: "bot-1", Role: RoleOperator}, true},
		{"the requesting worker under the admin role", "bot-1", RoleWorker, Principal{Subject: "bot-1", Role: RoleAdmin}, true},
		{"an operator answers its own question", "alice", RoleOperator, Principal{Subject: "alice", Role: RoleOperator}, false},
		{"the runtime asked (no requester)", "", "", Principal{Subject: "alice", Role: RoleOperator}, false},
	}
	for _, c := range cases {
		if got := auth.SelfApproval(c.requester, c.reqRole, c.responder); got != c.refused {
			t.Errorf("%s: SelfApproval = %v, want %v", c.name, got, c.refused)
		}
	}
}
