package all_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/services/all/alltest"
)

// A viewer reads; it appends nothing to the log. Keeping a delivery
// channel records facts (channel.reconnected, channel.message,
// channel.disconnected), so it is an operator's: a viewer's
// ReconnectChannel and AckEvents are PermissionDenied, and a viewer's
// subscription naming an operator's channel records no end when it ends.
// The channels' last sequence in the log is where it was after each.
func TestAViewerAppendsNothingThroughAChannel(t *testing.T) {
	const viewerKey = "k-acme-viewer-0123456789"
	st := alltest.Start(t, alltest.Options{Keys: []auth.APIKeyConfig{
		{Name: "olive", Tenant: "acme", Role: "operator", Key: operatorKey},
		{Name: "vera", Tenant: "acme", Role: "viewer", Key: viewerKey},
	}})
	base, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := func(key string) context.Context {
		return metadata.AppendToOutgoingContext(base, "authorization", "Bearer "+key)
	}
	operator, viewer := as(operatorKey), as(viewerKey)
	if _, err := st.Control.SubmitTurn(operator, &controlv1.SubmitTurnRequest{SessionId: "s1", ThreadId: "th1",
		Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "hello"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Control.ReconnectChannel(operator, &controlv1.ReconnectChannelRequest{SessionId: "s1", ChannelId: "chan_op"}); err != nil {
		t.Fatal(err)
	}
	// head is the last sequence of the channels' facts: other services'
	// reactors may append to the session meanwhile, never to a channel.
	head := func() uint64 {
		t.Helper()
		var last uint64
		for _, ch := range []string{"chan_op", "chan_viewer"} {
			seq, err := st.Log.LastSequence(base, eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "channel", ID: ch})
			if err != nil {
				t.Fatal(err)
			}
			last = max(last, seq)
		}
		return last
	}
	// endedSubscription subscribes to the operator's channel and has the
	// stream end with an error from the handler, which records the end
	// (or not) before the status reaches the caller.
	endedSubscription := func(ctx context.Context) {
		t.Helper()
		stream, err := st.Control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", ChannelId: "chan_op", ResumeCursor: "x"})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("subscription with a session and a resume cursor: %v, want InvalidArgument", err)
		}
	}
	// The operator's ended subscription is recorded: the channel moves.
	before := head()
	endedSubscription(operator)
	if after := head(); after <= before {
		t.Fatalf("an operator's ended channel subscription left the channel at %d, want a channel.disconnected after it", after)
	}

	before = head()
	for name, call := range map[string]func() error{
		"ReconnectChannel of its own channel": func() error {
			_, err := st.Control.ReconnectChannel(viewer, &controlv1.ReconnectChannelRequest{SessionId: "s1", ChannelId: "chan_viewer"})
			return err
		},
		"ReconnectChannel of the operator's channel": func() error {
			_, err := st.Control.ReconnectChannel(viewer, &controlv1.ReconnectChannelRequest{SessionId: "s1", ChannelId: "chan_op"})
			return err
		},
		"AckEvents on the operator's channel": func() error {
			_, err := st.Control.AckEvents(viewer, &controlv1.AckEventsRequest{SessionId: "s1", ChannelId: "chan_op", Sequence: head()})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.PermissionDenied {
			t.Errorf("viewer's %s: %v, want PermissionDenied", name, err)
		}
	}
	endedSubscription(viewer)
	if after := head(); after != before {
		t.Fatalf("a viewer's calls moved the channels' last sequence %d -> %d", before, after)
	}
}
