package control_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
	"github.com/agentruntime/agentruntime/pkg/testkit/natstest"
)

// The 10,000-subscriber benchmarks run the control service in two shapes,
// each next to its raw building block measured in the same run:
//
//   - dev: the in-process read model and JetStream in the process (as
//     `agentruntime dev`);
//   - serve: the Redis read model and a separate nats-server process (as
//     `agentruntime serve control`).
//
// Clients share a few connections (8), as browsers and SDKs multiplex
// their streams; both sides' clients live in the benchmark's process.

const (
	fanSubscribers = 10_000
	fanConns       = 8
)

type fanEnv struct {
	h  *harness
	nc *nats.Conn // for the raw JetStream side, on the same server
}

func newFanEnv(b *testing.B, mode string) fanEnv {
	raiseFileLimit(b)
	if mode == "dev" {
		h := newHarnessOn(b, true)
		return fanEnv{h: h, nc: natstest.Connect(b, h.nats)}
	}
	srv := natsserver.Start(b)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		return nc
	}
	h := newHarnessWith(b, func(h *harness) {
		var err error
		if h.log, err = eventlog.Open(context.Background(), connect(), eventlog.Config{Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
	})
	return fanEnv{h: h, nc: connect()}
}

// raiseFileLimit lifts the soft limit of open files to the hard one: the
// streams share few connections, but a machine's default may be low.
func raiseFileLimit(b *testing.B) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// rawFanout is the raw block of a fan-out: a bare gRPC server (no auth, no
// interceptors) whose SubscribeEvents streams what is broadcast to every
// open stream, from memory.
type rawFanout struct {
	controlv1.UnimplementedControlServiceServer
	mu      sync.Mutex
	streams map[chan *controlv1.SubscribeEventsResponse]struct{}
	addr    string
}

func startRawFanout(b *testing.B) *rawFanout {
	r := &rawFanout{streams: map[chan *controlv1.SubscribeEventsResponse]struct{}{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	controlv1.RegisterControlServiceServer(s, r)
	go func() { _ = s.Serve(lis) }()
	b.Cleanup(s.Stop)
	r.addr = lis.Addr().String()
	return r
}

func (r *rawFanout) SubscribeEvents(_ *controlv1.SubscribeEventsRequest, stream grpc.ServerStreamingServer[controlv1.SubscribeEventsResponse]) error {
	ch := make(chan *controlv1.SubscribeEventsResponse, 64)
	r.mu.Lock()
	r.streams[ch] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.streams, ch)
		r.mu.Unlock()
	}()
	if err := stream.Send(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Heartbeat{Heartbeat: &controlv1.Heartbeat{}}}); err != nil {
		return err
	}
	for {
		select {
		case m := <-ch:
			if err := stream.Send(m); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (r *rawFanout) broadcast(m *controlv1.SubscribeEventsResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ch := range r.streams {
		ch <- m
	}
}

func dialN(b *testing.B, addr string, n int) []controlv1.ControlServiceClient {
	out := make([]controlv1.ControlServiceClient, n)
	for i := range out {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		out[i] = controlv1.NewControlServiceClient(conn)
	}
	return out
}

// subscribers opens n streams over clients and returns once each has had
// its first item (the subscription is live). onEvent runs for every event
// a stream receives, with the stream's index.
func subscribers(b *testing.B, ctx context.Context, clients []controlv1.ControlServiceClient, n int, req func(i int) *controlv1.SubscribeEventsRequest, onEvent func(i int, ev *eventsv1.RuntimeEvent)) {
	var ready sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		ready.Add(1)
		go func() {
			stream, err := clients[i%len(clients)].SubscribeEvents(ctx, req(i))
			if err == nil {
				_, err = stream.Recv()
			}
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			for {
				m, err := stream.Recv()
				if err != nil {
					return
				}
				if ev := m.GetEvent(); ev != nil && onEvent != nil {
					onEvent(i, ev)
				}
			}
		}()
	}
	ready.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func p99(d []time.Duration) time.Duration { return percentile(d, .99) }

// BenchmarkFanOut10000: deliveries/s to 10,000 concurrent subscribers of
// one session, next to a bare gRPC server streaming the same message to
// 10,000 streams from memory; and the p99 from an append to its delivery
// over all 100,000 deliveries of an iteration.
func BenchmarkFanOut10000(b *testing.B) {
	for _, mode := range []string{"dev", "serve"} {
		b.Run(mode, func(b *testing.B) { benchFanOut(b, mode) })
	}
}

func benchFanOut(b *testing.B, mode string) {
	const events = 10
	env := newFanEnv(b, mode)
	h := env.h
	ctx := benchCtx(b)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))

	// Each event's send time, by its index in the run; receivers measure
	// against it.
	maxEvents := (b.N + 1) * events
	sent := make([]atomic.Int64, maxEvents)
	lat := make([][]time.Duration, fanSubscribers)
	done := make(chan struct{}, fanSubscribers)
	counts := make([]int, fanSubscribers)
	onEvent := func(i int, ev *eventsv1.RuntimeEvent) {
		k, err := strconv.Atoi(strings.TrimPrefix(ev.GetModelDelta().GetText(), "e"))
		if err != nil {
			return
		}
		lat[i] = append(lat[i], time.Duration(time.Now().UnixNano()-sent[k].Load()))
		if counts[i]++; counts[i]%events == 0 {
			done <- struct{}{}
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	subscribers(b, cctx, dialN(b, h.listenAddr, fanConns), fanSubscribers, func(int) *controlv1.SubscribeEventsRequest {
		return &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}}
	}, onEvent)

	// The raw side streams the very event the service delivers.
	raw := startRawFanout(b)
	rawLat := make([][]time.Duration, fanSubscribers)
	rawDone := make(chan struct{}, fanSubscribers)
	rawCounts := make([]int, fanSubscribers)
	rawSent := make([]atomic.Int64, maxEvents)
	subscribers(b, cctx, dialN(b, raw.addr, fanConns), fanSubscribers, func(int) *controlv1.SubscribeEventsRequest {
		return &controlv1.SubscribeEventsRequest{}
	}, func(i int, ev *eventsv1.RuntimeEvent) {
		k, _ := strconv.Atoi(strings.TrimPrefix(ev.GetModelDelta().GetText(), "e"))
		rawLat[i] = append(rawLat[i], time.Duration(time.Now().UnixNano()-rawSent[k].Load()))
		if rawCounts[i]++; rawCounts[i]%events == 0 {
			rawDone <- struct{}{}
		}
	})

	var total, rawTotal time.Duration
	k := 0
	runtime.GC()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		t0 := time.Now()
		for e := 0; e < events; e++ {
			sent[k+e].Store(time.Now().UnixNano())
			h.report(ctx, delta(tu.TurnId, fmt.Sprint("e", k+e)))
		}
		for range fanSubscribers {
			<-done
		}
		total += time.Since(t0)

		t0 = time.Now()
		for e := 0; e < events; e++ {
			ev := &eventsv1.RuntimeEvent{Type: "model.delta", EventId: "ev_raw", TenantId: "acme", SessionId: "s1", ThreadId: "th1", TurnId: tu.TurnId,
				Sequence: uint64(k + e), Payload: &eventsv1.RuntimeEvent_ModelDelta{ModelDelta: &eventsv1.ModelDelta{Text: fmt.Sprint("e", k+e)}}}
			rawSent[k+e].Store(time.Now().UnixNano())
			raw.broadcast(&controlv1.SubscribeEventsResponse{Item: &controlv1.SubscribeEventsResponse_Event{Event: ev}})
		}
		for range fanSubscribers {
			<-rawDone
		}
		rawTotal += time.Since(t0)
		k += events
	}
	b.StopTimer()
	var all, rawAll []time.Duration
	for i := range lat {
		all = append(all, lat[i]...)
		rawAll = append(rawAll, rawLat[i]...)
	}
	deliveries := float64(b.N * fanSubscribers * events)
	rate, rawRate := deliveries/total.Seconds(), deliveries/rawTotal.Seconds()
	b.ReportMetric(rate, "deliveries/s")
	b.ReportMetric(rawRate, "raw-deliveries/s")
	b.ReportMetric(rate/rawRate, "ratio")
	b.ReportMetric(float64(p99(all).Milliseconds()), "delivery-p99-ms")
	b.ReportMetric(float64(p99(rawAll).Milliseconds()), "raw-delivery-p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAppendToSubscriber10000: from an append to the log to a
// subscriber's receipt while 10,000 other subscriptions of the same
// session are attached (they filter on other types, so the hub weighs each
// of them for every event), next to a raw JetStream publish to an ordered
// consumer.
func BenchmarkAppendToSubscriber10000(b *testing.B) {
	for _, mode := range []string{"dev", "serve"} {
		b.Run(mode, func(b *testing.B) { benchAppendToSubscriber(b, mode) })
	}
}

func benchAppendToSubscriber(b *testing.B, mode string) {
	env := newFanEnv(b, mode)
	h := env.h
	ctx := benchCtx(b)
	tu := h.submit(ctx, "s1", "th1").Turn
	h.report(ctx, started(tu.TurnId))
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	subscribers(b, cctx, dialN(b, h.listenAddr, fanConns), fanSubscribers, func(int) *controlv1.SubscribeEventsRequest {
		return &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"turn."}}
	}, nil)
	probe := h.subscribe(ctx, &controlv1.SubscribeEventsRequest{SessionId: "s1", TypePrefixes: []string{"model.delta"}})

	js, err := jetstream.New(env.nc)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}}); err != nil {
		b.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, "RAW", jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	defer it.Stop()

	agg := eventlog.Aggregate{Tenant: "acme", Session: "s1", Kind: "turn", ID: tu.TurnId}
	payload := make([]byte, 200)
	var lat, rawLat []time.Duration
	// Opening 10,000 streams leaves a collection to finish: not on the
	// measured path of either side.
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ev := delta(tu.TurnId, "probe")
		ev.ThreadId = "th1"
		if _, err := h.log.Append(ctx, agg, eventlog.Any, ev); err != nil {
			b.Fatal(err)
		}
		probe.until("model.delta")
		lat = append(lat, time.Since(t0))

		t0 = time.Now()
		if _, err := js.Publish(ctx, "raw.x", payload); err != nil {
			b.Fatal(err)
		}
		if _, err := it.Next(); err != nil {
			b.Fatal(err)
		}
		rawLat = append(rawLat, time.Since(t0))
	}
	b.StopTimer()
	p, r := p99(lat), p99(rawLat)
	b.ReportMetric(float64(percentile(lat, .5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(p.Microseconds()), "p99-µs")
	b.ReportMetric(float64(percentile(rawLat, .5).Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "raw-p99-µs")
	b.ReportMetric(float64(p)/float64(r), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkIdleSubscriberRSS: resident memory per idle subscription (the
// process's RSS growth over 10,000 of them, divided), next to 10,000 idle
// streams of the bare gRPC server. Clients are in the same process, so both
// figures include a client stream's cost too.
func BenchmarkIdleSubscriberRSS(b *testing.B) {
	for _, mode := range []string{"dev", "serve"} {
		b.Run(mode, func(b *testing.B) { benchIdleRSS(b, mode) })
	}
}

func rss(b *testing.B) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// settle waits until the goroutines of closed streams are gone (at most
// 100 more than idle remain), so the next measurement starts clean.
func settle(b *testing.B, idle int) {
	deadline := time.Now().Add(30 * time.Second)
	for idle > 0 && runtime.NumGoroutine() > idle+100 {
		if time.Now().After(deadline) {
			b.Fatalf("%d goroutines linger, %d before", runtime.NumGoroutine(), idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func benchIdleRSS(b *testing.B, mode string) {
	env := newFanEnv(b, mode)
	h := env.h
	ctx := benchCtx(b)
	h.submit(ctx, "s1", "th1")
	raw := startRawFanout(b)
	clients, rawClients := dialN(b, h.listenAddr, fanConns), dialN(b, raw.addr, fanConns)
	// Warm both paths so their one-time costs are not counted.
	warm, stop := context.WithCancel(ctx)
	subscribers(b, warm, clients, 100, func(i int) *controlv1.SubscribeEventsRequest {
		return &controlv1.SubscribeEventsRequest{SessionId: fmt.Sprint("s", i%100)}
	}, nil)
	subscribers(b, warm, rawClients, 100, func(int) *controlv1.SubscribeEventsRequest { return &controlv1.SubscribeEventsRequest{} }, nil)
	stop()
	settle(b, 0)
	var per, rawPer float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idle := runtime.NumGoroutine()
		before := rss(b)
		cctx, cancel := context.WithCancel(ctx)
		subscribers(b, cctx, clients, fanSubscribers, func(i int) *controlv1.SubscribeEventsRequest {
			return &controlv1.SubscribeEventsRequest{SessionId: fmt.Sprint("s", i%100), TypePrefixes: []string{"turn."}}
		}, nil)
		per += float64(rss(b)-before) / fanSubscribers
		cancel()
		settle(b, idle)

		before = rss(b)
		rctx, rcancel := context.WithCancel(ctx)
		subscribers(b, rctx, rawClients, fanSubscribers, func(int) *controlv1.SubscribeEventsRequest { return &controlv1.SubscribeEventsRequest{} }, nil)
		rawPer += float64(rss(b)-before) / fanSubscribers
		rcancel()
		settle(b, idle)
	}
	b.StopTimer()
	per, rawPer = per/float64(b.N)/1024, rawPer/float64(b.N)/1024
	b.ReportMetric(per, "KiB/subscriber")
	b.ReportMetric(rawPer, "raw-KiB/stream")
	b.ReportMetric(per/rawPer, "ratio")
	b.ReportMetric(0, "ns/op")
}
