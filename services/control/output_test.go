package control_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

func (h *harness) readAll(ctx context.Context, uri string, page int32) []byte {
	h.t.Helper()
	var out []byte
	for off := int64(0); ; {
		r, err := h.client.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: uri, Offset: off, Limit: page})
		if err != nil {
			h.t.Fatalf("ReadOutput at %d: %v", off, err)
		}
		out = append(out, r.GetData()...)
		if r.GetNextOffset() >= r.GetSizeBytes() {
			sum := sha256.Sum256(out)
			if hex.EncodeToString(sum[:]) != r.GetSha256() || int64(len(out)) != r.GetSizeBytes() {
				h.t.Fatalf("reassembled %d bytes do not match size %d / sha %s", len(out), r.GetSizeBytes(), r.GetSha256())
			}
			return out
		}
		off = r.GetNextOffset()
	}
}

// A worker stores a large tool output for its turn; the tenant reads it
// back in pages; another tenant learns nothing.
func TestStoreAndReadOutput(t *testing.T) {
	h := newHarness(t)
	ctx := acme(t)
	sub := h.submit(ctx, "s1", "th1")
	big := bytes.Repeat([]byte("line of output\n"), 10_000)
	st, err := h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId, ToolCallId: "call_1", Content: big, Truncated: true})
	if err != nil {
		t.Fatal(err)
	}
	ref := st.GetOutput()
	if ref.GetSizeBytes() != int64(len(big)) || !ref.GetTruncated() || ref.GetOwner() != "tool:call_1" || !strings.HasPrefix(ref.GetPreview(), "line of output") ||
		!strings.Contains(ref.GetUri(), "/output/acme/s1/"+sub.Turn.TurnId+"/") {
		t.Fatalf("ref = %v", ref)
	}
	// Content addressed: the same bytes again are the same object.
	again, err := h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId, ToolCallId: "call_1", Content: big})
	if err != nil || again.GetOutput().GetUri() != ref.GetUri() {
		t.Fatalf("second store = %v, %v", again, err)
	}
	if got := h.readAll(ctx, ref.GetUri(), 40_000); !bytes.Equal(got, big) {
		t.Fatalf("read %d bytes, stored %d", len(got), len(big))
	}
	_, err = h.client.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: ref.GetUri(), Offset: int64(len(big)) + 1})
	assertCode(t, err, codes.InvalidArgument, "offset")

	// Another tenant: neither its turn nor its output exists.
	_, err = h.client.ReadOutput(globex(t), &controlv1.ReadOutputRequest{Uri: ref.GetUri()})
	assertCode(t, err, codes.NotFound, ref.GetUri())
	_, err = h.client.StoreOutput(globex(t), &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId, ToolCallId: "call_1", Content: []byte("x")})
	assertCode(t, err, codes.NotFound, sub.Turn.TurnId)
	// Missing objects and foreign buckets are NotFound too.
	_, err = h.client.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: strings.Replace(ref.GetUri(), sub.Turn.TurnId, "turn_nope", 1)})
	assertCode(t, err, codes.NotFound, "")
	_, err = h.client.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: "object://OTHER_BUCKET/output/acme/s1/x"})
	assertCode(t, err, codes.NotFound, "")

	// Objects of other services follow the same naming, so an evidence
	// pack is readable by its tenant.
	pack, err := h.log.PutObject(context.Background(), "evidence/acme/s1/ev_1.json", "evidence", "application/json", []byte(`{"kind":"evidence"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := h.readAll(ctx, pack.GetUri(), 0); string(got) != `{"kind":"evidence"}` {
		t.Fatalf("pack = %s", got)
	}
	_, err = h.client.ReadOutput(globex(t), &controlv1.ReadOutputRequest{Uri: pack.GetUri()})
	assertCode(t, err, codes.NotFound, "")

	// One producer, named.
	_, err = h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId, ToolCallId: "call_1", ProcessId: "proc_1"})
	assertCode(t, err, codes.InvalidArgument, "tool_call_id or process_id")
	_, err = h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId})
	assertCode(t, err, codes.InvalidArgument, "tool_call_id or process_id")
	_, err = h.client.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: "https://x/y"})
	assertCode(t, err, codes.InvalidArgument, "uri")

	// An ended turn's outputs are closed.
	rep := h.report(ctx, started(sub.Turn.TurnId), completed(sub.Turn.TurnId))
	h.threadRead(ctx, "s1", "th1", rep.Sequence)
	_, err = h.client.StoreOutput(ctx, &controlv1.StoreOutputRequest{TurnId: sub.Turn.TurnId, ToolCallId: "call_2", Content: []byte("late")})
	assertCode(t, err, codes.FailedPrecondition, "TURN_ENDED")
}
