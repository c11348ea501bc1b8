package testkit_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	testkit.Eventually(t, "the third poll", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

func TestEventuallyWithinReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	testkit.EventuallyWithin(t, time.Minute, func() string { return fmt.Sprint("polled ", n) }, func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("polled %d times, want 3", n)
	}
}

func TestContextEndsWithTheTest(t *testing.T) {
	var done <-chan struct{}
	t.Run("inner", func(t *testing.T) {
		ctx := testkit.Context(t)
		if _, ok := ctx.Deadline(); !ok {
			t.Fatal("no deadline")
		}
		done = ctx.Done()
	})
	select {
	case <-done:
	default:
		t.Fatal("the context outlived its test")
	}
}

func TestTypes(t *testing.T) {
	got := testkit.Types([]*eventsv1.RuntimeEvent{{Type: "a.b"}, {Type: "c.d"}})
	if !slices.Equal(got, []string{"a.b", "c.d"}) {
		t.Fatalf("Types = %v", got)
	}
}
