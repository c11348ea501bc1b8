package eventlog

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// headerCarrier carries W3C trace context in NATS headers. NATS header keys
// are case-sensitive while OTel's HTTP carrier canonicalises them
// ("Traceparent"); this carrier writes the lowercase W3C keys and reads any
// case, so producers in other languages join the same trace.
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	if v := nats.Header(c)[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) {
	c[strings.ToLower(key)] = []string{value}
}

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
