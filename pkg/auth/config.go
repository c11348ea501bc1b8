package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the authentication configuration file.
type Config struct {
	APIKeys []APIKeyConfig `yaml:"api_keys"`
	JWT     *JWTConfig     `yaml:"jwt"`
	// Tenants set per-tenant limits over the binary's defaults (pkg/quota).
	Tenants []TenantConfig `yaml:"tenants"`
}

// TenantConfig is one tenant's own limits: a field left out keeps the
// binary's default (--append-events-per-second, --append-bytes-per-second,
// --max-streams-per-tenant, --max-parked-turns-per-tenant); 0 lifts the
// limit for that tenant.
type TenantConfig struct {
	Tenant                string   `yaml:"tenant"`
	AppendEventsPerSecond *float64 `yaml:"append_events_per_second"`
	AppendBytesPerSecond  *float64 `yaml:"append_bytes_per_second"`
	// MaxStreams bounds the tenant's open streams per process (default
	// --max-streams-per-tenant).
	MaxStreams *int `yaml:"max_streams"`
	// MaxParkedTurns bounds the tenant's turns parked at once (default
	// --max-parked-turns-per-tenant).
	MaxParkedTurns *int `yaml:"max_parked_turns"`
}

// APIKeyConfig is one static API key. Exactly one of KeySHA256 and Key is
// set; KeySHA256 is preferred so the file never holds a usable secret.
type APIKeyConfig struct {
	Name      string `yaml:"name"` // becomes Principal.Subject
	Tenant    string `yaml:"tenant"`
	Role      string `yaml:"role"`
	KeySHA256 string `yaml:"key_sha256"` // hex sha256 of the key
	Key       string `yaml:"key"`        // plaintext, for development
}

// JWTConfig configures bearer JWT verification. At least one of
// HS256SecretFile and RS256PublicKeyFile is set; only the configured
// algorithms are accepted.
type JWTConfig struct {
	Issuer             string `yaml:"issuer"`   // checked when set
	Audience           string `yaml:"audience"` // checked when set
	HS256SecretFile    string `yaml:"hs256_secret_file"`
	RS256PublicKeyFile string `yaml:"rs256_public_key_file"`
	TenantClaim        string `yaml:"tenant_claim"` // default "tenant"
	RoleClaim          string `yaml:"role_claim"`   // default "role"
}

const (
	defaultTenantClaim = "tenant"
	defaultRoleClaim   = "role"
)

// LoadConfig reads and validates the YAML file at path. Unknown fields are
// errors so that a misspelt key never silently disables a check. Relative
// key file paths are resolved against the directory of path, so a config
// and its keys can move together.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg Config
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("auth config %s: %w", path, err)
	}
	if cfg.JWT != nil {
		dir := filepath.Dir(path)
		cfg.JWT.HS256SecretFile = resolvePath(dir, cfg.JWT.HS256SecretFile)
		cfg.JWT.RS256PublicKeyFile = resolvePath(dir, cfg.JWT.RS256PublicKeyFile)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("auth config %s: %w", path, err)
	}
	return &cfg, nil
}

func resolvePath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// Validate checks the configuration without reading key files, reporting
// every problem at once.
func (c *Config) Validate() error {
	if len(c.APIKeys) == 0 && c.JWT == nil {
		return errors.New("no api_keys and no jwt configured: nobody could authenticate (use anonymous dev mode instead)")
	}
	var errs []error
	seen := make(map[[sha256.Size]byte]string, len(c.APIKeys))
	for i, k := range c.APIKeys {
		where := fmt.Sprintf("api_keys[%d]", i)
		if k.Name != "" {
			where += fmt.Sprintf(" (%s)", k.Name)
		}
		if k.Name == "" {
			errs = append(errs, fmt.Errorf("%s: name is required", where))
		}
		if err := ValidateTenant(k.Tenant); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if err := ValidateRole(k.Role); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		hash, err := k.hash()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		// Two entries with one key would make the tenant ambiguous.
		if prev, dup := seen[hash]; dup {
			errs = append(errs, fmt.Errorf("%s: same key as %s", where, prev))
		}
		seen[hash] = where
	}
	tenants := make(map[string]bool, len(c.Tenants))
	for i, tc := range c.Tenants {
		where := fmt.Sprintf("tenants[%d]", i)
		if err := ValidateTenant(tc.Tenant); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		} else if tenants[tc.Tenant] {
			errs = append(errs, fmt.Errorf("%s: tenant %s is listed twice", where, tc.Tenant))
		}
		tenants[tc.Tenant] = true
		for _, r := range []struct {
			name string
			v    *float64
		}{{"append_events_per_second", tc.AppendEventsPerSecond}, {"append_bytes_per_second", tc.AppendBytesPerSecond}} {
			if name, v := r.name, r.v; v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
				errs = append(errs, fmt.Errorf("%s.%s: %v is not a rate (0 or more; 0 lifts the limit)", where, name, *v))
			}
		}
	}
	for i, tc := range c.Tenants {
		if tc.MaxStreams != nil && *tc.MaxStreams < 0 {
			errs = append(errs, fmt.Errorf("tenants[%d].max_streams: %d is not a bound (0 or more; 0 lifts it)", i, *tc.MaxStreams))
		}
		if tc.MaxParkedTurns != nil && *tc.MaxParkedTurns < 0 {
			errs = append(errs, fmt.Errorf("tenants[%d].max_parked_turns: %d is not a bound (0 or more; 0 lifts it)", i, *tc.MaxParkedTurns))
		}
	}
	if j := c.JWT; j != nil {
		if j.HS256SecretFile == "" && j.RS256PublicKeyFile == "" {
			errs = append(errs, errors.New("jwt: set hs256_secret_file and/or rs256_public_key_file"))
		}
		if j.tenantClaim() == j.roleClaim() {
			errs = append(errs, errors.New("jwt: tenant_claim and role_claim must differ"))
		}
	}
	return errors.Join(errs...)
}

// hash returns the sha256 the presented key is compared against.
func (k APIKeyConfig) hash() ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	switch {
	case k.KeySHA256 != "" && k.Key != "":
		return out, errors.New("set key_sha256 or key, not both")
	case k.KeySHA256 != "":
		b, err := hex.DecodeString(k.KeySHA256)
		if err != nil || len(b) != sha256.Size {
			return out, errors.New("key_sha256 must be 64 hex characters")
		}
		copy(out[:], b)
		return out, nil
	case k.Key != "":
		// A key shaped like a JWT would be routed to JWT verification and
		// could never match.
		if looksLikeJWT(k.Key) {
			return out, errors.New("key must not contain two '.' characters (it would be taken for a JWT)")
		}
		if strings.TrimSpace(k.Key) != k.Key {
			return out, errors.New("key must not start or end with whitespace")
		}
		return sha256.Sum256([]byte(k.Key)), nil
	default:
		return out, errors.New("key_sha256 (or key) is required")
	}
}

func (j *JWTConfig) tenantClaim() string {
	if j.TenantClaim == "" {
		return defaultTenantClaim
	}
	return j.TenantClaim
}

func (j *JWTConfig) roleClaim() string {
	if j.RoleClaim == "" {
		return defaultRoleClaim
	}
	return j.RoleClaim
}
