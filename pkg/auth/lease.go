package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// Workers are fenced to the runs they hold (docs/architecture.md,
// "Authorization and the trust model"; docs/security.md): a claim hands
// out a run id and a lease token, and the lease store keeps the pair as the
// lease's holder. Heartbeats, reports and the end of a run are heard only
// when the pair they carry is the current holder, so a stalled worker
// whose lease lapsed, or that only learned a run id from the event stream,
// is never recorded.

// NewLeaseToken returns a fresh unguessable lease token (128 random bits).
func NewLeaseToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// LeaseHolder is what a lease store holds for the run's lease.
func LeaseHolder(runID, token string) string { return runID + "/" + token }

// HoldsLease reports whether the holder a lease store answered is the
// run's pair. The comparison takes the same time however much matches.
func HoldsLease(holder, runID, token string) bool {
	if token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(holder), []byte(LeaseHolder(runID, token))) == 1
}

// LeaseRun is the run id of a holder written by LeaseHolder.
func LeaseRun(holder string) string {
	run, _, _ := strings.Cut(holder, "/")
	return run
}
