package held_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/fault"
	"github.com/agentruntime/agentruntime/pkg/held"
	"github.com/agentruntime/agentruntime/pkg/lease"
)

var (
	wa     = auth.Principal{Tenant: "acme", Subject: "wa", Role: auth.RoleWorker}
	wb     = auth.Principal{Tenant: "acme", Subject: "wb", Role: auth.RoleWorker}
	globex = auth.Principal{Tenant: "globex", Subject: "wa", Role: auth.RoleWorker}
	viewer = auth.Principal{Tenant: "acme", Subject: "vera", Role: auth.RoleViewer}
)

// A task run is held by the worker its poll handed it to, for its lease,
// with its task's session; not by another subject or another tenant's
// subject of the same name; a heartbeat renews it, and only its holder's.
func TestARunIsHeldByItsWorkerForItsLease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := held.New(lease.NewMemory(func() time.Time { return now }))
	if err := h.HoldRun(ctx, wa, "run_1", "s1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := h.HoldRun(ctx, wa, "run_2", "", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	check := func(who string, p auth.Principal, run, wantSession string, want bool) {
		t.Helper()
		session, ok, err := h.RunSession(ctx, p, run)
		if err != nil || ok != want || session != wantSession {
			t.Errorf("%s on %s: %q %v %v, want %q %v", who, run, session, ok, err, wantSession, want)
		}
	}
	check("worker A", wa, "run_1", "s1", true)
	check("worker A", wa, "run_2", "", true)
	check("worker B", wb, "run_1", "", false)
	check("globex's wa", globex, "run_1", "", false)
	check("worker A", wa, "", "", false)

	now = now.Add(9 * time.Second)
	if err := h.RenewRun(ctx, wb, "run_1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.RenewRun(ctx, wa, "run_1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	check("worker A after its heartbeat", wa, "run_1", "s1", true)
	check("worker A, run 2 not renewed", wa, "run_2", "", false)
	now = now.Add(5 * time.Second)
	check("worker A once the renewed lease lapsed (B's heartbeat renewed nothing)", wa, "run_1", "", false)

	// A viewer's poll holds nothing (only workers are confined).
	if err := h.HoldRun(ctx, viewer, "run_3", "s1", time.Minute); err != nil {
		t.Fatal(err)
	}
	check("the viewer", viewer, "run_3", "", false)
}

// A store that knows of no holds (nil) records none and lets a worker read
// nothing; other roles read.
func TestANilStoreHoldsNothing(t *testing.T) {
	ctx := context.Background()
	var h *held.Store
	if err := h.HoldSession(ctx, wa, "s1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.HoldRun(ctx, wa, "run_1", "s1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.CheckSession(ctx, wa, "s1", "session_id"); !fault.HasReason(err, auth.ReasonSessionNotHeld) {
		t.Errorf("a worker through a nil store: %v, want %s", err, auth.ReasonSessionNotHeld)
	}
	if _, ok, _ := h.RunSession(ctx, wa, "run_1"); ok {
		t.Error("a nil store holds a run")
	}
	if err := h.CheckSession(ctx, viewer, "s1", "session_id"); err != nil {
		t.Errorf("a viewer through a nil store: %v", err)
	}
}

// A read across sessions names the field that would have named one.
func TestAWorkersReadAcrossSessionsNamesTheField(t *testing.T) {
	err := held.NewMemory().CheckSession(context.Background(), wa, "", "target.session_id")
	e, ok := fault.As(err)
	if !ok || e.Kind != fault.KindPermissionDenied || e.Metadata["field"] != "target.session_id" {
		t.Fatalf("%v, want PermissionDenied naming target.session_id", err)
	}
}
