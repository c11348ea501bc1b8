package eventlog

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
)

// Command messages and slots (docs/adr/0016-command-messages.md).
//
// A command of several events is one JetStream message: its events,
// length-delimited, with HeaderEvents saying how many. One message is
// atomic at any replica count with one publish and one acknowledgement,
// where a JetStream atomic batch on a single-replica file stream stages
// every batch in a file store of its own and syncs it.
//
// Every message of a log made this way has Slots positions: the message
// at stream sequence seq holds partition-local positions seq*Slots ..
// seq*Slots+Slots-1, and its n events take the last n of them. So the last
// event of any message is at seq*Slots+Slots-1 whatever n is: an
// aggregate's last position (LastSequence) and the log's head (Bounds)
// need no look inside a message, and positions still grow with the
// stream's sequence. A log made before command messages existed has one
// slot per message (its positions are its stream sequences, as before),
// keeps it, and writes commands as atomic batches.

// DefaultSlots is how many positions each message of a new log has: the
// most events one command message carries. A larger command is written as
// an atomic batch of one message per event.
const DefaultSlots = 64

// metaSlots is the stream metadata key recording the log's slots per
// message; a stream without it was made with one.
const metaSlots = "agentruntime.slots"

// HeaderEvents is set on a command message: how many events it carries.
// A message without it carries one, not length-delimited.
const HeaderEvents = "ar-events"

// maxCommandMessage bounds a command message's size: a larger command is
// an atomic batch (the server's default max payload is 1 MiB).
const maxCommandMessage = 512 << 10

// local is the partition-local position of the i-th of the n events of
// the message at stream sequence seq (0 for sequence 0: nothing).
func (l *Log) local(seq uint64, i, n int) uint64 {
	if seq == 0 {
		return 0
	}
	return seq*l.slots + l.slots - uint64(n) + uint64(i)
}

// lastAt is the position of the last event of the message at stream
// sequence seq of partition k.
func (l *Log) lastAt(k int, seq uint64) uint64 { return l.Position(k, l.local(seq, 0, 1)) }

// firstAt is where what is left of partition k begins when its first
// message is at stream sequence seq: the first position after the last
// slot of the message before it, so that a reader resuming right after
// the last event it got from that message has lost nothing. With nothing
// discarded (seq 1) it is the partition's first position; 0 for a
// stream that never held anything.
func (l *Log) firstAt(k int, seq uint64) uint64 {
	switch seq {
	case 0:
		return 0
	case 1:
		return l.Position(k, 1)
	}
	return l.Position(k, seq*l.slots)
}

// commandMessage is the message of a command's events, or nil when they
// cannot be one (more events than slots, or too large): the caller writes
// them as an atomic batch.
func (l *Log) commandMessage(ctx context.Context, agg Aggregate, subject string, evs []*eventsv1.RuntimeEvent) (*nats.Msg, error) {
	if len(evs) > int(l.slots) {
		return nil, nil
	}
	var data bytes.Buffer
	types := make([]string, len(evs))
	for i, ev := range evs {
		if ev == nil {
			return nil, fmt.Errorf("%w: nil event", ErrInvalid)
		}
		if err := l.stamp(ctx, agg, ev); err != nil {
			return nil, err
		}
		if _, err := protodelim.MarshalTo(&data, ev); err != nil {
			return nil, fmt.Errorf("%w: marshal: %v", ErrInvalid, err)
		}
		types[i] = ev.GetType()
	}
	if data.Len() > maxCommandMessage {
		return nil, nil
	}
	msg := l.envelope(ctx, subject, evs[0], data.Bytes())
	msg.Header[HeaderType] = []string{strings.Join(types, ",")}
	msg.Header[HeaderEvents] = []string{strconv.Itoa(len(evs))}
	return msg, nil
}

// expand decodes the events of the message at stream sequence seq of
// partition k, those at position min or later.
func (l *Log) expand(k int, seq uint64, subject string, hdr nats.Header, data []byte, min uint64) ([]*Record, error) {
	n := 1
	if v := hdr.Get(HeaderEvents); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > int(l.slots) {
			return nil, fmt.Errorf("eventlog: message at %d: %s %q", seq, HeaderEvents, v)
		}
	}
	if n == 1 {
		if pos := l.lastAt(k, seq); pos < min {
			return nil, nil
		}
		ev := &eventsv1.RuntimeEvent{}
		if err := proto.Unmarshal(data, ev); err != nil {
			return nil, fmt.Errorf("eventlog: decode event at %d: %w", seq, err)
		}
		ev.Sequence = l.lastAt(k, seq)
		return []*Record{{Event: ev, Subject: subject, Header: hdr}}, nil
	}
	r := bytes.NewReader(data)
	recs := make([]*Record, 0, n)
	for i := range n {
		ev := &eventsv1.RuntimeEvent{}
		if err := protodelim.UnmarshalFrom(r, ev); err != nil {
			return nil, fmt.Errorf("eventlog: decode event %d of %d at %d: %w", i+1, n, seq, err)
		}
		ev.Sequence = l.Position(k, l.local(seq, i, n))
		if ev.Sequence >= min {
			recs = append(recs, &Record{Event: ev, Subject: subject, Header: hdr, Pending: uint64(n - 1 - i)})
		}
	}
	return recs, nil
}
