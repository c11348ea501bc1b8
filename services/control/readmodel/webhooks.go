package readmodel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/events"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/projection"
	"github.com/agentruntime/agentruntime/services/control/domain"
)

// WebhooksName is the checkpoint of the webhooks projection: the tenants'
// live subscriptions, the deliveries still owed (the outbox the sender
// works through) and the recent delivery outcomes. It is its own
// projection, not part of the thread read model, because it reads across
// partitions (a tenant's subscriptions are facts of its session-less
// partition, matched against events of every partition) and the writer's
// fold must not.
const WebhooksName = "control.webhooks"

// WebhooksFoldVersion is the webhooks projection's fold version (projection.Fold):
// bump it with any change to what it stores or how it folds an event; a
// process of a new fold version rebuilds the read models beside the old
// ones (docs/upgrading.md).
//
// 2: an A2A push notification config (a subscription with a2a_push) owes
// the delivery of its own creation and matches its turn's events only; a
// process of version 1 would deliver it every event of its session.
//
// 3: A2A push notification configs are kept per task (A2APushKey), not in
// the tenant's index, and listed for collection (A2APushCollectIndex).
const WebhooksFoldVersion = 3

// WebhookKey holds a subscription's channel.connected, or its
// channel.disconnected once deleted (the control fold: the writer decides
// on it).
func WebhookKey(tenant, id string) string { return "whk:" + tenant + ":" + id }

// WebhookIndexKey holds a tenant's live subscriptions (their
// channel.connected facts, delimited protos) but its A2A push notification
// configs: one read per event matches them all. Only the tenant's
// session-less partition writes it.
func WebhookIndexKey(tenant string) string { return "whidx:" + tenant }

// A2APushKey holds the live A2A push notification configs of a task (a
// turn), as WebhookIndexKey does a tenant's other subscriptions: a
// tenant may have a config on every task it runs, and an event is matched
// against its own task's only. Only the tenant's session-less partition
// writes it.
func A2APushKey(tenant, turn string) string { return "whpush:" + tenant + ":" + turn }

// a2aPushTaskKey names the task of a live A2A push notification config,
// for its deletion's fold.
func a2aPushTaskKey(tenant, id string) string { return "whpusht:" + tenant + ":" + id }

// A2APushCollectIndex lists the live A2A push notification configs of
// the tenants whose session-less partition is k, scored by when each was
// made (unix ms); members are "<tenant>|<webhook id>". The sender of
// partition k collects those whose task ended long enough ago
// (app.Webhooks.A2ARetention).
func A2APushCollectIndex(k int) string { return "whgc:p" + strconv.Itoa(k) }

// A2APushCollectMember is a member of A2APushCollectIndex.
func A2APushCollectMember(tenant, id string) string { return tenant + "|" + id }

// OutboxIndex lists the deliveries owed of partition k of the log, across
// tenants, scored by when the next attempt is due (unix ms); members are
// OutboxMember. One per partition: the sender of a partition reads only
// its own.
func OutboxIndex(k int) string { return "whq:p" + strconv.Itoa(k) }

// OutboxMember is "<tenant>|<session>|<delivery id>": the sender of a
// partition tells its own by the session.
func OutboxMember(tenant, session, delivery string) string {
	return tenant + "|" + session + "|" + delivery
}

// ParseOutboxMember splits an OutboxMember.
func ParseOutboxMember(m string) (tenant, session, delivery string, ok bool) {
	parts := strings.Split(m, "|")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// OutboxKey holds a delivery owed (an Owed, JSON).
func OutboxKey(tenant, delivery string) string { return "whq:" + tenant + ":" + delivery }

// DeliveryKey holds a delivery's latest outcome (controlv1.WebhookDelivery).
func DeliveryKey(tenant, delivery string) string { return "whd:" + tenant + ":" + delivery }

// DeliveriesIndex lists a subscription's deliveries by the time of their
// latest outcome; DeliveredIndex and FailedIndex those that ended so.
// Each member is one delivery, written by its event's partition only.
func DeliveriesIndex(tenant, webhook string) string { return "whds:" + tenant + ":" + webhook }
func DeliveredIndex(tenant, webhook string) string  { return "whok:" + tenant + ":" + webhook }
func FailedIndex(tenant, webhook string) string     { return "whko:" + tenant + ":" + webhook }

// Owed is a delivery the sender owes: the event, to which subscription,
// how many attempts were made and when the next is due.
type Owed struct {
	Tenant   string `json:"tenant"`
	Session  string `json:"session"`
	Webhook  string `json:"webhook"`
	Delivery string `json:"delivery"`
	// Event is the event to deliver (a marshaled RuntimeEvent).
	Event    []byte `json:"event"`
	Attempts uint32 `json:"attempts"`
	// Due is when the next attempt is due (unix ms).
	Due int64 `json:"due"`
}

// Webhooks is the webhooks projection. Subjects place each owed delivery
// in its event's partition's outbox.
//
// Live events are matched against the subscriptions the read model holds
// (WebhookIndexKey). An event from before this process started is being
// replayed (a restart's catch-up, a rebuild from zero): on a partitioned
// log the tenant's subscriptions are folded by another partition,
// concurrently and perhaps not yet this far, so it is matched instead
// against the subscriptions the log holds, as they were at the event's
// time (made before it, not deleted before it), read once per tenant and
// kept while they cover the events replayed. Built with NewWebhooks; the
// zero value matches live only.
type Webhooks struct {
	Subjects eventlog.Subjects
	log      *eventlog.Log
	started  time.Time
	replay   *replaySubscriptions
}

// appendSlack bounds how long after its timestamp a fact is appended: a
// read of the log this long after an event's time holds every fact
// stamped before it.
const appendSlack = 5 * time.Second

// NewWebhooks is the webhooks projection of log, in a process starting
// now.
func NewWebhooks(log *eventlog.Log) Webhooks {
	return Webhooks{Subjects: log.Subjects, log: log, started: time.Now(), replay: &replaySubscriptions{byTenant: map[string]replayEntry{}}}
}

type replaySubscriptions struct {
	mu       sync.Mutex
	byTenant map[string]replayEntry
}

type replayEntry struct {
	// facts are the channel.connected and .disconnected of the tenant's
	// webhooks but its A2A push notification configs, whose facts are
	// byTurn, by their task: an event is matched against its own task's
	// only, however many tasks had configs.
	facts  []*eventsv1.RuntimeEvent
	byTurn map[string][]*eventsv1.RuntimeEvent
	readAt time.Time
}

// subscriptionsAt are the tenant's subscriptions that may want ev.
func (w Webhooks) subscriptionsAt(ctx context.Context, store projection.Store, ev *eventsv1.RuntimeEvent) ([]*eventsv1.RuntimeEvent, error) {
	at := ev.GetTimestamp().AsTime()
	if w.log == nil || !at.Before(w.started) {
		turn := ""
		if slices.Contains(domain.A2APushEventTypes, ev.GetType()) {
			turn = ev.GetTurnId()
		}
		return liveSubscriptions(ctx, store, ev.GetTenantId(), turn)
	}
	tenant := ev.GetTenantId()
	w.replay.mu.Lock()
	e, ok := w.replay.byTenant[tenant]
	w.replay.mu.Unlock()
	// What was read covers the event when it was read well after it: any
	// subscription fact stamped before the event was appended by then.
	if !ok || !e.readAt.After(at.Add(appendSlack)) {
		e = replayEntry{byTurn: map[string][]*eventsv1.RuntimeEvent{}, readAt: time.Now()}
		turnOf := map[string]string{} // A2A config -> its task
		if _, err := w.log.Of(tenant, "").Read(ctx, []string{WebhookSubjects(w.Subjects, tenant)}, eventlog.FromStart, func(rec *eventlog.Record) error {
			f := rec.Event
			if domain.WebhookFact(f) == nil || f.GetType() == events.TypeChannelMessage {
				return nil
			}
			if a := f.GetChannelConnected().GetWebhook().GetA2APush(); a != nil {
				turnOf[f.GetChannelId()] = a.GetTurnId()
			}
			if turn, ok := turnOf[f.GetChannelId()]; ok {
				e.byTurn[turn] = append(e.byTurn[turn], f)
			} else {
				e.facts = append(e.facts, f)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		w.replay.mu.Lock()
		w.replay.byTenant[tenant] = e
		w.replay.mu.Unlock()
	}
	live := liveAt(nil, e.facts, at)
	if slices.Contains(domain.A2APushEventTypes, ev.GetType()) && ev.GetTurnId() != "" {
		live = liveAt(live, e.byTurn[ev.GetTurnId()], at)
	}
	return live, nil
}

// liveAt appends to live the subscriptions that facts (channel.connected
// and .disconnected, in log order) leave live at time at.
func liveAt(live, facts []*eventsv1.RuntimeEvent, at time.Time) []*eventsv1.RuntimeEvent {
	start := len(live)
	for _, f := range facts {
		if f.GetTimestamp().AsTime().After(at) {
			continue
		}
		switch f.GetType() {
		case events.TypeChannelConnected:
			live = append(live, f)
		case events.TypeChannelDisconnected:
			mine := live[start:]
			live = append(live[:start], slices.DeleteFunc(mine, func(s *eventsv1.RuntimeEvent) bool { return s.GetChannelId() == f.GetChannelId() })...)
		}
	}
	return live
}

// webhookKind is the subject kind of a webhook's facts.
const webhookKind = "webhook"

// WebhookSubjects is the subject filter of a tenant's subscriptions'
// facts (creations, deletions) in its session-less partition.
func WebhookSubjects(subjects eventlog.Subjects, tenant string) string {
	one := subjects.Aggregate(eventlog.Aggregate{Tenant: tenant, Session: eventlog.NoSession, Kind: webhookKind, ID: "x"})
	return strings.TrimSuffix(one, "x") + "*"
}

func (w Webhooks) outbox(tenant, session string) string {
	if session == "" {
		session = eventlog.NoSession
	}
	return OutboxIndex(w.Subjects.PartitionOf(tenant, session))
}

// Name implements projector.Projection.
func (Webhooks) Name() string { return WebhooksName }

// FoldVersion is the projection's fold version (projection.Fold).
func (Webhooks) FoldVersion() int { return WebhooksFoldVersion }

// Filters implements projector.Projection: every event may be one a
// subscription delivers.
func (Webhooks) Filters() []string { return nil }

// Project implements projector.Projection.
func (w Webhooks) Project(ctx context.Context, store projection.Store, rec *eventlog.Record) (projection.Batch, error) {
	ev := rec.Event
	b := projection.Batch{Projection: WebhooksName, Sequence: ev.GetSequence()}
	tenant := ev.GetTenantId()
	if f := domain.WebhookFact(ev); f != nil {
		var err error
		switch {
		case f.GetDelivery() != nil:
			err = projectDelivery(ctx, store, ev, f.GetDelivery(), w.outbox(tenant, ev.GetSessionId()), &b)
		case ev.GetType() == events.TypeChannelConnected || ev.GetType() == events.TypeChannelDisconnected:
			err = w.projectSubscription(ctx, store, ev, &b)
			if err == nil && ev.GetChannelConnected().GetWebhook().GetA2APush() != nil {
				// An A2A push notification config's receiver gets its task
				// as it is when the config is made (it may have changed, or
				// ended, before): the creation is delivered too.
				err = w.owe(ev, ev, nil, &b)
			}
		}
		return b, err
	}
	subs, err := w.subscriptionsAt(ctx, store, ev)
	if err != nil || len(subs) == 0 {
		return b, err
	}
	var raw []byte
	for _, sub := range subs {
		if !domain.WebhookWants(sub, ev) {
			continue
		}
		if raw == nil {
			if raw, err = (proto.MarshalOptions{Deterministic: true}).Marshal(ev); err != nil {
				return b, err
			}
		}
		if err := w.owe(sub, ev, raw, &b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// owe adds the delivery of ev (raw: ev marshaled, nil: not yet) to
// subscription sub to the outbox.
func (w Webhooks) owe(sub, ev *eventsv1.RuntimeEvent, raw []byte, b *projection.Batch) error {
	if raw == nil {
		var err error
		if raw, err = (proto.MarshalOptions{Deterministic: true}).Marshal(ev); err != nil {
			return err
		}
	}
	tenant := ev.GetTenantId()
	id := domain.DeliveryID(sub.GetChannelId(), ev.GetEventId())
	due := Millis(ev)
	owed, err := json.Marshal(Owed{Tenant: tenant, Session: ev.GetSessionId(), Webhook: sub.GetChannelId(), Delivery: id, Event: raw, Due: int64(due)})
	if err != nil {
		return err
	}
	b.Puts = append(b.Puts, projection.KV{Key: OutboxKey(tenant, id), Value: owed})
	b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: w.outbox(tenant, ev.GetSessionId()), Member: OutboxMember(tenant, ev.GetSessionId(), id), Score: due})
	return nil
}

// projectSubscription folds a subscription's creation or deletion into
// the list it is on: the tenant's, or its task's for an A2A push
// notification config (which is also listed for collection).
func (w Webhooks) projectSubscription(ctx context.Context, store projection.Store, ev *eventsv1.RuntimeEvent, b *projection.Batch) error {
	tenant, id := ev.GetTenantId(), ev.GetChannelId()
	key, turn := WebhookIndexKey(tenant), ""
	if a := ev.GetChannelConnected().GetWebhook().GetA2APush(); a != nil {
		turn = a.GetTurnId()
	} else if ev.GetType() == events.TypeChannelDisconnected {
		raw, err := store.Get(ctx, a2aPushTaskKey(tenant, id))
		if err != nil && !errors.Is(err, projection.ErrNotFound) {
			return err
		}
		turn = string(raw)
	}
	if turn != "" {
		key = A2APushKey(tenant, turn)
		collect := projection.IndexEntry{Index: A2APushCollectIndex(w.Subjects.PartitionOf(tenant, eventlog.NoSession)),
			Member: A2APushCollectMember(tenant, id), Score: Millis(ev)}
		if ev.GetType() == events.TypeChannelConnected {
			b.Puts = append(b.Puts, projection.KV{Key: a2aPushTaskKey(tenant, id), Value: []byte(turn)})
			b.IndexAdds = append(b.IndexAdds, collect)
		} else {
			b.Deletes = append(b.Deletes, a2aPushTaskKey(tenant, id))
			b.IndexRemoves = append(b.IndexRemoves, collect)
		}
	}
	subs, err := subscriptionsOf(ctx, store, key)
	if err != nil {
		return err
	}
	subs = slices.DeleteFunc(subs, func(s *eventsv1.RuntimeEvent) bool { return s.GetChannelId() == id })
	if ev.GetType() == events.TypeChannelConnected {
		subs = append(subs, ev)
	}
	if len(subs) == 0 && turn != "" {
		b.Deletes = append(b.Deletes, key)
		return nil
	}
	var buf bytes.Buffer
	for _, s := range subs {
		if _, err := protodelim.MarshalTo(&buf, s); err != nil {
			return err
		}
	}
	b.Puts = append(b.Puts, projection.KV{Key: key, Value: buf.Bytes()})
	return nil
}

// projectDelivery folds one attempt's outcome: a retry moves the owed
// delivery to its next due time, an end removes it; the outcome is the
// delivery's latest.
func projectDelivery(ctx context.Context, store projection.Store, ev *eventsv1.RuntimeEvent, f *eventsv1.WebhookDeliveryFact, outbox string, b *projection.Batch) error {
	tenant, id, webhook := ev.GetTenantId(), f.GetDeliveryId(), ev.GetChannelId()
	member := OutboxMember(tenant, ev.GetSessionId(), id)
	if f.GetOutcome() == domain.DeliveryRetrying {
		owed, ok, err := LoadOwed(ctx, store, tenant, id)
		if err != nil {
			return err
		}
		if ok && f.GetAttempt() >= owed.Attempts {
			owed.Attempts, owed.Due = f.GetAttempt(), f.GetNextAttemptAt().AsTime().UnixMilli()
			raw, err := json.Marshal(owed)
			if err != nil {
				return err
			}
			b.Puts = append(b.Puts, projection.KV{Key: OutboxKey(tenant, id), Value: raw})
			b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: outbox, Member: member, Score: float64(owed.Due)})
		}
	} else {
		b.Deletes = append(b.Deletes, OutboxKey(tenant, id))
		b.IndexRemoves = append(b.IndexRemoves, projection.IndexEntry{Index: outbox, Member: member})
	}
	d := &controlv1.WebhookDelivery{DeliveryId: id, EventId: f.GetEventId(), EventType: f.GetEventType(), SessionId: ev.GetSessionId(),
		Outcome: f.GetOutcome(), Attempts: f.GetAttempt(), StatusCode: f.GetStatusCode(), Error: f.GetError(), At: ev.GetTimestamp()}
	raw, err := proto.Marshal(d)
	if err != nil {
		return err
	}
	b.Puts = append(b.Puts, projection.KV{Key: DeliveryKey(tenant, id), Value: raw})
	b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: DeliveriesIndex(tenant, webhook), Member: id, Score: Millis(ev)})
	switch f.GetOutcome() {
	case domain.DeliveryDelivered:
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: DeliveredIndex(tenant, webhook), Member: id, Score: Millis(ev)})
	case domain.DeliveryFailed:
		b.IndexAdds = append(b.IndexAdds, projection.IndexEntry{Index: FailedIndex(tenant, webhook), Member: id, Score: Millis(ev)})
	}
	return nil
}

// Subscriptions are a tenant's live subscriptions (their channel.connected
// facts), oldest first, but its A2A push notification configs.
func Subscriptions(ctx context.Context, store projection.Store, tenant string) ([]*eventsv1.RuntimeEvent, error) {
	return subscriptionsOf(ctx, store, WebhookIndexKey(tenant))
}

// A2APushConfigs are the live A2A push notification configs of a task,
// oldest first.
func A2APushConfigs(ctx context.Context, store projection.Store, tenant, turn string) ([]*eventsv1.RuntimeEvent, error) {
	return subscriptionsOf(ctx, store, A2APushKey(tenant, turn))
}

// liveSubscriptions are the tenant's subscriptions and, with a turn, that
// task's A2A push notification configs: one read.
func liveSubscriptions(ctx context.Context, store projection.Store, tenant, turn string) ([]*eventsv1.RuntimeEvent, error) {
	if turn == "" {
		return Subscriptions(ctx, store, tenant)
	}
	key, pushKey := WebhookIndexKey(tenant), A2APushKey(tenant, turn)
	raws, err := store.GetMany(ctx, key, pushKey)
	if err != nil {
		return nil, err
	}
	subs, err := parseSubscriptions(key, raws[0])
	if err != nil {
		return nil, err
	}
	push, err := parseSubscriptions(pushKey, raws[1])
	return append(subs, push...), err
}

func subscriptionsOf(ctx context.Context, store projection.Store, key string) ([]*eventsv1.RuntimeEvent, error) {
	raw, err := store.Get(ctx, key)
	if errors.Is(err, projection.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseSubscriptions(key, raw)
}

func parseSubscriptions(key string, raw []byte) ([]*eventsv1.RuntimeEvent, error) {
	var out []*eventsv1.RuntimeEvent
	r := bufio.NewReader(bytes.NewReader(raw))
	for {
		ev := &eventsv1.RuntimeEvent{}
		if err := protodelim.UnmarshalFrom(r, ev); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("webhooks %s: %w", key, err)
		}
		out = append(out, ev)
	}
}

// A2APushCollectable lists up to limit A2A push notification configs of
// partition k made at or before madeBy (unix ms), oldest first, from the
// offset-th.
func A2APushCollectable(ctx context.Context, store projection.Store, k int, madeBy, offset, limit int64) ([]projection.IndexEntry, error) {
	hi := float64(madeBy)
	return store.Range(ctx, A2APushCollectIndex(k), projection.RangeQuery{Max: &hi, Offset: offset, Limit: limit})
}

// ParseA2APushCollectMember splits an A2APushCollectMember.
func ParseA2APushCollectMember(m string) (tenant, id string, ok bool) {
	return strings.Cut(m, "|")
}

// Subscription is a subscription's channel.connected as the control fold
// holds it; live is false once it was deleted.
func Subscription(ctx context.Context, store projection.Store, tenant, id string) (ev *eventsv1.RuntimeEvent, live, found bool, err error) {
	ev, found, err = get(ctx, store, WebhookKey(tenant, id), &eventsv1.RuntimeEvent{})
	return ev, found && ev.GetType() == events.TypeChannelConnected, found, err
}

// webhook folds a subscription's own facts into WebhookKey (the control
// fold, for the writer).
func (t *tx) webhook() {
	ev := t.ev
	if ev.GetType() == events.TypeChannelMessage || ev.GetSessionId() != "" {
		return // deliveries are the webhooks projection's
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		t.err = err
		return
	}
	t.puts[WebhookKey(t.tenant(), ev.GetChannelId())] = raw
}

// LoadOwed reads an owed delivery.
func LoadOwed(ctx context.Context, store projection.Store, tenant, delivery string) (Owed, bool, error) {
	raw, err := store.Get(ctx, OutboxKey(tenant, delivery))
	if errors.Is(err, projection.ErrNotFound) {
		return Owed{}, false, nil
	}
	if err != nil {
		return Owed{}, false, err
	}
	var o Owed
	if err := json.Unmarshal(raw, &o); err != nil {
		return Owed{}, false, fmt.Errorf("owed delivery %s: %w", delivery, err)
	}
	return o, true, nil
}

// DueOutbox lists up to limit owed deliveries of partition k due at
// nowMillis, oldest first.
func DueOutbox(ctx context.Context, store projection.Store, k int, nowMillis int64, limit int64) ([]projection.IndexEntry, error) {
	hi := float64(nowMillis)
	return store.Range(ctx, OutboxIndex(k), projection.RangeQuery{Max: &hi, Limit: limit})
}

// RecentDeliveries are a subscription's latest delivery outcomes, newest
// first, and how many deliveries succeeded and failed in all. The counts
// are read first: the fold writes an outcome and its count in one batch,
// so the outcomes read after them are at least as new, and a delivery the
// counts call ended is never listed at an earlier attempt (the fold may
// apply a batch between the reads).
func RecentDeliveries(ctx context.Context, store projection.Store, tenant, webhook string, limit int64) (recent []*controlv1.WebhookDelivery, delivered, failed uint64, err error) {
	ok, err := store.Count(ctx, DeliveredIndex(tenant, webhook))
	if err != nil {
		return nil, 0, 0, err
	}
	ko, err := store.Count(ctx, FailedIndex(tenant, webhook))
	if err != nil {
		return nil, 0, 0, err
	}
	entries, err := store.Range(ctx, DeliveriesIndex(tenant, webhook), projection.RangeQuery{Reverse: true, Limit: limit})
	if err != nil {
		return nil, 0, 0, err
	}
	keys := make([]string, len(entries))
	for i, e := range entries {
		keys[i] = DeliveryKey(tenant, e.Member)
	}
	if len(keys) > 0 {
		raws, err := store.GetMany(ctx, keys...)
		if err != nil {
			return nil, 0, 0, err
		}
		for _, raw := range raws {
			if raw == nil {
				continue
			}
			d := &controlv1.WebhookDelivery{}
			if err := proto.Unmarshal(raw, d); err != nil {
				return nil, 0, 0, err
			}
			recent = append(recent, d)
		}
	}
	return recent, uint64(ok), uint64(ko), nil
}
