package server

import "time"

// Limits the tests reach for (limits.go, http.go).
const (
	MaxHealthWatches  = maxHealthWatches
	MaxMessageBytes   = maxTranscodeBuffer
	MaxStreamsPerConn = maxStreamsPerConn
)

// SetHTTPReadTimeout changes the HTTP read timeout of servers that start
// serving before the test ends.
func SetHTTPReadTimeout(t interface{ Cleanup(func()) }, d time.Duration) {
	old := httpReadTimeout
	httpReadTimeout = d
	t.Cleanup(func() { httpReadTimeout = old })
}
