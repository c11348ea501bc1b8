package auth

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/metadata"

	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/grpcerr"
)

// Authenticator derives the caller's Principal from a request context.
// Errors are gRPC statuses (Unauthenticated for any credential problem).
type Authenticator interface {
	Authenticate(ctx context.Context) (Principal, error)
}

const (
	// HS256 keys shorter than the hash output weaken the MAC (RFC 7518 §3.2).
	minHS256SecretBytes = 32
	// RSA keys below 2048 bits are considered breakable.
	minRSABits = 2048
	// Clocks of token issuers and servers drift; a small leeway avoids
	// rejecting a token that expired a moment ago on someone else's clock.
	clockSkew = 30 * time.Second
)

type apiKey struct {
	hash      [sha256.Size]byte
	principal Principal
}

type authenticator struct {
	apiKeys []apiKey
	jwt     *jwtVerifier // nil when JWT is not configured
}

type jwtVerifier struct {
	parser      *jwt.Parser
	hs256Secret []byte         // nil unless HS256 is configured
	rs256Key    *rsa.PublicKey // nil unless RS256 is configured
	methods     []string       // the accepted "alg" values
	tenantClaim string
	roleClaim   string
}

// New builds an Authenticator from cfg, reading the JWT key files it names.
func New(cfg *Config) (Authenticator, error) {
	if cfg == nil {
		return nil, errors.New("auth: nil config")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	a := &authenticator{}
	for _, k := range cfg.APIKeys {
		hash, _ := k.hash() // validated above
		a.apiKeys = append(a.apiKeys, apiKey{
			hash:      hash,
			principal: Principal{Tenant: k.Tenant, Subject: k.Name, Role: k.Role, Method: MethodAPIKey},
		})
	}
	if cfg.JWT != nil {
		v, err := newJWTVerifier(cfg.JWT)
		if err != nil {
			return nil, fmt.Errorf("auth: jwt: %w", err)
		}
		a.jwt = v
	}
	return a, nil
}

func newJWTVerifier(cfg *JWTConfig) (*jwtVerifier, error) {
	v := &jwtVerifier{tenantClaim: cfg.tenantClaim(), roleClaim: cfg.roleClaim()}
	// Only the configured algorithms are valid, and each algorithm has its
	// own key: a token can never choose which key verifies it (no alg=none,
	// no HS256 signed with the RSA public key).
	var methods []string
	if cfg.HS256SecretFile != "" {
		secret, err := os.ReadFile(cfg.HS256SecretFile)
		if err != nil {
			return nil, fmt.Errorf("hs256_secret_file: %w", err)
		}
		// Secret files are usually written by tools that end them with a
		// newline, which is not part of the secret.
		secret = bytes.TrimRight(secret, "\r\n")
		if len(secret) < minHS256SecretBytes {
			return nil, fmt.Errorf("hs256_secret_file %s: secret has %d bytes, want at least %d", cfg.HS256SecretFile, len(secret), minHS256SecretBytes)
		}
		v.hs256Secret = secret
		methods = append(methods, jwt.SigningMethodHS256.Alg())
	}
	if cfg.RS256PublicKeyFile != "" {
		pemBytes, err := os.ReadFile(cfg.RS256PublicKeyFile)
		if err != nil {
			return nil, fmt.Errorf("rs256_public_key_file: %w", err)
		}
		key, err := jwt.ParseRSAPublicKeyFromPEM(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("rs256_public_key_file %s: %w", cfg.RS256PublicKeyFile, err)
		}
		if key.N.BitLen() < minRSABits {
			return nil, fmt.Errorf("rs256_public_key_file %s: RSA key has %d bits, want at least %d", cfg.RS256PublicKeyFile, key.N.BitLen(), minRSABits)
		}
		v.rs256Key = key
		methods = append(methods, jwt.SigningMethodRS256.Alg())
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(clockSkew),
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.methods = methods
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// Authenticate implements Authenticator.
func (a *authenticator) Authenticate(ctx context.Context) (Principal, error) {
	token, err := bearerToken(ctx)
	if err != nil {
		return Principal{}, err
	}
	if looksLikeJWT(token) {
		if a.jwt == nil {
			return Principal{}, unauthenticated("JWT bearer tokens are not accepted by this server; use an API key")
		}
		return a.jwt.verify(token)
	}
	return a.matchAPIKey(token)
}

func (a *authenticator) matchAPIKey(token string) (Principal, error) {
	sum := sha256.Sum256([]byte(token))
	// Compare against every key without stopping early, so the time taken
	// says nothing about which entry matched or how close a guess came.
	match := -1
	for i := range a.apiKeys {
		if subtle.ConstantTimeCompare(sum[:], a.apiKeys[i].hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return Principal{}, unauthenticated("invalid API key")
	}
	return a.apiKeys[match].principal, nil
}

func (v *jwtVerifier) keyFor(t *jwt.Token) (any, error) {
	// The parser already restricted the algorithm to the configured ones;
	// the switch makes the key depend on the algorithm family, never on
	// anything else the token says.
	switch t.Method.Alg() {
	case jwt.SigningMethodHS256.Alg():
		if v.hs256Secret != nil {
			return v.hs256Secret, nil
		}
	case jwt.SigningMethodRS256.Alg():
		if v.rs256Key != nil {
			return v.rs256Key, nil
		}
	}
	return nil, fmt.Errorf("signing method %s is not accepted", t.Method.Alg())
}

func (v *jwtVerifier) verify(token string) (Principal, error) {
	claims := jwt.MapClaims{}
	if tok, err := v.parser.ParseWithClaims(token, claims, v.keyFor); err != nil {
		// Naming the refused algorithm helps whoever configured the issuer
		// and reveals nothing secret: the accepted ones are configuration.
		if tok != nil && tok.Method != nil && !slices.Contains(v.methods, tok.Method.Alg()) {
			return Principal{}, unauthenticated(fmt.Sprintf("token signing method %q is not accepted", tok.Method.Alg()))
		}
		return Principal{}, jwtError(err)
	}
	tenant, ok := claims[v.tenantClaim].(string)
	if !ok || tenant == "" {
		return Principal{}, unauthenticated(fmt.Sprintf("token has no %q claim naming the tenant", v.tenantClaim))
	}
	if err := ValidateTenant(tenant); err != nil {
		return Principal{}, unauthenticated("token " + err.Error())
	}
	// A token without a role gets the least privileged one rather than
	// being refused: issuers that know nothing of roles still work for reads.
	role := RoleViewer
	if raw, present := claims[v.roleClaim]; present {
		r, ok := raw.(string)
		if !ok {
			return Principal{}, unauthenticated(fmt.Sprintf("token claim %q must be a string", v.roleClaim))
		}
		if err := ValidateRole(r); err != nil {
			return Principal{}, unauthenticated("token " + err.Error())
		}
		role = r
	}
	// The subject is who acted: events record it as the requester, and the
	// no-self-approval rule (SelfApproval in access.go) compares it.
	// Without one every subject-less token would be the same nobody, and a
	// worker's request could not be told from its answer.
	subject, err := claims.GetSubject()
	if err != nil {
		return Principal{}, unauthenticated("token claim \"sub\" must be a string")
	}
	if subject == "" {
		return Principal{}, unauthenticated("token has no \"sub\" claim naming the caller")
	}
	return Principal{Tenant: tenant, Subject: subject, Role: role, Method: MethodJWT}, nil
}

// jwtError turns a verification failure into a message that says what is
// wrong with the token and nothing about the keys.
func jwtError(err error) error {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return unauthenticated("malformed token")
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return unauthenticated("invalid token signature")
	case errors.Is(err, jwt.ErrTokenExpired):
		return unauthenticated("token is expired")
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return unauthenticated("token is not valid yet")
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return unauthenticated("token issuer is not accepted")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return unauthenticated("token audience is not accepted")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return unauthenticated("token is missing a required claim (exp, and iss/aud when configured)")
	default:
		return unauthenticated("invalid token")
	}
}

// bearerToken extracts the token from "authorization: Bearer <token>".
func bearerToken(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	values := md.Get("authorization")
	switch len(values) {
	case 0:
		return "", unauthenticated(`missing credentials: send metadata "authorization: Bearer <token>"`)
	case 1:
	default:
		return "", unauthenticated("malformed authorization metadata: more than one value")
	}
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, token, found := strings.Cut(values[0], " ")
	token = strings.TrimSpace(token)
	if !found || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", unauthenticated(`malformed authorization metadata: want "Bearer <token>"`)
	}
	return token, nil
}

// looksLikeJWT reports whether token has the compact JWS shape: three
// dot-separated parts.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2
}

func unauthenticated(msg string) error {
	return grpcerr.Status(fault.Unauthenticated(msg))
}

type anonymous struct{ principal Principal }

// Anonymous returns an Authenticator for the single-user dev mode: every
// call, with or without credentials, acts for tenant as an admin. It panics
// if tenant is invalid; check user input with ValidateTenant first.
func Anonymous(tenant string) Authenticator {
	if err := ValidateTenant(tenant); err != nil {
		panic("auth.Anonymous: " + err.Error())
	}
	return anonymous{Principal{Tenant: tenant, Subject: "anonymous", Role: RoleAdmin, Method: MethodAnonymous}}
}

func (a anonymous) Authenticate(context.Context) (Principal, error) {
	return a.principal, nil
}
