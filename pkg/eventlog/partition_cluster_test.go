package eventlog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/testkit"
	"github.com/agentruntime/agentruntime/pkg/testkit/natsserver"
)

// TestPartitionLeadersSpreadOverTheCluster: three partitions at R3 on a
// cluster of three nats-server processes end up led by three different
// nodes (JetStream alone picks leaders at random: all distinct 2 times in
// 9), and opening the log again, as every replica does, keeps them there.
func TestPartitionLeadersSpreadOverTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster of three nats-server processes")
	}
	cluster := natsserver.StartCluster(t, 3)
	nc, err := nats.Connect(cluster.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := testkit.Context(t)
	cfg := eventlog.Config{RuntimeID: "rt_test", Partitions: 3, Replicas: 3, Storage: jetstream.FileStorage}
	var leaders []string
	for range 2 {
		if _, err := eventlog.Open(ctx, nc, cfg); err != nil {
			t.Fatal(err)
		}
		leaders = waitDistinctLeaders(ctx, t, cluster, nc, 3)
		t.Logf("leaders: %v", leaders)
	}
	// A spread layout is left as it is: move the leaders to another one
	// (still one per node, and not in the nodes' name order, which the
	// ties fall back on), open again, and no leader moves (a step-down is
	// a stall).
	byName := slices.Sorted(slices.Values(leaders))
	rotated := []string{byName[2], byName[1], byName[0]}
	if slices.Equal(rotated, leaders) {
		rotated = []string{byName[1], byName[2], byName[0]}
	}
	for k, want := range rotated {
		req, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": want}})
		if _, err := nc.RequestWithContext(ctx, fmt.Sprintf("$JS.API.STREAM.LEADER.STEPDOWN.AGENTRUNTIME_%d", k), req); err != nil {
			t.Fatal(err)
		}
	}
	for !slices.Equal(waitDistinctLeaders(ctx, t, cluster, nc, 3), rotated) {
		if ctx.Err() != nil {
			t.Fatalf("the leaders never moved to %v", rotated)
		}
		time.Sleep(50 * time.Millisecond) // polling the step-downs, with the context's deadline
	}
	if _, err := eventlog.Open(ctx, nc, cfg); err != nil {
		t.Fatal(err)
	}
	if got := waitDistinctLeaders(ctx, t, cluster, nc, 3); !slices.Equal(got, rotated) {
		t.Fatalf("opening a log whose leaders are spread moved them: %v, was %v", got, rotated)
	}
}

// waitDistinctLeaders waits until the n partitions' streams have n
// different leaders, and fails when ctx ends first.
func waitDistinctLeaders(ctx context.Context, t *testing.T, cluster *natsserver.Cluster, nc *nats.Conn, n int) []string {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var leaders []string
	for {
		leaders = leaders[:0]
		seen := map[string]bool{}
		for k := range n {
			srv, err := cluster.StreamLeader(ctx, nc, fmt.Sprintf("AGENTRUNTIME_%d", k))
			if err != nil {
				t.Fatal(err)
			}
			leaders = append(leaders, srv.Name)
			seen[srv.Name] = true
		}
		if len(seen) == n {
			return leaders
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the partitions' leaders stay %v", leaders)
		case <-tick.C:
		}
	}
}

// BenchmarkPartitionedAppends: appends/s of the log with P = 1 and P = 3
// partitions at R1 (one nats-server process) and R3 (three clustered
// processes, the partitions' leaders spread over them), beside a raw
// JetStream publish with the expected last subject sequence to one stream
// of the same replicas in the same run (docs/scaling.md). Sixteen
// appenders, each on a session of its own (so over the partitions), chained
// as commands append.
func BenchmarkPartitionedAppends(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		nc := benchServers(b, replicas)
		js, err := jetstream.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Replicas: replicas, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		var worker atomic.Int64
		b.Run(fmt.Sprintf("R%d/raw", replicas), func(b *testing.B) {
			chained(b, 8, &worker, func(ctx context.Context, n int64, last uint64) (uint64, error) {
				return rawChained(ctx, js, fmt.Sprintf("raw.%d", n), last)
			})
		})
		for _, p := range []int{1, 3} {
			log, err := eventlog.Open(context.Background(), nc, eventlog.Config{
				RuntimeID: "rt_bench", Replicas: replicas, Storage: jetstream.FileStorage, Partitions: p,
				Stream: fmt.Sprintf("AR_P%d", p), SubjectPrefix: fmt.Sprintf("ar%d.ev", p), ObjectBucket: fmt.Sprintf("AR_P%d_OBJECTS", p),
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("R%d/P%d/append", replicas, p), func(b *testing.B) {
				chained(b, 8, &worker, func(ctx context.Context, n int64, last uint64) (uint64, error) {
					return appendChained(ctx, log, fmt.Sprintf("sess_b%d", n), last)
				})
			})
		}
		nc.Close()
	}
}

// chained runs parallelism appenders per core, each on a key of its own
// (n), appending with the sequence its last append got (0 first), and
// reports appends/s.
func chained(b *testing.B, parallelism int, worker *atomic.Int64, appendOne func(ctx context.Context, n int64, last uint64) (uint64, error)) {
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		n := worker.Add(1)
		ctx := context.Background()
		var last uint64
		for pb.Next() {
			seq, err := appendOne(ctx, n, last)
			if err != nil {
				b.Error(err)
				return
			}
			last = seq
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// rawChained is one raw JetStream publish expecting the subject's last
// sequence. At R3 a follower still applying the previous publish refuses
// it now and then as "wrong last sequence" (10164): it is published
// again, as the log does.
func rawChained(ctx context.Context, js jetstream.JetStream, subject string, last uint64) (uint64, error) {
	for {
		ack, err := js.Publish(ctx, subject, []byte("0123456789abcdef0123456789abcdef"), jetstream.WithExpectLastSequencePerSubject(last))
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant {
			continue
		}
		if err != nil {
			return 0, err
		}
		return ack.Sequence, nil
	}
}

// appendChained is one Log.Append to a session's aggregate expecting its
// last sequence.
func appendChained(ctx context.Context, log *eventlog.Log, session string, last uint64) (uint64, error) {
	a := eventlog.Aggregate{Tenant: "bench", Session: session, Kind: "session", ID: session}
	got, err := log.Append(ctx, a, eventlog.ExpectSequence(last), warning("b"))
	if err != nil {
		return 0, err
	}
	return got[0].Sequence, nil
}

// benchServers starts one nats-server process for R1, three clustered for
// R3, and connects to them.
func benchServers(b *testing.B, replicas int) *nats.Conn {
	var urls string
	if replicas == 1 {
		urls = natsserver.Start(b).URL
	} else {
		urls = natsserver.StartCluster(b, 3).URLs()
	}
	nc, err := nats.Connect(urls)
	if err != nil {
		b.Fatal(err)
	}
	return nc
}
