package fanout_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/fanout"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

// sessionsPerPartition names one session of tenant in each partition of
// log, found by hashing, not by luck.
func sessionsPerPartition(t testing.TB, log *eventlog.Log, tenant string) []string {
	t.Helper()
	out := make([]string, log.Partitions())
	found := 0
	for i := 0; found < len(out); i++ {
		s := fmt.Sprint("s", i)
		if k := log.Subjects.PartitionOf(tenant, s); out[k] == "" {
			out[k] = s
			found++
		}
	}
	return out
}

// tenantEvents are the sequences of every event of tenant in the log,
// partition by partition.
func tenantEvents(t testing.TB, log *eventlog.Log, tenant string) map[int][]uint64 {
	t.Helper()
	out := map[int][]uint64{}
	for k, view := range log.Views() {
		if _, err := view.Read(context.Background(), []string{view.Subjects.Tenant(tenant)}, eventlog.FromStart, func(r *eventlog.Record) error {
			out[k] = append(out[k], r.Event.Sequence)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// byPartition groups delivered sequences by partition, in delivery order.
func byPartition(log *eventlog.Log, seqs []uint64) map[int][]uint64 {
	out := map[int][]uint64{}
	for _, s := range seqs {
		k := log.PartitionOfPosition(s)
		out[k] = append(out[k], s)
	}
	return out
}

// readUntil reads sub until it delivered want events, returning them. A
// subscription that stays idle for long before that (events lost) ends
// the read early, so that the test says what is missing.
func readUntil(ctx context.Context, sub *fanout.Subscription, want int) ([]uint64, error) {
	var seqs []uint64
	for len(seqs) < want {
		recs, err := sub.Next(ctx, 10*time.Second)
		if err != nil || len(recs) == 0 {
			return seqs, err
		}
		for _, r := range recs {
			seqs = append(seqs, r.Event.Sequence)
		}
	}
	return seqs, nil
}

// GS-1: on a log of three partitions, writers append to a session in each
// partition at once, one of them three times as often, so positions of the
// partitions interleave out of order. A tenant-wide subscription started
// before them, one started from the beginning, and a session's
// subscription each get every event of theirs exactly once, each partition
// (so each session) in order. One hub following the partitions with one
// position would drop every event whose position is below the last one it
// dispatched.
func TestPartitionedHubDeliversEveryPartitionExactlyOnce(t *testing.T) {
	f := setupPartitions(t, fanout.Config{Buffer: 8, Recent: 16, ReplayBatch: 5}, 3)
	ctx := testkit.Context(t)
	sessions := sessionsPerPartition(t, f.log, "acme")
	appendTo(t, f.log, "acme", sessions[1], "before")
	live, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme"}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	one, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme", Session: sessions[2]}, fanout.Now, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	var wg sync.WaitGroup
	for k, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 * (1 + 2*(k%2)) {
				appendTo(t, f.log, "acme", s, fmt.Sprint(k, ":", i))
			}
		}()
	}
	appendTo(t, f.log, "globex", sessions[0], "another tenant")
	wg.Wait()
	all := tenantEvents(t, f.log, "acme")
	n := len(all[0]) + len(all[1]) + len(all[2])
	got, err := readUntil(ctx, live, n-1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]uint64{0: all[0], 1: all[1][1:], 2: all[2]} // not the one before
	if g := byPartition(f.log, got); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("tenant-wide from now: %d events, want %d\n got %v\nwant %v", len(got), n-1, g, want)
	}
	from, err := f.hub.SubscribeAt(ctx, fanout.Filter{Tenant: "acme"}, make(fanout.Cursor, 3), fanout.Options{Buffer: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	if got, err = readUntil(ctx, from, n); err != nil {
		t.Fatal(err)
	}
	if g := byPartition(f.log, got); fmt.Sprint(g) != fmt.Sprint(all) {
		t.Fatalf("tenant-wide from the start: %d events, want %d\n got %v\nwant %v", len(got), n, g, all)
	}
	if got, err = readUntil(ctx, one, len(all[2])); err != nil || fmt.Sprint(got) != fmt.Sprint(all[2]) {
		t.Fatalf("session %s: %v %v, want %v", sessions[2], got, err, all[2])
	}
	if c := from.Cursor(); fmt.Sprint([]uint64(c)) != fmt.Sprint([]uint64{all[0][len(all[0])-1] / 3, all[1][len(all[1])-1] / 3, all[2][len(all[2])-1] / 3}) {
		t.Fatalf("cursor after everything: %v", c)
	}
}

// A tenant-wide subscription on three partitions is cut again and again
// in the middle of what Next returned, and resumed from the cursor of the
// last record it kept (the cursor before the batch, advanced record by
// record, as a server sends one with each event): the union of what it
// kept is every event exactly once, each partition in order, while
// writers append.
func TestCursorResumesEachPartitionWithNoGapAndNoDuplicate(t *testing.T) {
	f := setupPartitions(t, fanout.Config{Recent: 10, ReplayBatch: 4}, 3)
	ctx := testkit.Context(t)
	sessions := sessionsPerPartition(t, f.log, "acme")
	for k, s := range sessions {
		for i := range 10 {
			appendTo(t, f.log, "acme", s, fmt.Sprint("pre", k, i))
		}
	}
	var wg sync.WaitGroup
	for k, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 * (k + 1) {
				appendTo(t, f.log, "acme", s, fmt.Sprint(k, ":", i))
			}
		}()
	}
	at := make(fanout.Cursor, 3)
	var kept []uint64
	for cut := 0; ; cut++ {
		sub, err := f.hub.SubscribeAt(ctx, fanout.Filter{Tenant: "acme", Match: func(ev *eventsv1.RuntimeEvent) bool {
			return !strings.HasSuffix(ev.GetRuntimeWarning().GetCode(), "7") // some the filter skips
		}}, at, fanout.Options{Buffer: 1 + cut%3})
		if err != nil {
			t.Fatal(err)
		}
		c := sub.Cursor()
		recs, err := sub.Next(ctx, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			// Idle: the writers are done and everything was kept.
			at = sub.Cursor()
			sub.Close()
			break
		}
		for _, r := range recs[:(len(recs)+1)/2] {
			kept = append(kept, r.Event.Sequence)
			c.Advance(r.Event.Sequence)
		}
		sub.Close()
		if ct, err := fanout.ParseCursor(c.String()); err != nil || fmt.Sprint([]uint64(ct)) != fmt.Sprint([]uint64(c)) {
			t.Fatalf("cursor %v as %q reads back as %v %v", c, c.String(), ct, err)
		}
		at = c
	}
	wg.Wait()
	// What came after the last idle cut.
	sub, err := f.hub.SubscribeAt(ctx, fanout.Filter{Tenant: "acme", Match: func(ev *eventsv1.RuntimeEvent) bool {
		return !strings.HasSuffix(ev.GetRuntimeWarning().GetCode(), "7")
	}}, at, fanout.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	all := tenantEvents(t, f.log, "acme")
	want := map[int][]uint64{}
	for k, seqs := range all {
		want[k] = append(want[k], seqs...)
	}
	// The filter's skips: read the codes back.
	skip := map[uint64]bool{}
	for _, view := range f.log.Views() {
		if _, err := view.Read(ctx, []string{view.Subjects.Tenant("acme")}, eventlog.FromStart, func(r *eventlog.Record) error {
			skip[r.Event.Sequence] = strings.HasSuffix(r.Event.GetRuntimeWarning().GetCode(), "7")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for k := range want {
		want[k] = slices.DeleteFunc(want[k], func(s uint64) bool { return skip[s] })
		n += len(want[k])
	}
	rest, err := readUntil(ctx, sub, n-len(kept))
	if err != nil {
		t.Fatal(err)
	}
	kept = append(kept, rest...)
	if g := byPartition(f.log, kept); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Fatalf("kept %d events over the cuts, want %d\n got %v\nwant %v", len(kept), n, g, want)
	}
}

// A cursor's text form reads back; anything else, or one of another
// partition count, is refused. A tenant-wide subscription of a partitioned
// log has no single position to start from.
func TestCursorTextAndRefusals(t *testing.T) {
	for _, c := range []fanout.Cursor{{0}, {1}, {0, 0, 0}, {1 << 40, 3, 0}} {
		if got, err := fanout.ParseCursor(c.String()); err != nil || fmt.Sprint([]uint64(got)) != fmt.Sprint([]uint64(c)) {
			t.Fatalf("%v as %q: %v %v", c, c.String(), got, err)
		}
	}
	for _, s := range []string{"", "v1:", "v2:AQ", "AQID", "v1:!!", "v1:gA", "v1:" + strings.Repeat("A", 2000)} {
		if c, err := fanout.ParseCursor(s); err == nil {
			t.Fatalf("%q parsed as %v", s, c)
		}
	}
	f := setupPartitions(t, fanout.Config{}, 3)
	ctx := testkit.Context(t)
	if _, err := f.hub.Subscribe(ctx, fanout.Filter{Tenant: "acme"}, 7, fanout.Options{}); err == nil {
		t.Fatal("a tenant-wide subscription from one position of a partitioned log was accepted")
	}
	if _, err := f.hub.SubscribeAt(ctx, fanout.Filter{Tenant: "acme"}, fanout.Cursor{0}, fanout.Options{}); err == nil {
		t.Fatal("a cursor of one partition on a log of three was accepted")
	}
}
