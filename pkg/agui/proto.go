package agui

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// protoMediaType is AG-UI's binary encoding: each event an ag_ui.Event
// protobuf message behind its length as 4 bytes, big-endian.
const protoMediaType = "application/vnd.ag-ui.event+proto"

// The wire numbers of AG-UI's events.proto (package ag_ui, protocol 1.0):
// the Event envelope's arm and the EventType value of each event this
// handler sends. The messages are written with protowire, field by field,
// rather than generated from a copy of that file: only these events are
// ever sent, and the numbers below are the whole contract.
var protoArms = map[string]struct {
	arm protowire.Number
	typ uint64
}{
	TextMessageStart:        {1, 0},
	TextMessageContent:      {2, 1},
	TextMessageEnd:          {3, 2},
	ToolCallStart:           {4, 3},
	ToolCallArgs:            {5, 4},
	ToolCallEnd:             {6, 5},
	StateSnapshot:           {7, 6},
	StateDelta:              {8, 7},
	Custom:                  {11, 10},
	RunStarted:              {12, 11},
	RunFinished:             {13, 12},
	RunError:                {14, 13},
	StepStarted:             {15, 14},
	StepFinished:            {16, 15},
	ToolCallResult:          {22, 21},
	ReasoningStart:          {25, 24},
	ReasoningMessageStart:   {26, 25},
	ReasoningMessageContent: {27, 26},
	ReasoningMessageEnd:     {28, 27},
	ReasoningEnd:            {30, 29},
}

// patchOps are JsonPatchOperationType's values.
var patchOps = map[string]uint64{"add": 0, "remove": 1, "replace": 2, "move": 3, "copy": 4, "test": 5}

type protoEncoder struct{}

func (protoEncoder) contentType() string { return protoMediaType }

func (protoEncoder) event(w io.Writer, e Event, _ string) error {
	msg, err := encodeProto(e)
	if err != nil {
		return err
	}
	frame := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(msg)), uint32(len(msg)))
	_, err = w.Write(append(frame, msg...))
	return err
}

// keepalive sends nothing: the binary encoding has no comment frame, and
// an empty frame would be an event.
func (protoEncoder) keepalive(io.Writer) error { return nil }

// encodeProto writes e as an ag_ui.Event.
func encodeProto(e Event) ([]byte, error) {
	arm, ok := protoArms[e.Type]
	if !ok {
		return nil, fmt.Errorf("agui: no protobuf arm for %s", e.Type)
	}
	var base []byte
	if arm.typ != 0 {
		base = protowire.AppendTag(base, 1, protowire.VarintType)
		base = protowire.AppendVarint(base, arm.typ)
	}
	if e.Timestamp != 0 {
		base = protowire.AppendTag(base, 2, protowire.VarintType)
		base = protowire.AppendVarint(base, uint64(e.Timestamp))
	}
	if e.Metadata != nil {
		st, err := toStruct(e.Metadata)
		if err != nil {
			return nil, err
		}
		if base, err = appendMessage(base, 4, st); err != nil {
			return nil, err
		}
	}
	body := appendBytes(nil, 1, base)
	var err error
	str := func(num protowire.Number, s string) {
		if s != "" {
			body = appendBytes(body, num, []byte(s))
		}
	}
	value := func(num protowire.Number, v any) {
		if v == nil || err != nil {
			return
		}
		var pv *structpb.Value
		if pv, err = toValue(v); err == nil {
			body, err = appendMessage(body, num, pv)
		}
	}
	delta, _ := e.Delta.(string)
	switch e.Type {
	case TextMessageStart:
		str(2, e.MessageID)
		str(3, e.Role)
	case TextMessageContent:
		str(2, e.MessageID)
		str(3, delta)
	case TextMessageEnd:
		str(2, e.MessageID)
	case ToolCallStart:
		str(2, e.ToolCallID)
		str(3, e.ToolCallName)
		str(4, e.ParentMessageID)
	case ToolCallArgs:
		str(2, e.ToolCallID)
		str(3, delta)
	case ToolCallEnd:
		str(2, e.ToolCallID)
	case ToolCallResult:
		str(3, e.MessageID)
		str(4, e.ToolCallID)
		if e.Content != nil {
			// Present even when empty: the content is required.
			body = appendBytes(body, 5, []byte(*e.Content))
		}
		str(6, e.Role)
	case StateSnapshot:
		value(2, e.Snapshot)
	case StateDelta:
		ops, _ := e.Delta.([]PatchOp)
		for _, op := range ops {
			var o []byte
			o = protowire.AppendTag(o, 1, protowire.VarintType)
			o = protowire.AppendVarint(o, patchOps[op.Op])
			o = appendBytes(o, 2, []byte(op.Path))
			if op.Value != nil {
				var v any
				if err := json.Unmarshal(op.Value, &v); err != nil {
					return nil, err
				}
				pv, err := toValue(v)
				if err != nil {
					return nil, err
				}
				if o, err = appendMessage(o, 4, pv); err != nil {
					return nil, err
				}
			}
			body = appendBytes(body, 2, o)
		}
	case Custom:
		str(2, e.Name)
		value(3, e.Value)
	case RunStarted:
		str(2, e.ThreadID)
		str(3, e.RunID)
	case RunFinished:
		str(2, e.ThreadID)
		str(3, e.RunID)
		value(4, e.Result)
		if e.Outcome != nil {
			str(5, e.Outcome.Type)
			for _, in := range e.Outcome.Interrupts {
				b, ierr := encodeInterrupt(in)
				if ierr != nil {
					return nil, ierr
				}
				body = appendBytes(body, 6, b)
			}
			for _, id := range e.Outcome.PendingToolCallIDs {
				body = appendBytes(body, 8, []byte(id))
			}
		}
	case RunError:
		str(2, e.Code)
		str(3, e.Message)
	case StepStarted, StepFinished:
		str(2, e.StepName)
	case ReasoningStart, ReasoningMessageEnd, ReasoningEnd:
		str(3, e.MessageID)
	case ReasoningMessageStart:
		str(3, e.MessageID)
		str(4, e.Role)
	case ReasoningMessageContent:
		str(3, e.MessageID)
		str(4, delta)
	}
	if err != nil {
		return nil, err
	}
	return appendBytes(nil, arm.arm, body), nil
}

func encodeInterrupt(in Interrupt) ([]byte, error) {
	var b []byte
	for _, f := range []struct {
		num protowire.Number
		s   string
	}{{1, in.ID}, {2, in.Reason}, {3, in.Message}, {4, in.ToolCallID}, {6, in.ExpiresAt}} {
		if f.s != "" {
			b = appendBytes(b, f.num, []byte(f.s))
		}
	}
	for _, f := range []struct {
		num protowire.Number
		v   map[string]any
	}{{5, in.ResponseSchema}, {7, in.Metadata}} {
		if f.v == nil {
			continue
		}
		pv, err := toValue(f.v)
		if err != nil {
			return nil, err
		}
		if b, err = appendMessage(b, f.num, pv); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendMessage(b []byte, num protowire.Number, m proto.Message) ([]byte, error) {
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return appendBytes(b, num, raw), nil
}

// toValue is v as a google.protobuf.Value, through its JSON (the values
// here are JSON documents: numbers become doubles, as in JSON).
func toValue(v any) (*structpb.Value, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var plain any
	if err := json.Unmarshal(raw, &plain); err != nil {
		return nil, err
	}
	return structpb.NewValue(plain)
}

func toStruct(m map[string]any) (*structpb.Struct, error) {
	v, err := toValue(m)
	if err != nil {
		return nil, err
	}
	return v.GetStructValue(), nil
}
