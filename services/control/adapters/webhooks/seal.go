// Package webhooks holds what control's webhook deliveries need beyond the
// log and the read model: the key that seals subscription secrets, and the
// HTTP sender that posts a signed delivery to an allowed host.
package webhooks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of a webhook key: AES-256.
const KeySize = 32

// Sealer seals subscription secrets with the runtime's webhook key
// (AES-256-GCM), bound to the tenant and webhook id they belong to: the
// log holds only the sealed form, so a reader of the log (any viewer of
// the tenant's events, an evidence export) cannot sign deliveries, and a
// sealed secret copied onto another subscription does not open.
type Sealer struct {
	aead cipher.AEAD
	id   string
}

// NewSealer uses key (KeySize bytes).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a webhook key is %d bytes, not %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte("agentruntime webhook key\x00"), key...))
	return &Sealer{aead: aead, id: hex.EncodeToString(sum[:8])}, nil
}

// KeyID is the key's fingerprint, recorded beside each sealed secret.
func (s *Sealer) KeyID() string { return s.id }

func binding(tenant, webhookID string) []byte {
	return []byte(tenant + "\x00" + webhookID)
}

// Seal returns nonce|ciphertext of secret for the tenant's webhook.
func (s *Sealer) Seal(tenant, webhookID string, secret []byte) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, secret, binding(tenant, webhookID)), nil
}

// ErrKey: a sealed secret does not open with this key (another key sealed
// it, or it was moved from another subscription).
var ErrKey = errors.New("the webhook secret does not open with this runtime's webhook key")

// Open returns the secret Seal sealed for the tenant's webhook.
func (s *Sealer) Open(tenant, webhookID, keyID string, sealed []byte) ([]byte, error) {
	if keyID != s.id || len(sealed) < s.aead.NonceSize() {
		return nil, ErrKey
	}
	n := s.aead.NonceSize()
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], binding(tenant, webhookID))
	if err != nil {
		return nil, ErrKey
	}
	return out, nil
}

// NewSecret is a fresh signing secret (32 random bytes).
func NewSecret() ([]byte, error) {
	b := make([]byte, 32)
	_, err := rand.Read(b)
	return b, err
}

// ParseKey reads a webhook key written as base64 (standard or URL
// alphabet, padded or not) or hex.
func ParseKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if b, err := dec(text); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("a webhook key is %d bytes in base64 or hex", KeySize)
}

// LoadOrCreateKey reads the key file at path, or, when there is none,
// writes a fresh key there (mode 0600): `agentruntime dev` keeps its key
// beside its data, so the secrets it sealed open after a restart.
func LoadOrCreateKey(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		return ParseKey(string(raw))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}
