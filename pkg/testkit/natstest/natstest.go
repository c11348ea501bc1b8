// Package natstest starts a real NATS server with JetStream for tests: in
// process, on a free loopback port, storing in the test's temp dir.
package natstest

import (
	"os"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/agentruntime/agentruntime/pkg/eventlog"
	"github.com/agentruntime/agentruntime/pkg/natsembed"
)

// Server starts a JetStream server that is shut down when the test ends.
func Server(t testing.TB) *natsembed.Server {
	t.Helper()
	return ServerAt(t, t.TempDir())
}

// ServerAt starts a JetStream server storing in dir, for tests that restart
// a server on the same storage.
func ServerAt(t testing.TB, dir string) *natsembed.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Config{StoreDir: dir, Listen: true})
	if err != nil {
		t.Fatalf("start NATS: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Connect returns a connection to s closed when the test ends.
func Connect(t testing.TB, s *natsembed.Server) *nats.Conn {
	t.Helper()
	nc, err := s.Connect()
	if err != nil {
		t.Fatalf("connect NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Partitions is the partition count of a suite's event log: 1 unless
// AR_TEST_PARTITIONS says otherwise, so a whole suite can be run on a
// partitioned log (docs/partitions.md; the test command runs the services'
// suites with AR_TEST_PARTITIONS=3). Tests about partitions set their own
// count.
func Partitions(t testing.TB) int {
	t.Helper()
	v := os.Getenv("AR_TEST_PARTITIONS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > eventlog.MaxPartitions {
		t.Fatalf("AR_TEST_PARTITIONS=%q: want a partition count from 1 to %d", v, eventlog.MaxPartitions)
	}
	return n
}
