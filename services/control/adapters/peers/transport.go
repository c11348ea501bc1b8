package peers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/agentruntime/agentruntime/pkg/peerauth"
)

// transport is the Dialer's round tripper. It gives each request the
// credential configured for the request's own host and port
// (--a2a-peer-credentials), so a card fetch and every call carry the
// credential of the host they go to, and a card naming an interface on
// another host never draws out a credential meant for the card's host.
// (a2aclient's AuthInterceptor does not fit: it keys credentials by the
// card's scheme names, not by host, and does not cover the card fetch.)
// The client follows no redirect, so a credential never crosses one, and
// a credential goes over https only, or to this machine: never in clear
// text across a network.
//
// An answer the driver must tell apart whatever binding the SDK spoke,
// which the SDK reports as text ("unexpected HTTP status"), is turned
// into a *StatusError: 401 and 403 (refused) and 408, 429 and 5xx
// (worth another try).
type transport struct {
	base  http.RoundTripper
	creds *peerauth.Set
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	host, port := r.URL.Hostname(), r.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[r.URL.Scheme]
	}
	sent, withheld := false, false
	if name, value, ok := t.creds.Header(host, port); ok {
		if r.URL.Scheme != "https" && !onThisMachine(host) {
			// A secret is not sent in clear text off this machine.
			withheld = true
		} else {
			r = r.Clone(r.Context())
			r.Header.Set(name, value)
			sent = true
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch c := resp.StatusCode; {
	case c == http.StatusUnauthorized, c == http.StatusForbidden, c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c >= 500:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return nil, &StatusError{Host: net.JoinHostPort(host, port), Status: resp.Status, Code: resp.StatusCode, CredentialSent: sent, CredentialWithheld: withheld}
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The SDK reads a card or an answer whole: a peer cannot make
		// the control service hold more than this of it.
		resp.Body = &capped{r: resp.Body, left: MaxAnswerBytes, host: net.JoinHostPort(host, port)}
	}
	return resp, nil
}

// MaxAnswerBytes bounds a peer's answer that is not a stream (its card, a
// task, a message).
const MaxAnswerBytes = 4 << 20

// ErrTooLarge is a peer's answer past MaxAnswerBytes.
var ErrTooLarge = errors.New("the A2A peer's answer is too large")

// capped reads a body until left runs out, then fails.
type capped struct {
	r    io.ReadCloser
	left int64
	host string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("%w: %s sent more than %d bytes", ErrTooLarge, c.host, MaxAnswerBytes)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// onThisMachine says whether host is this machine: "localhost" or a loopback
// address.
func onThisMachine(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// StatusError is an HTTP answer of a peer that refuses the runtime (401,
// 403) or asks it to come back (408, 429, 5xx).
type StatusError struct {
	// Host is the host:port that answered.
	Host   string
	Status string
	Code   int
	// CredentialSent says the request carried a credential of
	// --a2a-peer-credentials; CredentialWithheld that one is configured
	// for the host and was not sent, the request being plain http to
	// another machine.
	CredentialSent, CredentialWithheld bool
}

func (e *StatusError) Error() string {
	if !e.Refused() {
		return fmt.Sprintf("%s answered HTTP %s", e.Host, e.Status)
	}
	if e.CredentialSent {
		return fmt.Sprintf("%s answered HTTP %s to the credential --a2a-peer-credentials gives it", e.Host, e.Status)
	}
	if e.CredentialWithheld {
		return fmt.Sprintf("%s answered HTTP %s: the credential --a2a-peer-credentials gives it is sent over https only (or to this machine), and this request was plain http", e.Host, e.Status)
	}
	return fmt.Sprintf("%s answered HTTP %s and no credential is configured for it (--a2a-peer-credentials, AR_A2A_PEER_CREDENTIALS; docs/a2a.md)", e.Host, e.Status)
}

// Refused says the peer refused the caller (401 or 403).
func (e *StatusError) Refused() bool {
	return e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden
}

// Refused is the peer's refusal of the runtime (HTTP 401 or 403) that err
// holds, nil when it holds none.
func Refused(err error) *StatusError {
	var se *StatusError
	if errors.As(err, &se) && se.Refused() {
		return se
	}
	return nil
}

// Transient says whether err, of a call to a peer, may pass if the call is
// made again: the peer could not be connected to or did not answer in
// time (a network error, a timeout), or answered 408, 429 or 5xx. A host
// not allowed, a refusal (401, 403), any other answer (a 404, a card that
// does not parse, a card with no usable interface, an A2A error) is not.
// A context ended by the caller is not either: the caller stopped.
func Transient(err error) bool {
	if err == nil || errors.Is(err, ErrNotAllowed) || errors.Is(err, ErrTooLarge) || errors.Is(err, context.Canceled) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return !se.Refused()
	}
	var ce *agentcard.ErrStatusNotOK
	if errors.As(err, &ce) {
		return ce.StatusCode == http.StatusRequestTimeout || ce.StatusCode == http.StatusTooManyRequests || ce.StatusCode >= 500
	}
	// A certificate the runtime does not trust will not become trusted.
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	if errors.As(err, &cert) || errors.As(err, &unknown) || errors.As(err, &name) {
		return false
	}
	// Anything else the HTTP client met on the way (a connection refused,
	// reset or closed before the answer, a name not resolved) or a
	// call's own deadline.
	var ue *url.Error
	var op *net.OpError
	if errors.As(err, &ue) || errors.As(err, &op) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
