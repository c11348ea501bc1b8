package webhooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agentruntime/agentruntime/pkg/hostallow"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// Sender posts deliveries. Its client follows no redirect: the target's
// host was checked against the allowlist, and a redirect would send the
// delivery to a host nobody checked (a 3xx is the receiver's failure).
type Sender struct {
	// Hosts are the hosts a delivery may go to; nil allows any (a
	// composition that restricts nothing, as in tests of other concerns).
	Hosts *hostallow.List
	// Timeout bounds one attempt; default 10 s.
	Timeout time.Duration
	HTTP    *http.Client
}

// NewSender returns a Sender restricted to hosts (nil: any).
func NewSender(hosts *hostallow.List) *Sender {
	return &Sender{Hosts: hosts, Timeout: 10 * time.Second,
		HTTP: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Delivery is one attempt to send.
type Delivery struct {
	URL        string
	DeliveryID string
	Secret     []byte
	Body       []byte
	At         time.Time
	// ContentType is the body's media type; default application/json.
	ContentType string
	// Headers are set on the request after the signature's (an A2A push
	// notification's token and Authorization).
	Headers map[string]string
}

// Send posts d signed in the Standard Webhooks format (webhook-id,
// webhook-timestamp, webhook-signature) and says how it went. The host is
// checked again here: the allowlist may have narrowed since the
// subscription was made.
func (s *Sender) Send(ctx context.Context, d Delivery) domain.DeliveryAttempt {
	if s.Hosts != nil {
		host, port, err := hostallow.HostPort(d.URL)
		if err != nil {
			return domain.DeliveryAttempt{Err: "url " + err.Error()}
		}
		if !s.Hosts.Allows(host, port) {
			// Not retryable in substance, but a 0 status would be retried:
			// 403 says the runtime itself refuses.
			return domain.DeliveryAttempt{StatusCode: http.StatusForbidden, Err: fmt.Sprintf("host %s:%s is no longer allowed (--hook-allow-hosts)", host, port)}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return domain.DeliveryAttempt{Err: err.Error()}
	}
	unix := d.At.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentruntime-webhooks")
	req.Header.Set("webhook-id", d.DeliveryID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(unix, 10))
	req.Header.Set("webhook-signature", domain.SignWebhook(d.Secret, d.DeliveryID, unix, d.Body))
	if d.ContentType != "" {
		req.Header.Set("Content-Type", d.ContentType)
	}
	for k, v := range d.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return domain.DeliveryAttempt{Err: err.Error()}
	}
	defer resp.Body.Close()
	// Read a little so the connection can be reused; the answer's body
	// means nothing to the runtime.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	a := domain.DeliveryAttempt{StatusCode: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		a.Err = resp.Status
	}
	return a
}
