package system_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
)

// tenantWatch is a subscription across sessions (the tenant's whole story,
// every partition) that a client keeps open through everything: when its
// stream ends, or when the test cuts it (cut), it subscribes again to the
// next control replica with the last cursor it received (ADR 0013 §3).
// seen counts each event id it received; a resume must neither skip nor
// repeat one.
type tenantWatch struct {
	mu      sync.Mutex
	seen    map[string]int
	cursor  string
	resumes int
	codes   map[codes.Code]int
	cutNow  context.CancelFunc
	changed chan struct{} // closed and replaced on every event
}

func watchTenant(ctx context.Context, t *testing.T, clients []controlv1.ControlServiceClient) *tenantWatch {
	w := &tenantWatch{seen: map[string]int{}, codes: map[codes.Code]int{}, changed: make(chan struct{})}
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			w.follow(ctx, clients[i%len(clients)])
		}
	}()
	return w
}

// follow is one subscription, until it ends or is cut.
func (w *tenantWatch) follow(ctx context.Context, client controlv1.ControlServiceClient) {
	sctx, cancel := context.WithCancel(operatorCtx(ctx))
	defer cancel()
	w.mu.Lock()
	w.cutNow = cancel
	req := &controlv1.SubscribeEventsRequest{ResumeCursor: w.cursor}
	if w.cursor == "" {
		req.Start, req.FromSequence = controlv1.StartFrom_START_FROM_SEQUENCE, 1
	} else {
		w.resumes++
	}
	w.mu.Unlock()
	stream, err := client.SubscribeEvents(sctx, req)
	for err == nil {
		var resp *controlv1.SubscribeEventsResponse
		if resp, err = stream.Recv(); err != nil {
			break
		}
		w.mu.Lock()
		if c := resp.GetCursor(); c != "" {
			w.cursor = c
		}
		if ev := resp.GetEvent(); ev != nil {
			w.seen[ev.GetEventId()]++
			close(w.changed)
			w.changed = make(chan struct{})
		}
		w.mu.Unlock()
	}
	if ctx.Err() == nil && sctx.Err() == nil {
		w.mu.Lock()
		w.codes[status.Code(err)]++
		w.mu.Unlock()
		select { // a stream the server ended: resubscribe, paced
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cut ends the current subscription; the watch resumes on the next
// replica with its cursor.
func (w *tenantWatch) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cutNow != nil {
		w.cutNow()
	}
}

// until waits until the watch has seen every id of want, or the deadline
// passes; it answers the ids still missing.
func (w *tenantWatch) until(want []string, deadline time.Time) []string {
	for {
		w.mu.Lock()
		var missing []string
		for _, id := range want {
			if w.seen[id] == 0 {
				missing = append(missing, id)
			}
		}
		changed := w.changed
		w.mu.Unlock()
		if len(missing) == 0 || time.Now().After(deadline) {
			return missing
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
		}
	}
}
