package readmodel

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// foldBefore is a store whose fold applies a batch just before its n-th
// read (0-based): a projector that moves between two reads of one answer.
type foldBefore struct {
	projection.Store
	n, reads int
	batch    projection.Batch
	applied  bool
}

func (s *foldBefore) read(ctx context.Context) error {
	if s.reads == s.n {
		if _, err := s.Store.Apply(ctx, s.batch); err != nil {
			return err
		}
		s.applied = true
	}
	s.reads++
	return nil
}

func (s *foldBefore) GetMany(ctx context.Context, keys ...string) ([][]byte, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.GetMany(ctx, keys...)
}

func (s *foldBefore) Range(ctx context.Context, index string, q projection.RangeQuery) ([]projection.IndexEntry, error) {
	if err := s.read(ctx); err != nil {
		return nil, err
	}
	return s.Store.Range(ctx, index, q)
}

func (s *foldBefore) Count(ctx context.Context, index string) (int64, error) {
	if err := s.read(ctx); err != nil {
		return 0, err
	}
	return s.Store.Count(ctx, index)
}

// TestRecentDeliveriesNeverListAnEndedDeliveryAtAnEarlierAttempt: the fold
// applies a delivery's last outcome between any two reads of
// RecentDeliveries (a webhook's list), in turn; a delivery the counts call
// delivered is never listed at its earlier, retrying attempt.
func TestRecentDeliveriesNeverListAnEndedDeliveryAtAnEarlierAttempt(t *testing.T) {
	ctx := context.Background()
	const tenant, webhook = "acme", "wh_1"
	at := timestamppb.New(time.Unix(1_800_000_000, 0))
	batch := func(seq uint64, attempt uint32, outcome string, status int32) projection.Batch {
		t.Helper()
		ev := domain.WebhookDelivery(webhook, "s1", &eventsv1.WebhookDeliveryFact{DeliveryId: "msg_1", EventId: "evt_1",
			EventType: "action.required", Attempt: attempt, Outcome: outcome, StatusCode: status})
		ev.TenantId, ev.Timestamp = tenant, at
		b := projection.Batch{Projection: WebhooksName, Sequence: seq}
		if err := projectDelivery(ctx, projection.NewMemory(), ev, ev.GetChannelMessage().GetDelivery(), OutboxIndex(0), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	for n := 0; ; n++ {
		mem := projection.NewMemory()
		if _, err := mem.Apply(ctx, batch(1, 2, domain.DeliveryRetrying, 503)); err != nil {
			t.Fatal(err)
		}
		s := &foldBefore{Store: mem, n: n, batch: batch(2, 3, domain.DeliveryDelivered, 204)}
		recent, delivered, failed, err := RecentDeliveries(ctx, s, tenant, webhook, 10)
		if err != nil {
			t.Fatal(err)
		}
		if !s.applied {
			break // n is past the last read
		}
		if delivered+failed != 1 {
			continue // the counts were read before the fold: either outcome may be listed
		}
		if len(recent) != 1 || recent[0].GetOutcome() != domain.DeliveryDelivered || recent[0].GetAttempts() != 3 {
			t.Errorf("fold before read %d: %d delivered, listed %v; want the delivery listed delivered at its third attempt", n, delivered, recent)
		}
	}
}
