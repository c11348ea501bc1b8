package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	"github.com/agentruntime/agentruntime/pkg/lease"
	"github.com/agentruntime/agentruntime/services/control/app"
)

// A worker holds a session for as long as the lease that gave it (a claim,
// renewed by heartbeats), on the lease store's clock: one moment before
// the lease lapses it reads, at the lapse it is refused; a renewal
// extends the hold. Another worker subject holds nothing by it, and other
// roles are never confined. Objects that are no session's output are
// refused to a worker whatever it holds.
func TestAWorkerHoldsASessionForItsLease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cl := app.NewClaims(nil, lease.NewMemory(func() time.Time { return now }), nil)
	wa := auth.Principal{Tenant: "acme", Subject: "wa", Role: auth.RoleWorker}
	wb := auth.Principal{Tenant: "acme", Subject: "wb", Role: auth.RoleWorker}
	viewer := auth.Principal{Tenant: "acme", Subject: "vera", Role: auth.RoleViewer}
	reads := func(who string, c auth.Principal, session string, want bool) {
		t.Helper()
		err := cl.CheckHeld(ctx, c, session)
		if want && err != nil {
			t.Errorf("%s reading %q: %v, want it allowed", who, session, err)
		}
		if !want && !fault.HasReason(err, auth.ReasonSessionNotHeld) {
			t.Errorf("%s reading %q: %v, want %s", who, session, err, auth.ReasonSessionNotHeld)
		}
	}
	if err := cl.HoldSession(ctx, wa, "s1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	reads("worker A", wa, "s1", true)
	reads("worker B", wb, "s1", false)
	reads("worker A", wa, "s2", false)
	reads("worker A across the tenant", wa, "", false)
	reads("a viewer", viewer, "s1", true)
	reads("a viewer across the tenant", viewer, "", true)

	now = now.Add(29 * time.Second)
	reads("worker A a moment before its lease lapses", wa, "s1", true)
	now = now.Add(time.Second)
	reads("worker A once its lease lapsed", wa, "s1", false)

	// Held again (a new claim), then renewed by a heartbeat before it
	// lapses: the hold runs from the renewal.
	if err := cl.HoldSession(ctx, wa, "s1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Second)
	if err := cl.HoldSession(ctx, wa, "s1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	now = now.Add(20 * time.Second)
	reads("worker A 40s after its claim, 20s after its heartbeat", wa, "s1", true)

	// Not a session's output: refused to a worker before anything is read.
	for _, uri := range []string{
		"object://ar-objects/evidence/acme/s1/ev_1.json",
		"object://ar-objects/permission/acme/eval_1/run_1/updated_input.json",
		"object://ar-objects/output/acme/s1",
	} {
		_, err := cl.ReadOutputHeld(ctx, wa, &controlv1.ReadOutputRequest{Uri: uri})
		if !fault.HasReason(err, auth.ReasonSessionNotHeld) {
			t.Errorf("worker A reading %s: %v, want %s", uri, err, auth.ReasonSessionNotHeld)
		}
	}
}
