package agui

import (
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// fields reads a message's fields: number to the values (bytes fields as
// their bytes, varints as themselves).
func fields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			out[num] = append(out[num], v)
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			out[num] = append(out[num], v)
			b = b[m:]
		default:
			t.Fatalf("unexpected wire type %v", typ)
		}
	}
	return out
}

// An interrupt RUN_FINISHED in AG-UI's binary encoding: a length-prefixed
// ag_ui.Event whose run_finished arm (13) carries the base event (type 12,
// metadata as a Struct), the outcome and the interrupt.
func TestProtoEncodesAnInterruptedRun(t *testing.T) {
	var buf bytes.Buffer
	e := Event{Type: RunFinished, Timestamp: 1700000000000, ThreadID: "t1", RunID: "r1",
		Metadata: map[string]any{"agentruntime": map[string]any{"cursor": "turn_1.4.31.2", "sequence": uint64(31)}},
		Outcome: &Outcome{Type: "interrupt", Interrupts: []Interrupt{{ID: "perm_1", Reason: "permission", Message: "Allow?", ToolCallID: "call_1",
			ResponseSchema: map[string]any{"type": "object"}}}}}
	if err := (protoEncoder{}).event(&buf, e, ""); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	if n := binary.BigEndian.Uint32(raw); int(n) != len(raw)-4 {
		t.Fatalf("length prefix %d, message %d bytes", n, len(raw)-4)
	}
	envelope := fields(t, raw[4:])
	if len(envelope) != 1 || len(envelope[13]) != 1 {
		t.Fatalf("envelope arms %v, want run_finished (13) alone", envelope)
	}
	body := fields(t, envelope[13][0].([]byte))
	base := fields(t, body[1][0].([]byte))
	if base[1][0] != uint64(12) || base[2][0] != uint64(1700000000000) {
		t.Errorf("base event %v", base)
	}
	var meta structpb.Struct
	if err := proto.Unmarshal(base[4][0].([]byte), &meta); err != nil {
		t.Fatal(err)
	}
	if got := meta.Fields["agentruntime"].GetStructValue().Fields["cursor"].GetStringValue(); got != "turn_1.4.31.2" {
		t.Errorf("metadata cursor %q", got)
	}
	if string(body[2][0].([]byte)) != "t1" || string(body[3][0].([]byte)) != "r1" || string(body[5][0].([]byte)) != "interrupt" {
		t.Errorf("run finished %v", body)
	}
	in := fields(t, body[6][0].([]byte))
	if string(in[1][0].([]byte)) != "perm_1" || string(in[2][0].([]byte)) != "permission" || string(in[4][0].([]byte)) != "call_1" {
		t.Errorf("interrupt %v", in)
	}
}

// TEXT_MESSAGE_START is EventType 0: the base event leaves the type out,
// as proto3 does a zero, and a tool result keeps an empty content.
func TestProtoZeroTypeAndEmptyContent(t *testing.T) {
	raw, err := encodeProto(Event{Type: TextMessageStart, MessageID: "m", Role: "assistant"})
	if err != nil {
		t.Fatal(err)
	}
	body := fields(t, fields(t, raw)[1][0].([]byte))
	if len(fields(t, body[1][0].([]byte))) != 0 || string(body[2][0].([]byte)) != "m" {
		t.Errorf("text message start %v", body)
	}
	empty := ""
	raw, err = encodeProto(Event{Type: ToolCallResult, MessageID: "c-result", ToolCallID: "c", Content: &empty})
	if err != nil {
		t.Fatal(err)
	}
	body = fields(t, fields(t, raw)[22][0].([]byte))
	if len(body[5]) != 1 || len(body[5][0].([]byte)) != 0 {
		t.Errorf("tool call result %v: want an empty content present", body)
	}
	if _, err := encodeProto(Event{Type: "MESSAGES_SNAPSHOT"}); err == nil {
		t.Error("an event without an arm encoded")
	}
}
