package natsserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is a JetStream cluster of nats-server processes on loopback
// (routes on free ports), each of which can be killed with SIGKILL and
// restarted on its port and storage, for tests of elections and the
// replicated (R3) shape.
type Cluster struct {
	Servers []*Server
}

// StartCluster builds (once) and starts n clustered servers with JetStream
// and waits until the cluster has a meta leader; they are killed when the
// test ends. Server i is named "n<i>" (the names stream infos report).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := Binary(t)
	c := &Cluster{Servers: make([]*Server, n)}
	routes := make([]string, n)
	clusterPorts := make([]int, n)
	for i := range n {
		port, err := freePort()
		if err != nil {
			t.Fatalf("natsserver: %v", err)
		}
		cport, err := freePort()
		if err != nil {
			t.Fatalf("natsserver: %v", err)
		}
		clusterPorts[i] = cport
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(cport)
		c.Servers[i] = &Server{bin: bin, StoreDir: t.TempDir(), Port: port, URL: "nats://127.0.0.1:" + strconv.Itoa(port), Name: "n" + strconv.Itoa(i)}
	}
	for i, s := range c.Servers {
		s.args = []string{"-a", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-js", "-sd", s.StoreDir, "-n", s.Name,
			"--cluster_name", "agentruntime-test", "--cluster", routes[i], "--routes", strings.Join(routes, ",")}
		if err := s.launch(); err != nil {
			t.Fatalf("natsserver: %v", err)
		}
		t.Cleanup(s.Kill)
	}
	for _, s := range c.Servers {
		if err := waitJetStream(s.URL, s.exited, 60*time.Second); err != nil {
			t.Fatalf("natsserver: cluster node %s on %s: %v; output:\n%s", s.Name, s.URL, err, s.Output())
		}
	}
	return c
}

// URLs is every server's client URL, comma separated (for nats.Connect).
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.URL
	}
	return strings.Join(urls, ",")
}

// Server returns the server named name, or nil.
func (c *Cluster) Server(name string) *Server {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// StreamLeader is the server leading stream, asked through nc; it polls
// until the stream has a leader or ctx ends.
func (c *Cluster) StreamLeader(ctx context.Context, nc *nats.Conn, stream string) (*Server, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var last error
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		s, err := js.Stream(actx, stream)
		if err == nil {
			var info *jetstream.StreamInfo
			if info, err = s.Info(actx); err == nil {
				if info.Cluster != nil && info.Cluster.Leader != "" {
					cancel()
					if srv := c.Server(info.Cluster.Leader); srv != nil && srv.Running() {
						return srv, nil
					}
					err = fmt.Errorf("leader %q is not running", info.Cluster.Leader)
				} else {
					err = errors.New("no leader")
				}
			}
		}
		cancel()
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("natsserver: leader of %s: %w (last: %v)", stream, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
