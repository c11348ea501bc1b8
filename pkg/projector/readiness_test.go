package projector

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadiness(t *testing.T) {
	r := &Readiness{MaxLag: 100, FailingFor: 5 * time.Second}
	o := options{}
	for _, opt := range r.Options() {
		opt(&o)
	}
	t0 := time.Now()
	if ok, why := r.Ready(t0); !ok {
		t.Fatalf("no consumer yet: not ready: %s", why)
	}
	o.progress(Progress{Name: "control.sessions", Pending: 100})
	if ok, why := r.Ready(t0); !ok {
		t.Fatalf("lag at the bound: not ready: %s", why)
	}
	o.progress(Progress{Name: "control.sessions", Pending: 101})
	if ok, why := r.Ready(t0); ok || !strings.Contains(why, "control.sessions lags the log by 101 events (bound 100)") {
		t.Fatalf("lag over the bound: ready=%v %q", ok, why)
	}
	o.progress(Progress{Name: "control.sessions", Pending: 0})
	o.failure("control.reactor", errors.New("redis: connection refused"))
	if ok, why := r.Ready(time.Now().Add(4 * time.Second)); !ok {
		t.Fatalf("one failure, briefly: not ready: %s", why)
	}
	o.failure("control.reactor", errors.New("redis: connection refused"))
	if ok, why := r.Ready(time.Now().Add(6 * time.Second)); ok || !strings.Contains(why, "control.reactor failing for") || !strings.Contains(why, "connection refused") {
		t.Fatalf("failing for 6s: ready=%v %q", ok, why)
	}
	o.progress(Progress{Name: "control.reactor"})
	if ok, why := r.Ready(time.Now().Add(time.Minute)); !ok {
		t.Fatalf("a batch went through: not ready: %s", why)
	}
}

// A hold (a generation being rebuilt at an upgrade) makes the service not
// ready whatever its consumers say, until it is released.
func TestReadinessHold(t *testing.T) {
	r := &Readiness{}
	r.Hold("rebuilding its read models")
	if ok, why := r.Ready(time.Now()); ok || why != "rebuilding its read models" {
		t.Fatalf("held: ready=%v %q", ok, why)
	}
	r.Release()
	if ok, why := r.Ready(time.Now()); !ok {
		t.Fatalf("released: not ready: %s", why)
	}
}
