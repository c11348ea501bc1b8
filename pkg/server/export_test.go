package server

// Limits the tests reach for (limits.go, http.go).
const (
	MaxHealthWatches  = maxHealthWatches
	MaxMessageBytes   = maxTranscodeBuffer
	MaxStreamsPerConn = maxStreamsPerConn
)
