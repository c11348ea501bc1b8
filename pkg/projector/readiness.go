package projector

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Readiness follows the projectors and reactors of one service (through
// Options) and says whether its read models can be trusted: not when one
// keeps failing (every try since FailingFor has failed) or lags the log by
// more than MaxLag events. The process's liveness is another matter: a
// service that is not ready is still alive and recovering.
type Readiness struct {
	// MaxLag is how many events behind the log a consumer may be; 0: no
	// bound.
	MaxLag uint64
	// FailingFor is how long a consumer may fail without a batch in
	// between before the service is not ready (default 5s).
	FailingFor time.Duration

	mu        sync.Mutex
	consumers map[string]*consumerState
	held      string // why the service is held not ready; "" when not
}

type consumerState struct {
	pending      uint64
	failingSince time.Time // zero while healthy
	lastErr      error
}

// Options are the options that report to r; give them to every Run and
// React of the service (ContextWithOptions).
func (r *Readiness) Options() []Option {
	return []Option{WithProgress(r.progress), WithFailure(r.failure)}
}

// Hold makes the service not ready, whatever its consumers say, until
// Release: its read models are a generation being built beside the active
// one (Upgrade; docs/upgrading.md).
func (r *Readiness) Hold(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = why
}

// Release ends a Hold.
func (r *Readiness) Release() { r.Hold("") }

func (r *Readiness) state(name string) *consumerState {
	if r.consumers == nil {
		r.consumers = map[string]*consumerState{}
	}
	c := r.consumers[name]
	if c == nil {
		c = &consumerState{}
		r.consumers[name] = c
	}
	return c
}

func (r *Readiness) progress(p Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.state(p.Name)
	c.pending, c.failingSince, c.lastErr = p.Pending, time.Time{}, nil
}

func (r *Readiness) failure(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.state(name)
	if c.failingSince.IsZero() {
		c.failingSince = time.Now()
	}
	c.lastErr = err
}

// Ready reports whether every consumer is within bounds at now, and when
// not, why (each consumer out of bounds, sorted by name).
func (r *Readiness) Ready(now time.Time) (bool, string) {
	failingFor := r.FailingFor
	if failingFor <= 0 {
		failingFor = 5 * time.Second
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var why []string
	if r.held != "" {
		why = append(why, r.held)
	}
	for name, c := range r.consumers {
		switch {
		case !c.failingSince.IsZero() && now.Sub(c.failingSince) >= failingFor:
			why = append(why, fmt.Sprintf("%s failing for %s: %v", name, now.Sub(c.failingSince).Round(time.Second), c.lastErr))
		case r.MaxLag > 0 && c.pending > r.MaxLag:
			why = append(why, fmt.Sprintf("%s lags the log by %d events (bound %d)", name, c.pending, r.MaxLag))
		}
	}
	sort.Strings(why)
	return len(why) == 0, strings.Join(why, "; ")
}
